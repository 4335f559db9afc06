package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.StoredConsumer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A table's stored consumers from Flink SQL: {@code reset_consumer} moves one, and a job started
 * {@code from-consumer} resumes right after the point it was reset to; {@code drop_consumer}
 * releases the snapshots it held from expiry; a consumer a running job may hold, an unknown one,
 * one of another table and a point the table no longer has are refused before anything changes.
 *
 * <p>The history, written by the test: s1 inserts (1,a) (2,b); s2 upserts (1,a2); s3 inserts (3,c);
 * s4 deletes 2.
 */
class SqlConsumersTest extends SqlTestBase {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private TableEnvironment sql;
  private long s1;
  private long s2;
  private long s4;

  @BeforeEach
  void history() {
    sql = batch();
    createLake(sql);
    long[] ids = ordersWithFourSnapshots(sql);
    s1 = ids[0];
    s2 = ids[1];
    s4 = ids[3];
  }

  @Test
  @Timeout(180)
  void aJobStartedFromAResetConsumerResumesRightAfterTheResetPoint() throws Exception {
    // A job of consumer 'billing' reads the table and stores its cursor at a checkpoint.
    TableEnvironment first = checkpointing();
    openLake(first);
    List<Row> rows = Collections.synchronizedList(new ArrayList<>());
    TableResult job =
        first.executeSql(
            "SELECT * FROM lake.shop.orders /*+ OPTIONS('scan.consumer-id' = 'billing') */");
    Thread collector = collectInBackground(job, rows);
    await()
        .atMost(Duration.ofSeconds(60))
        .until(
            () ->
                catalog
                    .catalog()
                    .consumer("billing")
                    .map(c -> c.cursor().snapshotId() == s4)
                    .orElse(false));
    job.getJobClient().orElseThrow().cancel().get();
    collector.join();

    // Just stored: a running job may hold it, so the reset needs force.
    assertRefused(
        "reset_consumer(`table` => 'shop.orders', consumer => 'billing', snapshot_id => "
            + s1
            + ")",
        "billing",
        "consumer 'billing' of table shop.orders was stored ",
        "force => true");
    // A commit_seq resets it after the table's commits up to that one: at s2.
    long s2Seq = commitSeqOf(s2);
    assertThat(
            call(
                "reset_consumer(`table` => 'shop.orders', consumer => 'billing', commit_seq => "
                    + s2Seq
                    + ", force => true)"))
        .isEqualTo(Row.of("billing", s2, s2Seq));
    call("create_tag('shop.orders', 't1', " + s1 + ")");
    Row reset =
        call(
            "reset_consumer(`table` => 'shop.orders', consumer => 'billing', tag => 't1',"
                + " force => true)");
    long s1Seq = commitSeqOf(s1);
    assertThat(reset).isEqualTo(Row.of("billing", s1, s1Seq));
    assertThat(consumerAt("billing")).isEqualTo(new long[] {s1, s1Seq});

    // The job started again from the consumer: the changes after s1, and nothing before.
    TableEnvironment second = checkpointing();
    openLake(second);
    List<String> changes =
        collect(
                second,
                "SELECT * FROM lake.shop.orders /*+ OPTIONS('scan.startup.mode' = 'from-consumer',"
                    + " 'scan.consumer-id' = 'billing', 'scan.bounded' = 'true') */")
            .stream()
            .map(Row::toString)
            .toList();
    assertThat(changes)
        .containsExactlyInAnyOrder("-U[1, a]", "+U[1, a2]", "+I[3, c]", "-D[2, b]")
        .containsSubsequence("-U[1, a]", "+U[1, a2]");
    // A bounded run of a consumer keeps it where it ended, for the next run.
    assertThat(consumerAt("billing")[0]).isEqualTo(s4);
  }

  @Test
  void droppingAConsumerReleasesTheSnapshotsItHeldFromExpiry() throws Exception {
    Table orders = orders();
    catalog
        .catalog()
        .storeConsumer(
            "reporting", new ConsumerCursor(ORDERS, orders.uuid().toString(), s1, commitSeqOf(s1)));
    String expire =
        "CALL lake.sys.expire_snapshots('shop.orders', TIMESTAMP '2999-01-01 00:00:00')";
    assertThatThrownBy(() -> collect(sql, expire))
        .rootCause()
        .hasMessageContaining("consumer 'reporting'");

    assertRefused("drop_consumer('shop.orders', 'reporting')", "reporting", "was stored ");
    assertThat(call("drop_consumer('shop.orders', 'reporting', true)"))
        .isEqualTo(Row.of("reporting", s1, commitSeqOf(s1)));
    assertThat(catalog.catalog().consumer("reporting")).isEmpty();
    assertThat(collect(sql, expire)).containsExactly(Row.of(3, 1));
  }

