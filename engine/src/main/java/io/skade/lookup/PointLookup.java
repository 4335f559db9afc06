package io.skade.lookup;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.scan.DataFileRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.InclusiveMetricsEvaluator;
import org.apache.iceberg.expressions.Projections;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;
import org.apache.iceberg.util.StructLikeSet;
import org.apache.iceberg.util.StructProjection;

/**
 * The current rows of an Iceberg table for a key, merge-on-read, without copying the table: a probe
 * reads only the data files that can hold the key and, in them, only the row groups that can. Files
 * are pruned by partition and by the column bounds in the manifests; row groups by their
 * statistics, dictionaries and Parquet bloom filters. Rows are then matched on the key and checked
 * against the file's position deletes (or deletion vector) and the equality deletes committed after
 * it, as a scan of the snapshot would.
 *
 * <p>When the key columns are the table's identifier fields a probe returns at most one row; any
 * other columns may be the key too, returning every row that has those values. A row filter, when
 * given, is a residual: a row it does not keep is never returned, and files whose partition or
 * column bounds rule it out are not read. Thread-safe; what it keeps between probes lives in {@link
 * LookupCaches}.
 */
public final class PointLookup {
  /**
   * Table properties that make data files cheap to probe: row groups of about 16 KB (so that a key
   * page's rows in every column lie within one read), pages of at most 250 rows (the unit a probe
   * reads and decodes per column), LZ4 (zstd costs several microseconds per small page),
   * dictionaries of at most 4 KB (a column whose values do not fit is stored plain) and bloom
   * filters of at most 4 KB (Parquet sizes a filter to its maximum; the default 1 MB would be read
   * and kept per row group). Tables skade creates with a primary key get them.
   */
  public static final Map<String, String> LOOKUP_FILE_PROPERTIES =
      Map.of(
          TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "16384",
          TableProperties.PARQUET_COMPRESSION, "lz4_raw",
          TableProperties.PARQUET_PAGE_ROW_LIMIT, "250",
          TableProperties.PARQUET_DICT_SIZE_BYTES, "4096",
          TableProperties.PARQUET_BLOOM_FILTER_MAX_BYTES, "4096");

  private final Table table;
  private final Schema schema;
  private final Schema readSchema;
  private final List<Types.NestedField> key;
  private final int[] keyPositions;
  private final List<Comparator<Object>> keyComparators;
  private final LookupCaches caches;
  private final Counters counters;

  /** Whether the table maps names to columns of files without field ids: Iceberg reads those. */
  private final boolean nameMapped;

  /** The rows a probe may return; always true when there is no filter. */
  private final Expression filter;

  /** The filter on rows, over internal values; null when there is no filter. */
  private final Evaluator rowFilter;

  /** Per thread, the view of a table row as internal values that {@link #rowFilter} evaluates. */
  private final ThreadLocal<InternalRecordWrapper> internalRows;

  /** The files of the snapshot probed last: most probes ask for the same one. */
  private volatile SnapshotFiles last;

  /**
   * Which files the filter rules out, per snapshot's files probed lately (by identity, held weakly:
   * the files themselves are the caches'): lookups as of a time move between snapshots, and this is
   * worked out once per snapshot.
   */
  private final Cache<KeyedFiles, boolean[]> ruledOutByFiles =
      Caffeine.newBuilder().weakKeys().maximumSize(64).build();

  /**
   * The table's columns an equality delete file names, per set of field ids: every probe checks a
   * row against each such file, and building a schema costs more than the check.
   */
  private final Map<List<Integer>, Schema> deleteSchemas = new ConcurrentHashMap<>();

  /** Which partitions may hold a key, per spec. */
  private final KeyPartitions keyPartitions;

  /**
   * A snapshot's keyed files, and which of them the row filter rules out by partition or column
   * bounds (null when none is).
   */
  private record SnapshotFiles(long snapshotId, KeyedFiles files, boolean[] ruledOut) {}

