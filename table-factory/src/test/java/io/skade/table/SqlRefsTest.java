package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A table's tags and branches from Flink SQL: the {@code sys} procedures that make, move and remove
 * them (each a commit of the catalog, on its log and feed, listed in {@code $refs}), rollback and
 * cherry-pick of {@code main}, reads of a tag's or a branch's rows and of the changes between two
 * tags, and bad names refused before anything changes.
 *
 * <p>The history, written by the test: s1 inserts (1,a) (2,b); s2 upserts (1,a2); s3 inserts (3,c);
 * s4 deletes 2.
 */
class SqlRefsTest extends SqlTestBase {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private TableEnvironment sql;
  private long s1;
  private long s2;
  private long s3;
  private long s4;

  @BeforeEach
  void history() {
    sql = batch();
    createLake(sql);
    long[] ids = ordersWithFourSnapshots(sql);
    s1 = ids[0];
    s2 = ids[1];
    s3 = ids[2];
    s4 = ids[3];
  }

  @Test
  void tagsAndBranchesAreCommitsOfTheCatalogListedInRefs() throws Exception {
    Row t1 = call("create_tag('shop.orders', 't1', " + s1 + ")");
    assertThat(t1.getField(0)).isEqualTo("t1");
    assertThat(t1.getField(1)).isEqualTo(s1);
    assertMetadataCommit((Long) t1.getField(2));

    Row t4 = call("create_tag('shop.orders', 't4')"); // the current snapshot
    assertThat(t4.getField(1)).isEqualTo(s4);
    Row audit = call("create_branch('shop.orders', 'audit', " + s2 + ")");
    assertThat(audit.getField(1)).isEqualTo(s2);
    Row forward = call("fast_forward('shop.orders', 'audit', 'main')");
    assertThat(forward.getField(1)).isEqualTo(s4);
    assertMetadataCommit((Long) forward.getField(2));
    assertThat((Long) forward.getField(2))
        .isGreaterThan((Long) audit.getField(2))
        .isGreaterThan((Long) t4.getField(2));
    assertThat(refs())
        .containsExactlyInAnyOrder(
            Row.of("main", "BRANCH", s4),
            Row.of("audit", "BRANCH", s4),
            Row.of("t1", "TAG", s1),
            Row.of("t4", "TAG", s4));

    assertMetadataCommit((Long) call("delete_tag('shop.orders', 't1')").getField(2));
    assertMetadataCommit((Long) call("delete_branch('shop.orders', 'audit')").getField(2));
    assertThat(refs())
        .containsExactlyInAnyOrder(Row.of("main", "BRANCH", s4), Row.of("t4", "TAG", s4));
    assertThat(orders().snapshots()).hasSize(4); // refs only: no snapshot added or removed
  }

  @Test
  void rollbackAndCherrypickMoveMainThroughTheCommitPath() throws Exception {
    Row back = call("rollback_to('shop.orders', " + s2 + ")");
    assertThat(back.getField(0)).isEqualTo(s4);
    assertThat(back.getField(1)).isEqualTo(s2);
    assertMetadataCommit((Long) back.getField(2));
    assertThat(orders().currentSnapshot().snapshotId()).isEqualTo(s2);
    assertThat(mainRows()).containsExactlyInAnyOrder("1,a2", "2,b");

    // s3, an append rolled back, applied again onto s1 (onto s2, its parent, it would be a
    // fast-forward to s3 itself): a new snapshot of s3's rows.
    call("rollback_to('shop.orders', " + s1 + ")");
    Row picked = call("cherrypick('shop.orders', " + s3 + ")");
    assertThat(picked.getField(0)).isEqualTo(s1);
    long applied = (Long) picked.getField(1);
    assertThat(applied).isNotIn(s1, s2, s3, s4);
    assertThat(orders().snapshot(applied).parentId()).isEqualTo(s1);
    CommitEvent commit = catalog.catalog().commitOf(ORDERS, applied).orElseThrow();
    assertThat(commit.commitSeq()).isEqualTo(picked.getField(2));
    assertThat(mainRows()).containsExactlyInAnyOrder("1,a", "2,b", "3,c");

    // To the snapshot current at s1's commit time (UTC), the form with a timestamp.
    String atS1 =
        DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS")
            .format(
                Instant.ofEpochMilli(orders().snapshot(s1).timestampMillis())
                    .atZone(ZoneOffset.UTC));
    Row toTime = call("rollback_to('shop.orders', TIMESTAMP '" + atS1 + "')");
    assertThat(toTime.getField(0)).isEqualTo(applied);
    assertThat(toTime.getField(1)).isEqualTo(s1);
    assertThat(mainRows()).containsExactlyInAnyOrder("1,a", "2,b");
  }