  @Test
  void badConsumersAndPointsAreRefusedBeforeAnythingChanges() throws Exception {
    Table orders = orders();
    catalog
        .catalog()
        .storeConsumer(
            "billing", new ConsumerCursor(ORDERS, orders.uuid().toString(), s4, commitSeqOf(s4)));
    sql.executeSql("CREATE TABLE lake.shop.other (id BIGINT)");
    Table other = catalog.catalog().loadTable(TableIdentifier.of("shop", "other"));
    catalog
        .catalog()
        .storeConsumer(
            "elsewhere",
            new ConsumerCursor(
                TableIdentifier.of("shop", "other"),
                other.uuid().toString(),
                ConsumerCursor.NO_SNAPSHOT,
                0));

    assertRefused(
        "drop_consumer('shop.orders', 'nobody', true)",
        "billing",
        "table shop.orders has no consumer 'nobody'; its consumers: [billing]");
    assertRefused(
        "drop_consumer('shop.orders', 'elsewhere', true)",
        "billing",
        "consumer 'elsewhere' is a consumer of table shop.other, not of shop.orders");
    assertRefused(
        "reset_consumer(`table` => 'shop.orders', consumer => 'billing', tag => 'nope',"
            + " force => true)",
        "billing",
        "has no tag 'nope'; its tags: []");
    assertRefused(
        "reset_consumer('shop.orders', 'billing', " + s1 + ", 1, CAST(NULL AS STRING), true)",
        "billing",
        "give exactly one point to reset consumer 'billing' to");
    orders.manageSnapshots().createTag("keep", s4).commit(); // so s1 alone can go
    orders.expireSnapshots().expireSnapshotId(s1).commit();
    assertRefused(
        "reset_consumer(`table` => 'shop.orders', consumer => 'billing', snapshot_id => "
            + s1
            + ", force => true)",
        "billing",
        "snapshot " + s1 + " is not in the current history of table shop.orders");
    TableEnvironment stream = checkpointing();
    stream.getConfig().set("restart-strategy.type", "none");
    openLake(stream);
    assertThatThrownBy(
            () ->
                collect(
                    stream,
                    "SELECT * FROM lake.shop.orders /*+ OPTIONS('scan.startup.mode' ="
                        + " 'from-consumer', 'scan.consumer-id' = 'nobody') */"))
        .satisfies(e -> assertThat(e).hasStackTraceContaining("resumes consumer 'nobody'"));
  }

  /** {@code call} fails naming {@code fragments}, and consumer {@code kept} did not change. */
  private void assertRefused(String call, String kept, String... fragments) {
    StoredConsumer before = catalog.catalog().consumer(kept).orElseThrow();
    var refused = assertThatThrownBy(() -> call(call)).rootCause();
    for (String fragment : fragments) {
      refused.hasMessageContaining(fragment);
    }
    assertThat(catalog.catalog().consumer(kept)).contains(before);
  }

  private Row call(String procedure) throws Exception {
    List<Row> rows = collect(sql, "CALL lake.sys." + procedure);
    assertThat(rows).hasSize(1);
    return rows.get(0);
  }

  private long[] consumerAt(String id) {
    ConsumerCursor cursor = catalog.catalog().consumer(id).orElseThrow().cursor();
    return new long[] {cursor.snapshotId(), cursor.commitSeq()};
  }

  private long commitSeqOf(long snapshotId) {
    return catalog.catalog().commitOf(ORDERS, snapshotId).map(CommitEvent::commitSeq).orElseThrow();
  }

  private Table orders() {
    return catalog.catalog().loadTable(ORDERS);
  }

  /** Streaming, checkpointing every 200 ms: a job stores its consumer at each checkpoint. */
  private static TableEnvironment checkpointing() {
    TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
    env.getConfig().set("execution.checkpointing.interval", "200 ms");
    return env;
  }
}