  /** Cumulative counters, shared by the lookups of one function across table versions. */
  public static final class Counters implements DataFileRows.ReadListener {
    private final LongAdder probes = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder readCalls = new LongAdder();
    private final LongAdder fileOpens = new LongAdder();
    private final LongAdder rowsDecoded = new LongAdder();
    private final LongAdder filesRead = new LongAdder();
    private final LongAdder remoteReads = new LongAdder();
    private final LongAdder remoteBytes = new LongAdder();
    private final LongAdder diskHits = new LongAdder();
    private final LongAdder diskHitBytes = new LongAdder();
    private final LongAdder diskMisses = new LongAdder();
    private final LongAdder diskMissBytes = new LongAdder();
    final LongAdder filesFetchedAhead = new LongAdder();

    /** A read of a remote file, of {@code bytes} bytes, came from {@code source}. */
    void read(FileBytes.Source source, int bytes) {
      switch (source) {
        case DISK_CACHE -> {
          diskHits.increment();
          diskHitBytes.add(bytes);
        }
        case REMOTE_AFTER_MISS -> {
          diskMisses.increment();
          diskMissBytes.add(bytes);
          remoteReads.increment();
          remoteBytes.add(bytes);
        }
        case REMOTE -> {
          remoteReads.increment();
          remoteBytes.add(bytes);
        }
        default -> {}
      }
    }

    @Override
    public void opened() {
      fileOpens.increment();
    }

    @Override
    public void read(int bytes) {
      readCalls.increment();
      bytesRead.add(bytes);
    }

    /** The counts so far. */
    public LookupStats stats() {
      return new LookupStats(
          probes.sum(),
          bytesRead.sum(),
          readCalls.sum(),
          fileOpens.sum(),
          rowsDecoded.sum(),
          filesRead.sum(),
          remoteReads.sum(),
          remoteBytes.sum(),
          diskHits.sum(),
          diskHitBytes.sum(),
          diskMisses.sum(),
          diskMissBytes.sum(),
          filesFetchedAhead.sum());
    }
  }

  /**
   * Lookups on {@code table} (as loaded: its current snapshot is "latest") by {@code keyColumns}.
   *
   * @throws IllegalArgumentException naming the column when a key column is not a primitive column
   *     of the table
   */
  public PointLookup(Table table, List<String> keyColumns, LookupCaches caches, Counters counters) {
    this(table, keyColumns, Expressions.alwaysTrue(), caches, counters);
  }

