package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.SnapshotRowCount;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.io.GenericInputFormat;
import org.apache.flink.api.common.io.NonParallelInput;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The one row of {@code COUNT(*)}s pushed into a skade table source: the rows of the snapshot the
 * query reads (the table's current one when the job runs, or {@code scan.end.snapshot-id}), counted
 * then by {@link SnapshotRowCount} — from the manifests when no delete file applies, else by
 * reading the rows with their deletes — once per {@code COUNT(*)} of the query.
 */
final class SnapshotCountFormat extends GenericInputFormat<RowData> implements NonParallelInput {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table; // a TableIdentifier is not serializable
  private final Long endSnapshotId;
  private final int counts;
  private transient boolean done;

  SnapshotCountFormat(
      Map<String, String> catalogProperties,
      TableIdentifier table,
      Long endSnapshotId,
      int counts) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
    this.endSnapshotId = endSnapshotId;
    this.counts = counts;
  }

  /** The snapshot a query reads: the end snapshot, else the table's current one (null: none). */
  static Long snapshotRead(Table table, Long endSnapshotId) {
    Snapshot current = table.currentSnapshot();
    return endSnapshotId != null ? endSnapshotId : current == null ? null : current.snapshotId();
  }

  @Override
  public boolean reachedEnd() {
    return done;
  }

  @Override
  public RowData nextRecord(RowData reuse) {
    long rows;
    try (CatalogConnection connection =
        CatalogConnection.open(SkadeCatalog.inTask(catalogProperties))) {
      Table loaded = connection.catalog().loadTable(TableIdentifier.parse(table));
      rows = SnapshotRowCount.of(loaded, snapshotRead(loaded, endSnapshotId));
    }
    done = true;
    GenericRowData row = new GenericRowData(counts);
    for (int i = 0; i < counts; i++) {
      row.setField(i, rows);
    }
    return row;
  }
}
