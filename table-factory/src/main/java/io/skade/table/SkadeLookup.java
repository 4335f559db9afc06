package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.TableLookup;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.utils.ProjectedRowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.RowDataWrapper;
import org.apache.iceberg.flink.data.StructRowData;
import org.apache.iceberg.types.Types;

/**
 * What skade's lookup functions share: Flink's adapter of the engine's {@link TableLookup} (which
 * holds the table at its latest commit or a pinned snapshot, the filter the planner pushed, the
 * caches and the retries). It turns Flink's key rows into Iceberg values, the table's rows into
 * Flink rows, and exports the probes' counters as metrics.
 *
 * <p>A lookup as of a time has the as-of column among its keys: its value, the probe's time at
 * millisecond precision (as {@code commit_time} shows a commit's), chooses the snapshot that was
 * current at the end of that millisecond, and the joined rows carry it back.
 */
final class SkadeLookup implements Serializable {
  private static final long serialVersionUID = 1L;

  /**
   * The settings of one lookup table.
   *
   * @param asOfKey the position of the as-of time in the key rows, or -1 for lookups of now
   * @param asOfOutput the position of the as-of column in the output rows (filled with the probe's
   *     time), or -1
   */
  record Settings(
      Map<String, String> catalogProperties,
      String table,
      List<String> outputColumns,
      int asOfKey,
      int asOfOutput,
      TableLookup.Settings lookup)
      implements Serializable {}

  private final Settings settings;
  private final RowType keyType;

  private transient CatalogConnection catalog;
  private transient LookupCaches.Handle caches;
  private transient TableLookup<RowData> lookup;

  /** Per thread, a view of Flink's key rows as Iceberg values (building one is costly). */
  private transient ThreadLocal<RowDataWrapper> keys;

  /** For lookups as of a time, per thread, a view of a key row without its time; else null. */
  private transient ThreadLocal<ProjectedRowData> tableKeys;

  /**
   * Per key column, Flink's getter of its value when that value is Iceberg's internal one as it is
   * (integers, longs, booleans, floats, doubles, dates); null where the view converts it. The view
   * builds such a getter on every read of these columns.
   */
  private transient RowData.FieldGetter[] direct;

  private transient Histogram latency;

  SkadeLookup(Settings settings, RowType keyType) {
    this.settings = settings;
    this.keyType = keyType;
  }

  void open(MetricGroup metrics) {
    catalog = CatalogConnection.open(SkadeCatalog.inTask(settings.catalogProperties()));
    caches = LookupCaches.acquire();
    lookup =
        new TableLookup<>(
            catalog,
            TableIdentifier.parse(settings.table()),
            settings.lookup(),
            caches.caches(),
            this::rows); // fails here on a bad key or snapshot
    Types.StructType key = Types.StructType.of(lookup.keyColumns());
    RowType tableKeyType = keyType;
    if (settings.asOfKey() >= 0) {
      List<RowType.RowField> fields = new ArrayList<>(keyType.getFields());
      fields.remove(settings.asOfKey());
      tableKeyType = new RowType(fields);
      int[] kept =
          IntStream.range(0, keyType.getFieldCount())
              .filter(i -> i != settings.asOfKey())
              .toArray();
      tableKeys = ThreadLocal.withInitial(() -> ProjectedRowData.from(kept));
    }
    RowType probedType = tableKeyType;
    keys = ThreadLocal.withInitial(() -> new RowDataWrapper(probedType, key));
    direct = new RowData.FieldGetter[probedType.getFieldCount()];
    for (int i = 0; i < direct.length; i++) {
      direct[i] =
          switch (probedType.getTypeAt(i).getTypeRoot()) {
            // Nullable: a key row may hold a null even where the column is NOT NULL.
            case INTEGER, BIGINT, BOOLEAN, FLOAT, DOUBLE, DATE ->
                RowData.createFieldGetter(probedType.getTypeAt(i).copy(true), i);
            default -> null;
          };
    }
    if (metrics != null) {
      MetricGroup group = metrics.addGroup("skade");
      group.gauge("lookupProbes", () -> lookup.stats().probes());
      group.gauge("lookupBytesRead", () -> lookup.stats().bytesRead());
      group.gauge("lookupReadCalls", () -> lookup.stats().readCalls());
      group.gauge("lookupFileOpens", () -> lookup.stats().fileOpens());
      group.gauge("lookupRowsDecoded", () -> lookup.stats().rowsDecoded());
      group.gauge("lookupRemoteReads", () -> lookup.stats().remoteReads());
      group.gauge("lookupRemoteBytes", () -> lookup.stats().remoteBytes());
      group.gauge("lookupDiskCacheHits", () -> lookup.stats().diskCacheHits());
      group.gauge("lookupDiskCacheHitBytes", () -> lookup.stats().diskCacheHitBytes());
      group.gauge("lookupDiskCacheMisses", () -> lookup.stats().diskCacheMisses());
      group.gauge("lookupDiskCacheMissBytes", () -> lookup.stats().diskCacheMissBytes());
      group.gauge("lookupFilesFetchedAhead", () -> lookup.stats().filesFetchedAhead());
      latency = group.histogram("lookupLatencyMicros", new DescriptiveStatisticsHistogram(1024));
    }
  }

  /** The rows joined to {@code keyRow}. */
  Collection<RowData> lookup(RowData keyRow) throws IOException {
    return lookup(keyRow, false);
  }

