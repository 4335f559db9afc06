package io.skade.table;

import io.skade.changelog.ChangeType;
import io.skade.source.ChangeDeserializer;
import io.skade.source.ChangeMetadata;
import java.util.List;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.data.utils.ProjectedRowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

/**
 * The rows a SQL scan of a skade table produces: the projected physical columns, then the requested
 * metadata columns in their order. In upsert mode ({@code key-only} before-images) {@code -U} rows
 * are dropped: the planner rebuilds them from the {@code +U}. An append-only read ({@code
 * scan.append-only}) declared inserts only, so a change of another kind fails the job: a consumer
 * such as a delta join keeps no state to retract a row with.
 */
final class SqlChangeDeserializer implements ChangeDeserializer<RowData> {
  private static final long serialVersionUID = 1L;

  private final InternalTypeInfo<RowData> producedType;

  /** Positions of the produced physical columns in the read row; null when they are the same. */
  private final int[] physical;

  private final List<MetadataColumn> metadata;
  private final boolean upsert;

  /** The table, when it is read append-only; null otherwise. */
  private final String appendOnlyTable;

  private transient ProjectedRowData projection; // reused: rows are consumed during the call

  SqlChangeDeserializer(
      InternalTypeInfo<RowData> producedType,
      int[] physical,
      List<MetadataColumn> metadata,
      boolean upsert,
      String appendOnlyTable) {
    this.producedType = producedType;
    this.physical = physical;
    this.metadata = List.copyOf(metadata);
    this.upsert = upsert;
    this.appendOnlyTable = appendOnlyTable;
  }

  @Override
  public void deserialize(RowData change, ChangeMetadata meta, Collector<RowData> out) {
    RowKind kind = change.getRowKind();
    if (appendOnlyTable != null && kind != RowKind.INSERT) {
      throw new IllegalStateException(
          "skade table "
              + appendOnlyTable
              + " is read append-only ('"
              + SkadeConnectorOptions.SCAN_APPEND_ONLY.key()
              + "' = 'true'), but commit_seq "
              + meta.commitSeq()
              + " (snapshot "
              + meta.snapshotId()
              + ") "
              + (kind == RowKind.DELETE ? "deletes" : "updates")
              + " a row it read: the job's"
              + " result would keep the old row. Keep the table's writers to inserts, or read it"
              + " without '"
              + SkadeConnectorOptions.SCAN_APPEND_ONLY.key()
              + "' (a join of it then"
              + " keeps state)");
    }
    if (upsert && kind == RowKind.UPDATE_BEFORE) {
      return;
    }
    RowData row = change;
    if (physical != null) {
      if (projection == null) {
        projection = ProjectedRowData.from(physical);
      }
      row = projection.replaceRow(change);
    }
    if (!metadata.isEmpty()) {
      GenericRowData values = new GenericRowData(metadata.size());
      for (int i = 0; i < metadata.size(); i++) {
        values.setField(i, metadata.get(i).value(kind, meta));
      }
      row = new JoinedRowData(kind, row, values);
    }
    out.collect(row);
  }

  @Override
  public InternalTypeInfo<RowData> getProducedType() {
    return producedType;
  }

  /** The metadata columns a skade table can read ({@code METADATA VIRTUAL}). */
  enum MetadataColumn {
    CHANGE_TYPE("change_type"),
    COMMIT_SEQ("commit_seq"),
    SNAPSHOT_ID("snapshot_id"),
    COMMIT_TIME("commit_time");

    final String key;

    MetadataColumn(String key) {
      this.key = key;
    }

    static MetadataColumn of(String key) {
      for (MetadataColumn column : values()) {
        if (column.key.equals(key)) {
          return column;
        }
      }
      throw new IllegalArgumentException("skade tables have no metadata column '" + key + "'");
    }

    Object value(RowKind kind, ChangeMetadata meta) {
      return switch (this) {
        case CHANGE_TYPE -> StringData.fromString(changeType(kind).name());
        case COMMIT_SEQ -> meta.commitSeq();
        case SNAPSHOT_ID -> meta.snapshotId();
        case COMMIT_TIME -> TimestampData.fromEpochMillis(meta.commitMillis());
      };
    }

    private static ChangeType changeType(RowKind kind) {
      return switch (kind) {
        case INSERT -> ChangeType.INSERT;
        case UPDATE_BEFORE -> ChangeType.UPDATE_BEFORE;
        case UPDATE_AFTER -> ChangeType.UPDATE_AFTER;
        case DELETE -> ChangeType.DELETE;
      };
    }
  }
}