  @Test
  void aTagsRowsAndABranchsRowsAreReadAsOfTheirSnapshot() throws Exception {
    call("create_tag('shop.orders', 't2', " + s2 + ")");
    call("create_branch('shop.orders', 'b3', " + s3 + ")");
    call("rollback_to('shop.orders', " + s1 + ")"); // both now off main's history

    assertThat(read("'scan.tag' = 't2'")).containsExactlyInAnyOrder("+I[1, a2]", "+I[2, b]");
    assertThat(read("'scan.branch' = 'b3'"))
        .containsExactlyInAnyOrder("+I[1, a2]", "+I[2, b]", "+I[3, c]");
    assertThat(read("'scan.branch' = 'main'")).containsExactlyInAnyOrder("+I[1, a]", "+I[2, b]");
  }

  @Test
  void aSinkCommitsToABranchWhichMainTakesOnceFastForwarded() throws Exception {
    call("create_branch('shop.orders', 'staging')");
    run(
        sql,
        "INSERT INTO lake.shop.orders /*+ OPTIONS('sink.branch' = 'staging') */"
            + " VALUES (5, 'e'), (1, 'a3')");

    Table orders = orders();
    long staged = orders.refs().get("staging").snapshotId();
    assertThat(orders.snapshot(staged).parentId()).isEqualTo(s4);
    assertThat(orders.currentSnapshot().snapshotId()).as("main did not move").isEqualTo(s4);
    assertThat(catalog.catalog().commitOf(ORDERS, staged)).as("on the commit log").isPresent();
    assertThat(mainRows()).containsExactlyInAnyOrder("1,a2", "3,c");
    assertThat(read("'scan.branch' = 'staging'"))
        .containsExactlyInAnyOrder("+I[1, a3]", "+I[3, c]", "+I[5, e]");

    call("fast_forward('shop.orders', 'main', 'staging')");
    assertThat(mainRows()).containsExactlyInAnyOrder("1,a3", "3,c", "5,e");

    String before = metadataLocation();
    assertThatThrownBy(
            () ->
                run(
                    sql,
                    "INSERT INTO lake.shop.orders /*+ OPTIONS('sink.branch' = 'nope') */"
                        + " VALUES (6, 'f')"))
        .hasMessageContaining("no branch 'nope' to write to; its branches: [main, staging]")
        .hasMessageContaining("CALL <catalog>.sys.create_branch('shop.orders', 'nope')");
    // Flink passes no hints to a DELETE: a table declared with the option.
    declare(
        sql,
        "staged_orders",
        "id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED",
        "database",
        "shop",
        "table",
        "orders",
        "sink.branch",
        "staging");
    assertThatThrownBy(() -> run(sql, "DELETE FROM staged_orders WHERE id = 5"))
        .hasMessageContaining("DELETE on skade table shop.orders with 'sink.branch' = 'staging'")
        .hasMessageContaining("found by reading main");
    assertThat(metadataLocation()).isEqualTo(before);
  }