  /**
   * The rows joined to {@code keyRow}, probed on {@code executor} without holding the calling
   * thread while the lookup catches up with the catalog ({@link TableLookup#lookupAsync}).
   */
  CompletableFuture<Collection<RowData>> lookupAsync(RowData keyRow, Executor executor) {
    return lookup.lookupAsync(() -> lookup(keyRow, true), executor);
  }

  private Collection<RowData> lookup(RowData keyRow, boolean caughtUp) throws IOException {
    long start = System.nanoTime();
    TimestampData asOf = null;
    if (settings.asOfKey() >= 0) {
      if (keyRow.isNullAt(settings.asOfKey())) {
        return List.of(); // a NULL time equals nothing
      }
      asOf = keyRow.getTimestamp(settings.asOfKey(), 3);
      keyRow = tableKeys.get().replaceRow(keyRow);
    }
    Object[] values = new Object[direct.length];
    StructLike key = null;
    for (int i = 0; i < values.length; i++) {
      if (direct[i] != null) {
        values[i] = direct[i].getFieldOrNull(keyRow);
      } else {
        key = key == null ? keys.get().wrap(keyRow) : key;
        values[i] = key.get(i, Object.class);
      }
    }
    List<Object> keyValues = Arrays.asList(values);
    List<RowData> rows;
    if (asOf == null) {
      rows = caughtUp ? lookup.lookupCaughtUp(keyValues) : lookup.lookup(keyValues);
    } else {
      // the end of the probe's millisecond: a commit stamped within it shows in its commit_time
      long micros = asOf.getMillisecond() * 1000 + 999;
      rows =
          carryTime(
              caughtUp
                  ? lookup.lookupAsOfCaughtUp(micros, keyValues)
                  : lookup.lookupAsOf(micros, keyValues),
              asOf);
    }
    if (latency != null) {
      latency.update((System.nanoTime() - start) / 1000);
    }
    return rows;
  }

  /** The rows with the as-of column set to the probe's time: copies, for rows may be cached. */
  private List<RowData> carryTime(List<RowData> rows, TimestampData asOf) {
    int at = settings.asOfOutput();
    if (at < 0 || rows.isEmpty()) {
      return rows;
    }
    List<RowData> timed = new ArrayList<>(rows.size());
    for (RowData row : rows) {
      GenericRowData source = (GenericRowData) row;
      GenericRowData copy = new GenericRowData(source.getRowKind(), source.getArity());
      for (int i = 0; i < source.getArity(); i++) {
        copy.setField(i, source.getField(i));
      }
      copy.setField(at, asOf);
      timed.add(copy);
    }
    return timed;
  }

  /**
   * How rows of {@code table} become Flink rows of the output columns: per column, its position in
   * the table's rows and how it converts, worked out once per table version.
   */
  private Function<Record, RowData> rows(Table table) {
    Schema schema = table.schema();
    RowType rowType = FlinkSchemaUtil.convert(schema);
    List<String> output = settings.outputColumns();
    int n = output.size();
    int[] positions = new int[n];
    RowData.FieldGetter[] getters = new RowData.FieldGetter[n];
    Conversion[] conversions = new Conversion[n];
    boolean viewed = false;
    for (int i = 0; i < n; i++) {
      if (i == settings.asOfOutput()) {
        conversions[i] = Conversion.PROBE_TIME;
        continue;
      }
      Types.NestedField field = schema.findField(output.get(i));
      positions[i] = schema.columns().indexOf(field);
      getters[i] = RowData.createFieldGetter(rowType.getTypeAt(positions[i]), positions[i]);
      conversions[i] =
          switch (field.type().typeId()) {
            case STRING -> Conversion.STRING;
            case BOOLEAN, INTEGER, LONG, FLOAT, DOUBLE -> Conversion.SAME;
            default -> Conversion.GETTER;
          };
      viewed |= conversions[i] == Conversion.GETTER;
    }
    // Iceberg's view of a record as Flink data, per thread (async probes map rows concurrently).
    ThreadLocal<StructRowData> views =
        viewed ? ThreadLocal.withInitial(() -> new StructRowData(schema.asStruct())) : null;
    return record -> {
      GenericRowData row = new GenericRowData(n);
      for (int i = 0; i < n; i++) {
        if (conversions[i] == Conversion.PROBE_TIME) {
          continue; // set per probe (carryTime)
        }
        Object value = record.get(positions[i]);
        switch (conversions[i]) {
          case SAME -> row.setField(i, value);
          case STRING ->
              row.setField(
                  i,
                  value == null
                      ? null
                      : StringData.fromBytes(value.toString().getBytes(StandardCharsets.UTF_8)));
          default -> {
            StructRowData view = views.get();
            view.setStruct(record);
            row.setField(i, getters[i].getFieldOrNull(view));
          }
        }
      }
      return row;
    };
  }

  /** How a column's Iceberg generic value becomes Flink's internal one. */
  private enum Conversion {
    /** The same object (booleans, ints, longs, floats, doubles). */
    SAME,
    /**
     * UTF-8 bytes, the form Flink keeps: a {@code String} is encoded by Flink's own, slower,
     * encoder when the row is first copied or serialized.
     */
    STRING,
    /** Through Flink's field getter over Iceberg's view of the record as Flink data. */
    GETTER,
    /** Not the table's: the as-of column, the probe's time. */
    PROBE_TIME
  }

  void close() {
    if (lookup != null) {
      lookup.close(); // stops fetching new files ahead
    }
    if (caches != null) {
      caches.close();
    }
    if (catalog != null) {
      catalog.close();
    }
  }
}
