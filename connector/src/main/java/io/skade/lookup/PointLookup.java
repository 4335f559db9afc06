package io.skade.lookup;

import io.skade.changelog.DataFileRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.GenericRecord;
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
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;
import org.apache.iceberg.util.StructLikeSet;
import org.apache.iceberg.util.StructProjection;

/**
 * The current rows of an Iceberg table for a key, merge-on-read, without copying the table: a
 * probe reads only the data files that can hold the key and, in them, only the row groups that
 * can. Files are pruned by partition and by the column bounds in the manifests; row groups by
 * their statistics, dictionaries and Parquet bloom filters. Rows are then matched on the key and
 * checked against the file's position deletes (or deletion vector) and the equality deletes
 * committed after it, as a scan of the snapshot would.
 *
 * <p>When the key columns are the table's identifier fields a probe returns at most one row;
 * any other columns may be the key too, returning every row that has those values. Thread-safe;
 * what it keeps between probes lives in {@link LookupCaches}.
 */
public final class PointLookup {
  /**
   * Table properties that make data files cheap to probe: pages of at most 250 rows (the
   * unit a probe reads and decodes per column), dictionaries of at most 32 KB (a column whose
   * values do not fit is stored plain, so a probe does not read a large dictionary) and bloom
   * filters of at most 64 KB (Parquet sizes a filter to its maximum; the default 1 MB would be
   * read and kept per row group). Tables skade creates with a primary key get them.
   */
  public static final Map<String, String> LOOKUP_FILE_PROPERTIES = Map.of(
      TableProperties.PARQUET_PAGE_ROW_LIMIT, "250",
      TableProperties.PARQUET_DICT_SIZE_BYTES, "32768",
      TableProperties.PARQUET_BLOOM_FILTER_MAX_BYTES, "65536");

  private final Table table;
  private final Schema schema;
  private final Schema readSchema;
  private final List<Types.NestedField> key;
  private final int[] keyPositions;
  private final List<Comparator<Object>> keyComparators;
  private final LookupCaches caches;
  private final Counters counters;