  @Test
  @Timeout(180)
  void aChangelogBetweenTwoTagsIsTheChangesBetweenTheirSnapshots() throws Exception {
    call("create_tag('shop.orders', 't1', " + s1 + ")");
    call("create_tag('shop.orders', 't3', " + s3 + ")");
    TableEnvironment stream = streaming();
    openLake(stream);

    // s2 and s3: the upsert of 1, the insert of 3; not s1's rows, not s4's delete.
    assertThat(changes(stream, "'scan.start-tag' = 't1', 'scan.end-tag' = 't3'"))
        .containsExactlyInAnyOrder("-U[1, a]", "+U[1, a2]", "+I[3, c]");
    // From t3 to now (bounded): s4's delete only.
    assertThat(changes(stream, "'scan.start-tag' = 't3', 'scan.bounded' = 'true'"))
        .containsExactly("-D[2, b]");
    assertThatThrownBy(() -> changes(stream, "'scan.start-tag' = 't3', 'scan.end-tag' = 't1'"))
        .rootCause()
        .hasMessageContaining("option 'scan.start-tag' = 't3' (snapshot " + s3 + ")")
        .hasMessageContaining("is not before 'scan.end-tag' = 't1'");
    assertThatThrownBy(() -> changes(stream, "'scan.start-tag' = 't1', 'scan.end-tag' = 't1'"))
        .rootCause()
        .hasMessageContaining("both point at snapshot " + s1 + ": no change lies between them");
  }

  @Test
  @Timeout(180)
  void aChangelogReadAcrossARollbackEmitsTheRollbacksChanges() throws Exception {
    TableEnvironment stream = streaming(); // parallelism 2 on this machine's 2 cores
    declare(
        stream,
        "orders_changes",
        "id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED, commit_seq BIGINT METADATA VIRTUAL,"
            + " commit_time TIMESTAMP_LTZ(3) METADATA VIRTUAL",
        "database",
        "shop",
        "table",
        "orders");
    List<Row> changes = Collections.synchronizedList(new ArrayList<>());
    TableResult result = stream.executeSql("SELECT * FROM orders_changes");
    Thread collector = collectInBackground(result, changes);
    try {
      // The rows at s4, as inserts: (1,a2) (3,c).
      await().atMost(Duration.ofSeconds(60)).until(() -> changes.size() == 2);
      Table orders = orders();
      new TableWriter(orders).append(List.of(record(orders, 4L, "d")));
      long rollback = (Long) call("rollback_to('shop.orders', " + s2 + ")").getField(2);
      orders = orders(); // back to (1,a2) (2,b)
      new TableWriter(orders).append(List.of(record(orders, 7L, "g")));

      await().atMost(Duration.ofSeconds(60)).until(() -> changes.size() >= 7);
      // The rollback's changes carry its commit_seq and the catalog's stamp of it.
      Instant stamp = null;
      for (CommitEvent commit : catalog.catalog().commitsSince(rollback - 1, 1)) {
        stamp = Instant.EPOCH.plusMillis(commit.tsMicros() / 1000);
      }
      List<Row> ofRollback =
          List.copyOf(changes).stream()
              .filter(row -> row.getField("commit_seq").equals(rollback))
              .toList();
      assertThat(ofRollback).hasSize(3);
      for (Row row : ofRollback) {
        assertThat(row.getField("commit_time")).as(row.toString()).isEqualTo(stamp);
      }
      List<String> read =
          List.copyOf(changes).stream()
              .map(row -> Row.ofKind(row.getKind(), row.getField("id"), row.getField("v")))
              .map(Row::toString)
              .toList();
      assertThat(read)
          .containsExactlyInAnyOrder(
              "+I[1, a2]",
              "+I[3, c]",
              "+I[4, d]",
              "-D[3, c]", // the rollback: what s3 and the append after it added leaves,
              "-D[4, d]",
              "+I[2, b]", // and what s4 deleted comes back
              "+I[7, g]");
      assertThat(read.indexOf("+I[4, d]")).isLessThan(read.indexOf("-D[4, d]"));
      assertThat(read.indexOf("+I[3, c]")).isLessThan(read.indexOf("-D[3, c]"));
      assertThat(mainRows()).containsExactlyInAnyOrder("1,a2", "2,b", "7,g");
    } finally {
      result.getJobClient().orElseThrow().cancel().get();
      collector.join();
    }
  }