  /**
   * Lookups on {@code table} by {@code keyColumns} that return only the rows {@code filter} keeps
   * (column names match regardless of case).
   *
   * @throws IllegalArgumentException naming the column when a key column is not a primitive column
   *     of the table, or when the filter does not bind to the table's schema
   */
  public PointLookup(
      Table table,
      List<String> keyColumns,
      Expression filter,
      LookupCaches caches,
      Counters counters) {
    this.table = table;
    this.schema = table.schema();
    this.readSchema = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_POSITION));
    if (keyColumns.isEmpty()) {
      throw new IllegalArgumentException(
          "table " + table.name() + ": a lookup needs at least" + " one key column");
    }
    this.key = new ArrayList<>();
    this.keyPositions = new int[keyColumns.size()];
    this.keyComparators = new ArrayList<>();
    List<String> columns = schema.columns().stream().map(Types.NestedField::name).toList();
    for (int i = 0; i < keyColumns.size(); i++) {
      Types.NestedField field = schema.caseInsensitiveFindField(keyColumns.get(i));
      int position = field == null ? -1 : columns.indexOf(field.name());
      if (position < 0 || !field.type().isPrimitiveType()) {
        throw new IllegalArgumentException(
            "table "
                + table.name()
                + " has no top-level"
                + " column '"
                + keyColumns.get(i)
                + "' to look up by; its columns are "
                + columns);
      }
      key.add(field);
      keyPositions[i] = position;
      keyComparators.add(Comparators.forType(field.type().asPrimitiveType()));
    }
    this.keyPartitions = new KeyPartitions(key);
    this.caches = caches;
    this.counters = counters;
    this.nameMapped = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING) != null;
    this.filter = filter;
    boolean all = filter.op() == Expression.Operation.TRUE;
    try {
      this.rowFilter = all ? null : new Evaluator(schema.asStruct(), filter, false);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "table "
              + table.name()
              + ": the lookup filter "
              + filter
              + " does not apply to its columns "
              + columns
              + ": "
              + e.getMessage(),
          e);
    }
    this.internalRows =
        all ? null : ThreadLocal.withInitial(() -> new InternalRecordWrapper(schema.asStruct()));
  }

  /** The table's schema: the rows returned are records of it. */
  public Schema schema() {
    return schema;
  }

  /** The key columns, in the order {@link #lookup} takes their values. */
  public List<Types.NestedField> keyColumns() {
    return List.copyOf(key);
  }

  /**
   * The rows whose key columns hold {@code keyValues} at the snapshot {@code snapshotId} (null: the
   * table's current one). Key values are Iceberg's internal ones (an {@code int} of days for a
   * date, a {@code long} of microseconds for a timestamp, a {@code CharSequence}, a {@code
   * BigDecimal}, a {@code ByteBuffer}); a null value matches nothing, as in SQL.
   *
   * @throws IllegalArgumentException when the snapshot is not in the table's metadata
   */
  public List<Record> lookup(Long snapshotId, List<?> keyValues) {
    counters.probes.increment();
    if (keyValues.size() != key.size()) {
      throw new IllegalArgumentException(
          "table "
              + table.name()
              + ": a lookup by "
              + names()
              + " takes "
              + key.size()
              + " values, got "
              + keyValues.size());
    }
    return lookup(snapshotId, keyValues, 0);
  }

  /**
   * The rows of {@code keyValues} as SQL compares them, from key position {@code from} on: a null
   * or NaN equals nothing, and a float or double zero equals both zeros, which files store (and
   * order) apart, so each is probed.
   */
  private List<Record> lookup(Long snapshotId, List<?> keyValues, int from) {
    for (int i = from; i < keyValues.size(); i++) {
      Object value = keyValues.get(i); // not keyValues.contains(null): List.of(..) throws on it
      if (value == null
          || value instanceof Double d && d.isNaN()
          || value instanceof Float f && f.isNaN()) {
        return List.of();
      }
      if (value instanceof Double d && d == 0.0d || value instanceof Float f && f == 0.0f) {
        List<Record> found = new ArrayList<>();
        for (Object zero : value instanceof Double ? List.of(0.0d, -0.0d) : List.of(0.0f, -0.0f)) {
          List<Object> variant = new ArrayList<>(keyValues);
          variant.set(i, zero);
          found.addAll(lookup(snapshotId, variant, i + 1));
        }
        return found;
      }
    }
    return probe(snapshotId, keyValues);
  }

  /** The rows of a key whose values are all set: none null, NaN or a zero still to expand. */
  private List<Record> probe(Long snapshotId, List<?> keyValues) {
    Snapshot snapshot = snapshotId == null ? table.currentSnapshot() : table.snapshot(snapshotId);
    if (snapshot == null) {
      if (snapshotId != null) {
        throw new IllegalArgumentException(
            "table "
                + table.name()
                + " has no snapshot "
                + snapshotId
                + " (unknown or expired); pin one of its snapshots");
      }
      return List.of();
    }
    List<Record> found = new ArrayList<>(1);
    SnapshotFiles files = last;
    if (files == null || files.snapshotId() != snapshot.snapshotId()) {
      KeyedFiles keyed = caches.keyedFiles(table, snapshot, key, this::keyedFiles);
      files =
          new SnapshotFiles(
              snapshot.snapshotId(),
              keyed,
              rowFilter == null ? null : ruledOutByFiles.get(keyed, this::ruledOut));
      last = files;
    }
    KeyedFiles keyed = files.files();
    boolean[] ruledOut = files.ruledOut();
    long[] lower = keyed.lower();
    long[] upper = keyed.upper();
    long first = lower == null ? 0 : ((Number) keyValues.get(0)).longValue();
    for (int i = 0; i < keyed.files().size(); i++) {
      if (lower != null && (first < lower[i] || first > upper[i])) {
        continue; // an integral key's bounds, compared as primitives: most files end here
      }
      if (ruledOut != null && ruledOut[i]) {
        continue;
      }
      KeyedFile file = keyed.files().get(i);
      // One integral key column: its bounds were just compared as primitives.
      if ((lower == null || key.size() > 1) && !file.mayHold(keyValues, keyComparators)) {
        continue;
      }
      if (!file.unpartitioned()
          && !keyPartitions.mayHold(
              file.task().spec(), file.task().file().partition(), keyValues)) {
        continue;
      }
      counters.filesRead.increment();
      read(file, keyValues, found);
    }
    return found;
  }

  /**
   * Opens the data files of the table's current snapshot that {@code since} did not have (at most
   * {@code max}), as a probe reaching them would: their footers, page indexes and bloom filters are
   * read and kept with the open files; {@code since} -1 stands for an empty table. Nothing when
   * {@code since} is no longer in the table's metadata (every file would look new). Stops when
   * {@code cancelled} says so.
   *
   * @return the files opened
   */
  int fetchAhead(long since, int max, java.util.function.BooleanSupplier cancelled) {
    Snapshot current = table.currentSnapshot();
    Snapshot previous = since < 0 ? null : table.snapshot(since);
    if (current == null
        || since >= 0 && previous == null
        || current.snapshotId() == since
        || nameMapped) {
      return 0;
    }
    KeyedFiles now = caches.keyedFiles(table, current, key, this::keyedFiles);
    java.util.Set<String> known = new java.util.HashSet<>();
    if (previous != null) {
      for (KeyedFile file : caches.keyedFiles(table, previous, key, this::keyedFiles).files()) {
        known.add(file.task().file().location());
      }
    }
    int opened = 0;
    for (KeyedFile file : now.files()) {
      org.apache.iceberg.DataFile data = file.task().file();
      if (opened == max || cancelled.getAsBoolean()) {
        break;
      }
      if (data.format() != FileFormat.PARQUET
          || known.contains(data.location())
          || caches.isOpen(data.location())) {
        continue;
      }
      caches.probeFile(table.io(), data, counters);
      counters.filesFetchedAhead.increment();
      opened++;
    }
    return opened;
  }

  /** The key's equality, and the row filter: what a file must hold a row of to be read. */
  private Expression filter(List<?> keyValues) {
    Expression filter = this.filter;
    for (int i = 0; i < key.size(); i++) {
      filter = Expressions.and(filter, Expressions.equal(key.get(i).name(), keyValues.get(i)));
    }
    return filter;
  }

  /**
   * Which of a snapshot's files hold no row the row filter keeps, by partition or by column bounds:
   * worked out once per snapshot ({@link #ruledOutByFiles}), since the filter is this lookup's own
   * and the files are shared with lookups of other filters.
   */
  private boolean[] ruledOut(KeyedFiles keyed) {
    InclusiveMetricsEvaluator bounds = new InclusiveMetricsEvaluator(schema, filter, false);
    Map<Integer, Evaluator> partitions = new HashMap<>();
    boolean[] ruledOut = new boolean[keyed.files().size()];
    for (int i = 0; i < ruledOut.length; i++) {
      FileScanTask task = keyed.files().get(i).task();
      ruledOut[i] =
          !bounds.eval(task.file())
              || !task.spec().isUnpartitioned() && !partitionMayMatch(task, filter, partitions);
    }
    return ruledOut;
  }

  /** Adds {@code row} (a row of the table schema, live) to {@code found} if the filter keeps it. */
  private void keep(Record row, List<Record> found) {
    if (rowFilter == null || rowFilter.eval(internalRows.get().wrap(row))) {
      found.add(row);
    }
  }

  /**
   * A live data file with its key columns' bounds from the manifest (Iceberg internal values; null
   * where unknown), so that a probe prunes files by comparing values, without binding an expression
   * per probe; and its location, read once (the open files are kept by it, and the data files of
   * scan tasks may build a new string for it on each call).
   */
  record KeyedFile(
      FileScanTask task,
      String location,
      boolean unpartitioned,
      Map<Integer, ?> constants,
      Object[] lower,
      Object[] upper,
      boolean allNull) {
    boolean mayHold(List<?> values, List<Comparator<Object>> order) {
      if (allNull) {
        return false;
      }
      for (int i = 0; i < lower.length; i++) {
        if (lower[i] != null && order.get(i).compare(lower[i], values.get(i)) > 0
            || upper[i] != null && order.get(i).compare(values.get(i), upper[i]) > 0) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * A snapshot's keyed files; when the first key column is integral (int, long, date, time,
   * timestamp), its bounds as longs too, one array each, so that a probe prunes files with
   * primitive comparisons over contiguous memory.
   */
  record KeyedFiles(List<KeyedFile> files, long[] lower, long[] upper) {}

  private KeyedFiles keyedFiles(List<FileScanTask> tasks) {
    List<KeyedFile> files = new ArrayList<>();
    for (FileScanTask task : tasks) {
      Object[] lower = new Object[key.size()];
      Object[] upper = new Object[key.size()];
      boolean allNull = false;
      for (int i = 0; i < key.size(); i++) {
        Types.NestedField field = key.get(i);
        Type.TypeID type = field.type().typeId();
        if (type == Type.TypeID.FLOAT || type == Type.TypeID.DOUBLE) {
          continue; // NaN is outside the bounds: not pruned by them
        }
        lower[i] = bound(task.file().lowerBounds(), field);
        upper[i] = bound(task.file().upperBounds(), field);
        Long values = count(task.file().valueCounts(), field);
        Long nulls = count(task.file().nullValueCounts(), field);
        allNull |= values != null && nulls != null && values.equals(nulls);
      }
      files.add(
          new KeyedFile(
              task,
              task.file().location(),
              task.spec().isUnpartitioned(),
              PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant),
              lower,
              upper,
              allNull));
    }
    Type.TypeID first = key.get(0).type().typeId();
    if (first != Type.TypeID.INTEGER
        && first != Type.TypeID.LONG
        && first != Type.TypeID.DATE
        && first != Type.TypeID.TIME
        && first != Type.TypeID.TIMESTAMP) {
      return new KeyedFiles(List.copyOf(files), null, null);
    }
    long[] lower = new long[files.size()];
    long[] upper = new long[files.size()];
    for (int i = 0; i < files.size(); i++) {
      KeyedFile file = files.get(i);
      lower[i] =
          file.allNull()
              ? Long.MAX_VALUE
              : file.lower()[0] == null ? Long.MIN_VALUE : ((Number) file.lower()[0]).longValue();
      upper[i] =
          file.allNull()
              ? Long.MIN_VALUE
              : file.upper()[0] == null ? Long.MAX_VALUE : ((Number) file.upper()[0]).longValue();
    }
    return new KeyedFiles(List.copyOf(files), lower, upper);
  }

  private static Object bound(Map<Integer, java.nio.ByteBuffer> bounds, Types.NestedField field) {
    java.nio.ByteBuffer bound = bounds == null ? null : bounds.get(field.fieldId());
    return bound == null ? null : Conversions.fromByteBuffer(field.type(), bound);
  }

  private static Long count(Map<Integer, Long> counts, Types.NestedField field) {
    return counts == null ? null : counts.get(field.fieldId());
  }

  private boolean partitionMayMatch(
      FileScanTask task, Expression filter, Map<Integer, Evaluator> evaluators) {
    PartitionSpec spec = task.spec();
    Evaluator evaluator =
        evaluators.computeIfAbsent(
            spec.specId(),
            id ->
                new Evaluator(
                    spec.partitionType(),
                    Projections.inclusive(spec, false).project(filter),
                    false));
    return evaluator.eval(task.file().partition());
  }

  private void read(KeyedFile file, List<?> keyValues, List<Record> found) {
    FileScanTask task = file.task();
    java.util.Optional<ProbeFile> probe =
        task.file().format() == FileFormat.PARQUET && !nameMapped
            ? caches.probeFile(table.io(), task.file(), file.location(), counters)
            : java.util.Optional.empty();
    if (probe.isPresent() && probe.get().canRead(schema, key)) {
      Object[] stored = probe.get().storedKey(schema, key, keyValues);
      if (stored != null) {
        readPages(probe.get(), file, stored, found);
        return;
      }
    }
    InternalRecordWrapper internal = new InternalRecordWrapper(readSchema.asStruct());
    Deletes deletes = null;
    try (CloseableIterable<Record> rows =
        DataFileRows.read(table, task, readSchema, filter(keyValues), counters)) {
      for (Record row : rows) {
        counters.rowsDecoded.increment();
        StructLike values = internal.wrap(row);
        if (!matches(values, keyValues)) {
          continue;
        }
        if (deletes == null) {
          deletes = new Deletes(task);
        }
        long position = (Long) row.getField(MetadataColumns.ROW_POSITION.name());
        if (!deletes.deleted(position) && !deletes.deleted(values)) {
          keep(tableRow(row), found);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + task.file().location(), e);
    }
  }

  /** Reads only the pages of {@code file} that can hold the key. */
  private void readPages(ProbeFile file, KeyedFile keyed, Object[] storedKey, List<Record> found) {
    FileScanTask task = keyed.task();
    List<Long> positions = new ArrayList<>(1);
    List<Record> rows = new ArrayList<>(1);
    try {
      long decoded =
          file.probe(schema, key, storedKey, keyed.constants(), rows, positions, counters);
      if (decoded > 0) { // a warm probe decodes nothing: no shared counter touched
        counters.rowsDecoded.add(decoded);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + task.file().location(), e);
    }
    if (rows.isEmpty()) {
      return;
    }
    Deletes deletes = new Deletes(task);
    InternalRecordWrapper internal = null; // only to match equality deletes
    for (int i = 0; i < rows.size(); i++) {
      if (deletes.deleted(positions.get(i))) {
        continue;
      }
      if (deletes.hasEqualityDeletes()) {
        internal = internal == null ? new InternalRecordWrapper(schema.asStruct()) : internal;
        if (deletes.deleted(internal.wrap(rows.get(i)))) {
          continue;
        }
      }
      keep(rows.get(i), found);
    }
  }

  private boolean matches(StructLike values, List<?> keyValues) {
    for (int i = 0; i < keyPositions.length; i++) {
      Object value = values.get(keyPositions[i], Object.class);
      if (value == null || keyComparators.get(i).compare(value, keyValues.get(i)) != 0) {
        return false;
      }
    }
    return true;
  }

  /** The row without its position column. */
  private Record tableRow(Record row) {
    GenericRecord copy = GenericRecord.create(schema);
    for (int i = 0; i < schema.columns().size(); i++) {
      copy.set(i, row.get(i));
    }
    return copy;
  }

  /** The delete files of one data file, loaded through the caches when first needed. */
  private final class Deletes {
    private final FileScanTask task;
    private PositionDeleteIndex positions;
    private List<DeleteFile> equality;

    Deletes(FileScanTask task) {
      this.task = task;
    }

    /** Whether the row at {@code position} is deleted by position. */
    boolean deleted(long position) {
      load();
      return positions.isDeleted(position);
    }

    boolean hasEqualityDeletes() {
      load();
      return !equality.isEmpty();
    }

    private void load() {
      if (positions == null) {
        List<DeleteFile> positionFiles = new ArrayList<>();
        equality = new ArrayList<>();
        for (DeleteFile file : task.deletes()) {
          (file.content() == FileContent.POSITION_DELETES ? positionFiles : equality).add(file);
        }
        positions =
            positionFiles.isEmpty()
                ? PositionDeleteIndex.empty()
                : caches.positionDeletes(table.io(), positionFiles, task.file().location());
      }
    }

    /** Whether a row with {@code values} (internal values) is deleted by an equality delete. */
    boolean deleted(StructLike values) {
      load();
      for (DeleteFile file : equality) {
        Schema deleteSchema =
            deleteSchemas.computeIfAbsent(
                file.equalityFieldIds(),
                ids -> TypeUtil.select(schema, new java.util.HashSet<>(ids)));
        StructLikeSet keys = caches.equalityDeletes(table.io(), file, deleteSchema);
        if (keys.contains(StructProjection.create(schema, deleteSchema).wrap(values))) {
          return true;
        }
      }
      return false;
    }
  }

  private List<String> names() {
    return key.stream().map(Types.NestedField::name).toList();
  }
}