  /** Cumulative counters, shared by the lookups of one function across table versions. */
  public static final class Counters implements DataFileRows.ReadListener {
    private final LongAdder probes = new LongAdder();
    private final LongAdder bytesRead = new LongAdder();
    private final LongAdder readCalls = new LongAdder();
    private final LongAdder fileOpens = new LongAdder();
    private final LongAdder rowsDecoded = new LongAdder();
    private final LongAdder filesRead = new LongAdder();

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
      return new LookupStats(probes.sum(), bytesRead.sum(), readCalls.sum(), fileOpens.sum(),
          rowsDecoded.sum(), filesRead.sum());
    }
  }

  /**
   * Lookups on {@code table} (as loaded: its current snapshot is "latest") by {@code keyColumns}.
   *
   * @throws IllegalArgumentException naming the column when a key column is not a primitive
   *     column of the table
   */
  public PointLookup(Table table, List<String> keyColumns, LookupCaches caches,
      Counters counters) {
    this.table = table;
    this.schema = table.schema();
    this.readSchema = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_POSITION));
    if (keyColumns.isEmpty()) {
      throw new IllegalArgumentException("table " + table.name() + ": a lookup needs at least"
          + " one key column");
    }
    this.key = new ArrayList<>();
    this.keyPositions = new int[keyColumns.size()];
    this.keyComparators = new ArrayList<>();
    List<String> columns = schema.columns().stream().map(Types.NestedField::name).toList();
    for (int i = 0; i < keyColumns.size(); i++) {
      Types.NestedField field = schema.caseInsensitiveFindField(keyColumns.get(i));
      int position = field == null ? -1 : columns.indexOf(field.name());
      if (position < 0 || !field.type().isPrimitiveType()) {
        throw new IllegalArgumentException("table " + table.name() + " has no top-level"
            + " column '" + keyColumns.get(i) + "' to look up by; its columns are " + columns);
      }
      key.add(field);
      keyPositions[i] = position;
      keyComparators.add(Comparators.forType(field.type().asPrimitiveType()));
    }
    this.caches = caches;
    this.counters = counters;
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
   * The rows whose key columns hold {@code keyValues} at the snapshot {@code snapshotId} (null:
   * the table's current one). Key values are Iceberg's internal ones (an {@code int} of days for
   * a date, a {@code long} of microseconds for a timestamp, a {@code CharSequence}, a {@code
   * BigDecimal}, a {@code ByteBuffer}); a null value matches nothing, as in SQL.
   *
   * @throws IllegalArgumentException when the snapshot is not in the table's metadata
   */
  public List<Record> lookup(Long snapshotId, List<?> keyValues) {
    counters.probes.increment();
    if (keyValues.size() != key.size()) {
      throw new IllegalArgumentException("table " + table.name() + ": a lookup by " + names()
          + " takes " + key.size() + " values, got " + keyValues.size());
    }
    for (Object value : keyValues) {
      if (value == null) { // not keyValues.contains(null): List.of(..) throws on it
        return List.of();
      }
    }
    Snapshot snapshot = snapshotId == null ? table.currentSnapshot()
        : table.snapshot(snapshotId);
    if (snapshot == null) {
      if (snapshotId != null) {
        throw new IllegalArgumentException("table " + table.name() + " has no snapshot "
            + snapshotId + " (unknown or expired); pin one of its snapshots");
      }
      return List.of();
    }
    Expression filter = Expressions.alwaysTrue();
    for (int i = 0; i < key.size(); i++) {
      filter = Expressions.and(filter, Expressions.equal(key.get(i).name(), keyValues.get(i)));
    }
    InclusiveMetricsEvaluator bounds = new InclusiveMetricsEvaluator(schema, filter, false);
    Map<Integer, Evaluator> partitions = new HashMap<>();
    InternalRecordWrapper internal = new InternalRecordWrapper(readSchema.asStruct());
    List<Record> found = new ArrayList<>(1);
    for (FileScanTask task : caches.files(table, snapshot)) {
      if (!partitionMayMatch(task, filter, partitions) || !bounds.eval(task.file())) {
        continue;
      }
      counters.filesRead.increment();
      read(task, filter, keyValues, internal, found);
    }
    return found;
  }

  private boolean partitionMayMatch(FileScanTask task, Expression filter,
      Map<Integer, Evaluator> evaluators) {
    PartitionSpec spec = task.spec();
    if (spec.isUnpartitioned()) {
      return true;
    }
    Evaluator evaluator = evaluators.computeIfAbsent(spec.specId(), id -> new Evaluator(
        spec.partitionType(), Projections.inclusive(spec, false).project(filter), false));
    return evaluator.eval(task.file().partition());
  }

  private void read(FileScanTask task, Expression filter, List<?> keyValues,
      InternalRecordWrapper internal, List<Record> found) {
    java.util.Optional<ProbeFile> probe = task.file().format() == FileFormat.PARQUET
        && table.properties().get(TableProperties.DEFAULT_NAME_MAPPING) == null
        ? caches.probeFile(table.io(), task.file(), counters) : java.util.Optional.empty();
    if (probe.isPresent() && probe.get().canRead(schema)) {
      readPages(probe.get(), task, filter, keyValues, found);
      return;
    }
    Deletes deletes = null;
    try (CloseableIterable<Record> rows =
        DataFileRows.read(table, task, readSchema, filter, counters)) {
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
        if (!deletes.deleted(position, values)) {
          found.add(tableRow(row));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + task.file().location(), e);
    }
  }

  /** Reads only the pages of {@code file} that can hold the key. */
  private void readPages(ProbeFile file, FileScanTask task, Expression filter, List<?> keyValues,
      List<Record> found) {
    List<Long> positions = new ArrayList<>();
    List<Record> rows;
    try {
      rows = file.candidates(schema, filter, ProbeFile.pagePredicate(key, keyValues, file),
          new ProbeFile.Key(keyPositions, keyValues, keyComparators),
          PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant),
          positions, counters);
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + task.file().location(), e);
    }
    counters.rowsDecoded.add(file.decoded);
    InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct());
    Deletes deletes = null;
    for (int i = 0; i < rows.size(); i++) {
      if (deletes == null) {
        deletes = new Deletes(task);
      }
      if (!deletes.deleted(positions.get(i), internal.wrap(rows.get(i)))) {
        found.add(rows.get(i));
      }
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

    boolean deleted(long position, StructLike values) {
      if (positions == null) {
        List<DeleteFile> positionFiles = new ArrayList<>();
        equality = new ArrayList<>();
        for (DeleteFile file : task.deletes()) {
          (file.content() == FileContent.POSITION_DELETES ? positionFiles : equality).add(file);
        }
        positions = positionFiles.isEmpty() ? PositionDeleteIndex.empty()
            : caches.positionDeletes(table.io(), positionFiles, task.file().location());
      }
      if (positions.isDeleted(position)) {
        return true;
      }
      for (DeleteFile file : equality) {
        StructLikeSet keys = caches.equalityDeletes(table.io(), file, schema);
        Schema deleteSchema = TypeUtil.select(schema,
            new java.util.HashSet<>(file.equalityFieldIds()));
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