  @Test
  void badRefsAreRefusedBeforeAnythingChanges() throws Exception {
    call("create_tag('shop.orders', 't1', " + s1 + ")");
    String before = metadataLocation();

    assertRefused("create_tag('shop.orders', 't1')", "tag 't1' already exists at snapshot " + s1);
    assertRefused("delete_tag('shop.orders', 'nope')", "no tag 'nope'; its tags: [t1]");
    assertRefused("delete_tag('shop.orders', 'main')", "no tag 'main' (it is a branch)");
    assertRefused("delete_branch('shop.orders', 'main')", "branch 'main' cannot be deleted");
    assertRefused("fast_forward('shop.orders', 'main', 'nope')", "no branch 'nope'");
    assertRefused(
        "create_branch('shop.orders', 'b', 42)", "snapshot 42 is not one of its snapshots");

    // A rollback to a snapshot expiry removed.
    Table orders = orders();
    orders.manageSnapshots().removeTag("t1").commit();
    orders.expireSnapshots().expireSnapshotId(s1).commit();
    before = metadataLocation();
    assertRefused(
        "rollback_to('shop.orders', " + s1 + ")",
        "snapshot " + s1 + " is not one of its snapshots");
    assertThat(metadataLocation()).isEqualTo(before);

    assertThatThrownBy(() -> read("'scan.tag' = 'nope'"))
        .rootCause()
        .hasMessageContaining("option 'scan.tag' = 'nope'")
        .hasMessageContaining("has no tag of that name; its tags: none");
    assertThatThrownBy(() -> read("'scan.tag' = 'main'"))
        .rootCause()
        .hasMessageContaining("(it is a branch: use 'scan.branch')");
    assertThatThrownBy(() -> read("'scan.start-tag' = 'x'"))
        .rootCause()
        .hasMessageContaining(
            "option 'scan.start-tag' reads changes, which batch mode cannot take");
  }

  private void assertRefused(String call, String message) {
    String before = metadataLocation();
    assertThatThrownBy(() -> call(call))
        .rootCause()
        .hasMessageContaining("CALL lake.sys.")
        .hasMessageContaining("table shop.orders: " + message);
    assertThat(metadataLocation()).as("nothing changed by " + call).isEqualTo(before);
  }

  /** The one row {@code CALL lake.sys.<procedure>} returns. */
  private Row call(String procedure) throws Exception {
    List<Row> rows = collect(sql, "CALL lake.sys." + procedure);
    assertThat(rows).hasSize(1);
    return rows.get(0);
  }

  /** {@code seq} is the table's newest commit: a change of its metadata, no snapshot added. */
  private void assertMetadataCommit(long seq) {
    CommitEvent newest = null;
    for (CommitEvent commit : catalog.catalog().commitsSince(0)) {
      newest = commit;
    }
    assertThat(newest.commitSeq()).isEqualTo(seq);
    assertThat(newest.tableKey()).isEqualTo(catalog.catalog().commitTableKey(ORDERS));
    assertThat(newest.addedSnapshotIds()).isEmpty();
    assertThat(newest.metadataLocation()).isEqualTo(metadataLocation());
  }

  private List<Row> refs() throws Exception {
    return collect(sql, "SELECT name, type, snapshot_id FROM lake.shop.`orders$refs`");
  }

  /** The rows of a batch read with {@code options}, as strings. */
  private List<String> read(String options) throws Exception {
    return collect(sql, "SELECT * FROM lake.shop.orders /*+ OPTIONS(" + options + ") */").stream()
        .map(Row::toString)
        .toList();
  }

  private static List<String> changes(TableEnvironment env, String options) throws Exception {
    return collect(env, "SELECT * FROM lake.shop.orders /*+ OPTIONS(" + options + ") */").stream()
        .map(Row::toString)
        .toList();
  }

  private Set<String> mainRows() throws Exception {
    List<String> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(orders()).build()) {
      records.forEach(r -> rows.add(r.getField("id") + "," + r.getField("v")));
    }
    return rows.stream().collect(Collectors.toSet());
  }

  private Table orders() {
    return catalog.catalog().loadTable(ORDERS);
  }

  private String metadataLocation() {
    return ((HasTableOperations) orders()).operations().current().metadataFileLocation();
  }
}
