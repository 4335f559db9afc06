package io.skade.lineage;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lineage kept in the catalog's own {@code skade_system.lineage_events} table: one row per commit,
 * read back with Iceberg's reader; none for the table's own commits; after a restart, the commits
 * made while lineage was off are recorded from the log, and none twice.
 */
class WarehouseLineageSinkTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier C = TableIdentifier.of("db", "c");

  @TempDir Path warehouse;

  @Test
  void everyCommitIsARowAndTheTablesOwnCommitsAreNot() throws Exception {
    List<Snapshot> snapshots = new ArrayList<>();
    try (SharedCatalogs.Handle handle =
        open(Map.of(CatalogLineage.SINK, "table", CatalogLineage.ACTOR, "nightly"))) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of("db"));
      Table c = catalog.buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      TableWriter writer = new TableWriter(c);
      snapshots.add(writer.append(List.of(row(1, "one"))));
      snapshots.add(writer.deleteKeys(List.of(row(1, null))));
      List<Record> rows = awaitRows(catalog, 3);

      assertThat(rows)
          .extracting(
              r -> r.getField("output_table"),
              r -> r.getField("operation"),
              r -> r.getField("actor"),
              r -> r.getField("output_snapshot_id"))
          .containsExactly(
              tuple("db.c", "CREATE", "nightly", null),
              tuple("db.c", "APPEND", "nightly", snapshots.get(0).snapshotId()),
              tuple("db.c", "DELETE", "nightly", snapshots.get(1).snapshotId()));
      assertThat(rows.get(1).getField("commit_seq"))
          .isEqualTo(catalog.commitOf(C, snapshots.get(0).snapshotId()).orElseThrow().commitSeq());
      assertThat(rows.get(2).getField("commit_seq"))
          .isEqualTo(catalog.commitOf(C, snapshots.get(1).snapshotId()).orElseThrow().commitSeq());
      assertThat(rows.get(1).getField("outputs")).isEqualTo(List.of("db.c"));
      assertThat(rows.get(1).getField("output_location")).isEqualTo(c.location());

      // The lineage table's own appends are commits too, and none of them became a row: once
      // lineage has caught up, the catalog stays still.
      Table lineage = catalog.loadTable(WarehouseLineageSink.TABLE);
      assertThat(lineage.snapshots()).isNotEmpty();
      long seq = catalog.commitSeq();
      awaitQuiet(catalog);
      assertThat(catalog.commitSeq()).isEqualTo(seq);
      assertThat(read(catalog)).hasSize(3);
    }
  }

  @Test
  void afterARestartCommitsMadeWhileLineageWasOffAreRecordedOnce() throws Exception {
    Snapshot first;
    Snapshot second;
    try (SharedCatalogs.Handle handle = open(Map.of(CatalogLineage.SINK, "table"))) {
      handle.catalog().createNamespace(Namespace.of("db"));
      Table c = handle.catalog().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      first = new TableWriter(c).append(List.of(row(1, "one")));
      awaitRows(handle.catalog(), 2);
    }
    try (SharedCatalogs.Handle handle = open(Map.of())) {
      second = new TableWriter(handle.catalog().loadTable(C)).append(List.of(row(2, "two")));
    }
    try (SharedCatalogs.Handle handle = open(Map.of(CatalogLineage.SINK, "table"))) {
      List<Record> rows = awaitRows(handle.catalog(), 3);
      assertThat(rows)
          .extracting(r -> r.getField("operation"), r -> r.getField("output_snapshot_id"))
          .containsExactly(
              tuple("CREATE", null),
              tuple("APPEND", first.snapshotId()),
              tuple("APPEND", second.snapshotId()));
      awaitQuiet(handle.catalog());
      assertThat(read(handle.catalog())).hasSize(3);
    }
  }

  @Test
  void aBadSinkOrAMissingUrlFailsTheCatalogOpenAndNamesTheProperty() {
    assertThatThrownBy(() -> open(Map.of(CatalogLineage.SINK, "kafka")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'lineage.sink' is 'kafka'")
        .hasMessageContaining("'none', 'table' and 'openlineage'");
    assertThatThrownBy(() -> open(Map.of(CatalogLineage.SINK, "openlineage")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs 'lineage.openlineage.url'");
    // The failed opens released the directory: it opens again.
    open(Map.of()).close();
  }

  private SharedCatalogs.Handle open(Map<String, String> extra) {
    Map<String, String> properties = new HashMap<>(extra);
    properties.put("warehouse", warehouse.toString());
    return SharedCatalogs.acquire("test", properties);
  }

  /** The lineage rows in commit_seq order, once there are {@code count} of them. */
  private static List<Record> awaitRows(SkadeCatalog catalog, int count) {
    List<Record> rows =
        await()
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(20))
            .until(
                () ->
                    catalog.tableExists(WarehouseLineageSink.TABLE)
                        ? read(catalog)
                        : List.<Record>of(),
                read -> read.size() >= count);
    assertThat(rows).hasSize(count);
    return rows;
  }

  private static List<Record> read(SkadeCatalog catalog) throws Exception {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> all =
        IcebergGenerics.read(catalog.loadTable(WarehouseLineageSink.TABLE)).build()) {
      all.forEach(rows::add);
    }
    rows.sort(java.util.Comparator.comparing(r -> (Long) r.getField("commit_seq")));
    return rows;
  }

  /** Waits until lineage has described every commit of the catalog. */
  private static void awaitQuiet(SkadeCatalog catalog) {
    CatalogLineage.Running running = CatalogLineage.Running.of(catalog).orElseThrow();
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> running.cursor() >= catalog.commitSeq());
    assertThat(running.cursor()).isEqualTo(catalog.commitSeq());
  }
}
