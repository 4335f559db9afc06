package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.SnapshotAggregates;
import io.skade.changelog.SnapshotAggregates.Aggregate;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.io.GenericInputFormat;
import org.apache.flink.api.common.io.NonParallelInput;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The one row of the aggregates pushed into a skade table source ({@code COUNT(*)}, {@code MIN},
 * {@code MAX}): over the rows of the snapshot the query reads (the table's current one when the job
 * runs, or {@code scan.end.snapshot-id}), computed then by {@link SnapshotAggregates} — from the
 * manifests when no delete file applies, else by reading the rows with their deletes — and given as
 * Flink's internal values of the query's types.
 */
final class SnapshotAggregateFormat extends GenericInputFormat<RowData>
    implements NonParallelInput {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table; // a TableIdentifier is not serializable
  private final Long endSnapshotId;
  private final ArrayList<Aggregate> aggregates;
  private final ArrayList<LogicalType> types;
  private transient boolean done;

  SnapshotAggregateFormat(
      Map<String, String> catalogProperties,
      TableIdentifier table,
      Long endSnapshotId,
      List<Aggregate> aggregates,
      List<LogicalType> types) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
    this.endSnapshotId = endSnapshotId;
    this.aggregates = new ArrayList<>(aggregates);
    this.types = new ArrayList<>(types);
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
    List<Object> values;
    try (CatalogConnection connection =
        CatalogConnection.open(SkadeCatalog.inTask(catalogProperties))) {
      Table loaded = connection.catalog().loadTable(TableIdentifier.parse(table));
      values = SnapshotAggregates.of(loaded, snapshotRead(loaded, endSnapshotId), aggregates);
    }
    done = true;
    GenericRowData row = new GenericRowData(values.size());
    for (int i = 0; i < values.size(); i++) {
      row.setField(i, flink(values.get(i), types.get(i)));
    }
    return row;
  }

  /** An Iceberg internal value as Flink's internal value of {@code type}. */
  private static Object flink(Object value, LogicalType type) {
    if (value == null) {
      return null;
    }
    return switch (type.getTypeRoot()) {
      case TINYINT -> ((Integer) value).byteValue(); // Iceberg keeps them as integers
      case SMALLINT -> ((Integer) value).shortValue();
      case TIME_WITHOUT_TIME_ZONE -> (int) ((Long) value / 1_000); // micros to millis
      case TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> {
        long micros = (Long) value;
        yield TimestampData.fromEpochMillis(
            Math.floorDiv(micros, 1_000), (int) Math.floorMod(micros, 1_000) * 1_000);
      }
      case DECIMAL -> {
        DecimalType decimal = (DecimalType) type;
        yield DecimalData.fromBigDecimal(
            (BigDecimal) value, decimal.getPrecision(), decimal.getScale());
      }
      default -> value; // counts (Long), booleans, integers, longs, dates (Integer days)
    };
  }
}
