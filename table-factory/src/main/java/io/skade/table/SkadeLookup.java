package io.skade.table;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.SharedCatalogs;
import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.lookup.LatestTable;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.PointLookup;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.RowDataWrapper;
import org.apache.iceberg.flink.data.StructRowData;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What skade's lookup functions share: the table kept at its latest commit (or a pinned
 * snapshot), {@link PointLookup} probes with retries, an optional row cache keyed by snapshot
 * and key (never stale: a new snapshot misses it), or a full cache of the snapshot's rows kept
 * current by applying each new snapshot's changelog, and the per-probe metrics.
 */
final class SkadeLookup implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(SkadeLookup.class);

  /** How lookups are served. */
  enum Caching {
    /**
     * skade's own caches, never stale: probes keep the decoded pages they read, and a row cache
     * keyed by snapshot and key is in front of them when given a size; the default.
     */
    SNAPSHOT_ROWS,
    /** Flink's own PARTIAL cache is in front of probes (which still keep decoded pages). */
    NONE,
    /** The snapshot's rows in memory, kept current by applying each new snapshot's changes. */
    FULL
  }

  /** The settings of one lookup table. */
  record Settings(Map<String, String> catalogProperties, String table,
      List<String> keyColumns, List<String> outputColumns, Long snapshotId,
      Duration pollInterval, int maxRetries, Caching caching, long rowCacheMaxRows)
      implements Serializable {}

  private final Settings settings;
  private final RowType keyType;

  private transient SharedCatalogs.Handle catalog;
  private transient LookupCaches.Handle caches;
  private transient LatestTable latest;
  private transient PointLookup.Counters counters;
  private transient volatile Version version; // the table probed, with what probes reuse
  private transient Cache<RowKey, List<RowData>> rowCache;
  private transient FullCache full;
  private transient Histogram latency;

  SkadeLookup(Settings settings, RowType keyType) {
    this.settings = settings;
    this.keyType = keyType;
  }

  void open(MetricGroup metrics) {
    catalog = SharedCatalogs.acquireOrFollow(settings.catalogProperties());
    caches = LookupCaches.acquire();
    latest = new LatestTable(catalog.catalog(), TableIdentifier.parse(settings.table()),
        settings.pollInterval());
    counters = new PointLookup.Counters();
    if (settings.caching() == Caching.SNAPSHOT_ROWS && settings.rowCacheMaxRows() > 0) {
      rowCache = Caffeine.newBuilder().maximumSize(settings.rowCacheMaxRows()).build();
    }
    current(); // fails here, at open, on a bad key or snapshot
    if (metrics != null) {
      MetricGroup group = metrics.addGroup("skade");
      group.gauge("lookupProbes", () -> counters.stats().probes());
      group.gauge("lookupBytesRead", () -> counters.stats().bytesRead());
      group.gauge("lookupReadCalls", () -> counters.stats().readCalls());
      group.gauge("lookupFileOpens", () -> counters.stats().fileOpens());
      group.gauge("lookupRowsDecoded", () -> counters.stats().rowsDecoded());
      latency = group.histogram("lookupLatencyMicros", new DescriptiveStatisticsHistogram(1024));
    }
  }

  /** The rows joined to {@code keyRow}, retried up to the configured number of times. */
  Collection<RowData> lookup(RowData keyRow) throws IOException {
    long start = System.nanoTime();
    for (int attempt = 0; ; attempt++) {
      try {
        Collection<RowData> rows = attempt(keyRow);
        if (latency != null) {
          latency.update((System.nanoTime() - start) / 1000);
        }
        return rows;
      } catch (RuntimeException e) {
        if (attempt >= settings.maxRetries()) {
          throw new IOException("skade lookup on " + settings.table() + " failed after "
              + (attempt + 1) + " attempt(s) for key " + keyRow, e);
        }
        LOG.warn("skade lookup on {} failed (attempt {} of {}), retrying", settings.table(),
            attempt + 1, settings.maxRetries() + 1, e);
        try {
          Thread.sleep(Math.min(1000L * (attempt + 1), 5000L));
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while retrying a skade lookup", interrupted);
        }
      }
    }
  }

  private Collection<RowData> attempt(RowData keyRow) {
    Version at = current();
    List<Object> key = keyValues(keyRow, at);
    if (key.contains(null)) {
      return List.of(); // NULL never equals anything
    }
    if (settings.caching() == Caching.FULL) {
      return full.rows(key, at);
    }
    Long snapshot = settings.snapshotId() != null ? settings.snapshotId()
        : at.table().currentSnapshot() == null ? null
            : at.table().currentSnapshot().snapshotId();
    if (rowCache == null || snapshot == null) {
      return toRows(at.lookup().lookup(snapshot, key), at);
    }
    // Read, then put: a miss costs no per-key lock, and two probes of one key racing both
    // read the same immutable snapshot.
    RowKey cacheKey = new RowKey(snapshot, key.size() == 1 ? key.get(0) : key);
    List<RowData> rows = rowCache.getIfPresent(cacheKey);
    if (rows == null) {
      rows = toRows(at.lookup().lookup(snapshot, key), at);
      rowCache.put(cacheKey, rows);
    }
    return rows;
  }

  /** A key of the row cache: the snapshot, and the key's value (or values). */
  private record RowKey(long snapshot, Object key) {}

  /**
   * A table version with its lookup and what every probe of it reuses: per thread, a view of
   * Flink's key rows as Iceberg values (building one costs more than a probe's other work), and
   * per output column its position in the table's rows, how Flink reads it from a row and
   * how it converts.
   */
  private record Version(Table table, PointLookup lookup, ThreadLocal<RowDataWrapper> keys,
      int[] positions, RowData.FieldGetter[] getters, Conversion[] conversions) {
    static Version of(Table table, PointLookup lookup, RowType keyType,
        List<String> outputColumns) {
      Schema schema = table.schema();
      RowType rowType = FlinkSchemaUtil.convert(schema);
      int n = outputColumns.size();
      int[] positions = new int[n];
      RowData.FieldGetter[] getters = new RowData.FieldGetter[n];
      Conversion[] conversions = new Conversion[n];
      for (int i = 0; i < n; i++) {
        Types.NestedField field = schema.findField(outputColumns.get(i));
        positions[i] = schema.columns().indexOf(field);
        getters[i] = RowData.createFieldGetter(rowType.getTypeAt(positions[i]), positions[i]);
        conversions[i] = switch (field.type().typeId()) {
          case STRING -> Conversion.STRING;
          case BOOLEAN, INTEGER, LONG, FLOAT, DOUBLE -> Conversion.SAME;
          default -> Conversion.GETTER;
        };
      }
      Types.StructType key = Types.StructType.of(lookup.keyColumns());
      return new Version(table, lookup,
          ThreadLocal.withInitial(() -> new RowDataWrapper(keyType, key)), positions, getters,
          conversions);
    }
  }

  /** The latest table version (or the pinned snapshot's table). */
  private Version current() {
    Table table = latest.table();
    Version known = version;
    return known != null && known.table() == table ? known : advance(table);
  }

  private synchronized Version advance(Table table) {
    if (version == null || table != version.table()) {
      Version next = Version.of(table,
          new PointLookup(table, settings.keyColumns(), caches.caches(), counters), keyType,
          settings.outputColumns());
      if (settings.caching() == Caching.FULL) {
        full = full == null ? new FullCache(table) : full.advance(table);
      }
      version = next; // after the full cache: reading the version shows it too
    }
    return version;
  }

  private static List<Object> keyValues(RowData keyRow, Version at) {
    StructLike key = at.keys().get().wrap(keyRow);
    Object[] values = new Object[key.size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = key.get(i, Object.class);
    }
    return Arrays.asList(values);
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
    GETTER
  }

  /** The output columns of table rows, as Flink rows. */
  private static List<RowData> toRows(List<Record> records, Version at) {
    if (records.isEmpty()) {
      return List.of();
    }
    List<RowData> rows = new ArrayList<>(records.size());
    StructRowData view = null;
    for (Record record : records) {
      GenericRowData row = new GenericRowData(at.positions().length);
      for (int i = 0; i < at.positions().length; i++) {
        Object value = record.get(at.positions()[i]);
        switch (at.conversions()[i]) {
          case SAME -> row.setField(i, value);
          case STRING -> row.setField(i, value == null ? null
              : StringData.fromBytes(value.toString().getBytes(StandardCharsets.UTF_8)));
          default -> {
            if (view == null) {
              view = new StructRowData(at.table().schema().asStruct());
            }
            view.setStruct(record);
            row.setField(i, at.getters()[i].getFieldOrNull(view));
          }
        }
      }
      rows.add(row);
    }
    return rows;
  }

  void close() {
    if (caches != null) {
      caches.close();
    }
    if (catalog != null) {
      catalog.close();
    }
  }

  /**
   * Every row of the snapshot, by key, kept current: a new snapshot's changes (the changelog of
   * the window since the last one) are applied instead of reloading the table.
   */
  private final class FullCache {
    private final Map<List<Object>, List<Record>> rows = new HashMap<>();
    private Long snapshot;

    FullCache(Table table) {
      Snapshot at = pinnedOrCurrent(table);
      snapshot = at == null ? null : at.snapshotId();
      if (snapshot != null) {
        try (CloseableIterable<Record> all =
            IcebergGenerics.read(table).useSnapshot(snapshot).build()) {
          for (Record row : all) {
            add(table.schema(), row);
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    }

    synchronized FullCache advance(Table table) {
      Snapshot at = pinnedOrCurrent(table);
      if (at == null || (snapshot != null && at.snapshotId() == snapshot)) {
        return this;
      }
      ChangelogReader changes = new ChangelogReader(table, ChangelogOptions.defaults());
      for (ChangeRow change : changes.read(snapshot, at.snapshotId())) {
        if (change.type().removes()) {
          remove(table.schema(), change.row());
        } else {
          add(table.schema(), change.row());
        }
      }
      snapshot = at.snapshotId();
      return this;
    }

    private Snapshot pinnedOrCurrent(Table table) {
      return settings.snapshotId() != null ? table.snapshot(settings.snapshotId())
          : table.currentSnapshot();
    }

    private List<Object> key(Schema schema, Record row) {
      InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct()).wrap(row);
      List<Object> key = new ArrayList<>();
      for (String column : settings.keyColumns()) {
        Types.NestedField field = schema.caseInsensitiveFindField(column);
        Object value = internal.get(schema.columns().indexOf(field), Object.class);
        key.add(value instanceof CharSequence chars ? chars.toString() : value);
      }
      return key;
    }

    private void add(Schema schema, Record row) {
      rows.computeIfAbsent(key(schema, row), k -> new ArrayList<>(1)).add(row.copy());
    }

    private void remove(Schema schema, Record row) {
      List<Object> key = key(schema, row);
      List<Record> same = rows.get(key);
      if (same != null) {
        same.removeIf(existing -> existing.equals(row));
        if (same.isEmpty()) {
          rows.remove(key);
        }
      }
    }

    synchronized List<RowData> rows(List<Object> key, Version at) {
      List<Object> normalized = key.stream()
          .map(v -> v instanceof CharSequence chars ? (Object) chars.toString() : v).toList();
      return toRows(rows.getOrDefault(normalized, List.of()), at);
    }
  }
}
