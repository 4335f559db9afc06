package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.SkadeCatalog;
import io.skade.write.TableWriter;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HistoryEntry;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;

/**
 * Metadata tables of a {@code skade} catalog's table from Flink SQL: Iceberg's {@code t$snapshots},
 * {@code t$history} and {@code t$files} answer what Iceberg's table API says of the same state,
 * {@code t$commits} lists the table's rows of the catalog's commit log, and {@code t$consumers}
 * each stored consumer with its lag in commits and snapshots.
 */
class SqlMetadataTablesTest extends SqlTestBase {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");

  @Test
  void metadataTablesAnswerFromTheTablesOwnState() throws Exception {
    TableEnvironment sql = batch();
    createLake(sql);
    sql.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, v STRING," + " PRIMARY KEY (id) NOT ENFORCED)");
    SkadeCatalog skade = catalog.catalog();
    Table orders = skade.loadTable(ORDERS);
    TableWriter writer = new TableWriter(orders);
    for (int round = 0; round < 3; round++) {
      writer.upsert(List.of(record(orders, 1L, "a" + round), record(orders, 10L + round, "b")));
    }
    orders.refresh();
    List<Snapshot> snapshots = new ArrayList<>();
    orders.snapshots().forEach(snapshots::add);
    skade.storeConsumer(
        "reporting",
        new ConsumerCursor(
            ORDERS,
            orders.uuid().toString(),
            snapshots.get(0).snapshotId(),
            skade.commitOf(ORDERS, snapshots.get(0).snapshotId()).orElseThrow().commitSeq()));

    assertThat(
            collect(
                sql,
                "SELECT snapshot_id, parent_id, operation FROM" + " lake.shop.`orders$snapshots`"))
        .containsExactlyInAnyOrderElementsOf(
            snapshots.stream()
                .map(s -> Row.of(s.snapshotId(), s.parentId(), s.operation()))
                .toList());
    assertThat(collect(sql, "SELECT snapshot_id FROM lake.shop.`orders$history`"))
        .containsExactlyInAnyOrderElementsOf(
            orders.history().stream().map(HistoryEntry::snapshotId).map(Row::of).toList());
    Set<String> files;
    try (CloseableIterable<FileScanTask> tasks = orders.newScan().planFiles()) {
      files =
          StreamSupport.stream(tasks.spliterator(), false)
              .map(task -> task.file().location())
              .collect(Collectors.toSet());
    }
    assertThat(
            collect(sql, "SELECT file_path FROM lake.shop.`orders$data_files`").stream()
                .map(r -> (String) r.getField(0))
                .collect(Collectors.toSet()))
        .isEqualTo(files);

    List<Row> commits =
        collect(
            sql, "SELECT commit_seq, operation, snapshot_ids FROM" + " lake.shop.`orders$commits`");
    List<CommitEvent> log = new ArrayList<>();
    skade
        .commitsSince(0)
        .forEach(
            event -> {
              if (event.tableKey().equals(skade.commitTableKey(ORDERS))) {
                log.add(event);
              }
            });
    // The create, its sort order (by the key), three upserts.
    assertThat(commits).hasSize(log.size()).hasSize(5);
    assertThat(commits.stream().map(r -> (Long) r.getField(0)).toList())
        .isEqualTo(log.stream().map(CommitEvent::commitSeq).toList());
    assertThat(commits.get(0).getField(1)).isEqualTo("create");
    assertThat((Long[]) commits.get(4).getField(2))
        .containsExactly(orders.currentSnapshot().snapshotId());

    assertThat(
            collect(
                sql,
                "SELECT consumer_id, snapshot_id, lag_commits, lag_snapshots FROM"
                    + " lake.shop.`orders$consumers`"))
        .containsExactly(Row.of("reporting", snapshots.get(0).snapshotId(), 2L, 2L));
  }

  @Test
  void forSystemTimeAsOfReadsTheSnapshotCurrentThen() throws Exception {
    TableEnvironment sql = batch();
    createLake(sql);
    sql.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, v STRING," + " PRIMARY KEY (id) NOT ENFORCED)");
    Table orders = catalog.catalog().loadTable(ORDERS);
    TableWriter writer = new TableWriter(orders);
    Snapshot first = writer.upsert(List.of(record(orders, 1L, "a"), record(orders, 2L, "b")));
    while (System.currentTimeMillis() <= first.timestampMillis()) {
      Thread.onSpinWait(); // the next commit must be stamped later than the first
    }
    writer.upsert(List.of(record(orders, 1L, "a2"), record(orders, 3L, "c")));

    sql.getConfig().setLocalTimeZone(ZoneOffset.UTC);
    sql.executeSql("USE CATALOG lake"); // Flink 2.1 time-travels in the current catalog only
    assertThat(
            collect(
                sql,
                "SELECT id, v FROM shop.orders FOR SYSTEM_TIME AS OF"
                    + " TIMESTAMP '"
                    + utc(first.timestampMillis())
                    + "'"))
        .containsExactlyInAnyOrder(Row.of(1L, "a"), Row.of(2L, "b"));
    assertThat(collect(sql, "SELECT id, v FROM shop.orders"))
        .containsExactlyInAnyOrder(Row.of(1L, "a2"), Row.of(2L, "b"), Row.of(3L, "c"));
    assertThatThrownBy(
            () ->
                collect(
                    sql,
                    "SELECT * FROM shop.orders FOR SYSTEM_TIME AS OF"
                        + " TIMESTAMP '"
                        + utc(first.timestampMillis() - 60_000)
                        + "'"))
        .rootCause()
        .hasMessageContaining("had no snapshot then")
        .hasMessageContaining("its oldest is from");
  }

  /** {@code millis} as a SQL timestamp literal's text, in UTC. */
  private static String utc(long millis) {
    return DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS")
        .format(Instant.ofEpochMilli(millis).atOffset(ZoneOffset.UTC));
  }
}
