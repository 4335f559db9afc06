package io.skade.changelog;

import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.ChangelogOptions.OnMissingHistory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Predicate;
import java.util.TreeSet;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns a window of snapshots {@code (from, to]} of an Iceberg table into its exact changelog,
 * merge-on-read deletes included — the changelog planner of skade.
 *
 * <p>The law it keeps: for every window where {@code from} is an ancestor of {@code to}, applying
 * the emitted changes in order to the table's rows at {@code from} yields exactly its rows at
 * {@code to}, honouring data sequence numbers.
 *
 * <p>How: a row is identified by its data file and position. Iceberg's own scan planning at a
 * snapshot gives each live data file with the delete files that apply to it there (equality
 * deletes by partition, sequence number and column bounds; position deletes and deletion
 * vectors by path). Between two states, only data files that appeared, disappeared or whose
 * applicable deletes changed can hold a change; each is read with the deletes of both states and
 * the live positions are compared: positions live only before are deleted rows (with their full
 * old row), positions live only after are inserted rows. Identical rows deleted and inserted in
 * one step (a file rewritten) cancel. On a primary-key table a delete and an insert of one key
 * are the update pair {@code UPDATE_BEFORE}/{@code UPDATE_AFTER}. Per-snapshot mode does this for
 * every snapshot of the window in commit order ({@code replace} snapshots change nothing);
 * collapsed mode does it once, between {@code from} and {@code to}.
 */
public final class ChangelogReader {
  private static final Logger LOG = LoggerFactory.getLogger(ChangelogReader.class);
  private final Table table;
  private final ChangelogOptions options;
  private final Schema schema;
  private final Schema readSchema;
  private final TableKind kind;
  private final List<String> keyColumns;
  private final List<String> allColumns;
  private final Evaluator filter;

  public ChangelogReader(Table table, ChangelogOptions options) {
    this.table = table;
    this.options = options;
    this.schema = table.schema();
    this.readSchema = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_POSITION));
    this.kind = TableKind.of(schema);
    this.keyColumns = List.copyOf(new TreeSet<>(schema.identifierFieldNames()));
    this.allColumns = schema.columns().stream().map(Types.NestedField::name).toList();
    this.filter = new Evaluator(schema.asStruct(), options.filter(), false);
    if (options.columns() != null) {
      if (options.beforeImage() == BeforeImage.KEY_ONLY
          && !options.columns().containsAll(keyColumns)) {
        throw new IllegalArgumentException("table " + table.name() + ": key-only before-images"
            + " carry the key " + keyColumns + ", so the projection " + options.columns()
            + " must include it; add the key columns or use full before-images");
      }
      for (String column : options.columns()) {
        if (schema.findField(column) == null) {
          throw new IllegalArgumentException("table " + table.name() + " has no column '"
              + column + "' to project; its columns are " + schema.columns().stream()
                  .map(field -> field.name()).toList());
        }
      }
    }
  }

  public TableKind kind() {
    return kind;
  }

  /**
   * The changes of the window {@code (fromExclusive, toInclusive]}, in order.
   *
   * @param fromExclusive the snapshot the window starts after, or null for "before the first
   *     snapshot" (the whole history up to {@code toInclusive})
   */
  public List<ChangeRow> read(Long fromExclusive, long toInclusive) {
    try {
      return readExactly(fromExclusive, toInclusive);
    } catch (MissingHistoryException e) {
      if (options.onMissingHistory() != OnMissingHistory.FULL_RELOAD
          || table.snapshot(toInclusive) == null) {
        throw e;
      }
      LOG.warn("{}; full reload: emitting every row at snapshot {} as an insert",
          e.getMessage(), toInclusive);
      return shape(diff(Map.of(), plan(toInclusive), toInclusive));
    }
  }

  /**
   * The changes of the window as one Arrow batch (see {@link #read}); its columns are the
   * projected ones, its identity keys the identifier fields (or, on a log table or when they are
   * projected away, all columns). The caller closes it.
   */
  public ChangelogBatch readBatch(Long fromExclusive, long toInclusive, BufferAllocator allocator) {
    Schema projected = options.columns() == null ? schema : schema.select(options.columns());
    List<String> keys = keyColumns.stream().allMatch(k -> projected.findField(k) != null)
        ? keyColumns : List.of();
    return ChangelogBatch.of(projected, keys, read(fromExclusive, toInclusive), allocator);
  }

  private List<ChangeRow> readExactly(Long fromExclusive, long toInclusive) {
    List<Snapshot> window = window(fromExclusive, toInclusive);
    List<ChangeRow> changes = new ArrayList<>();
    if (window.isEmpty()) {
      return changes;
    }
    Map<String, FileScanTask> before = fromExclusive == null ? Map.of() : plan(fromExclusive);
    if (options.mode() == Mode.COLLAPSED) {
      changes.addAll(diff(before, plan(toInclusive), toInclusive));
    } else {
      for (Snapshot snapshot : window) {
        Map<String, FileScanTask> after = plan(snapshot.snapshotId());
        if (!DataOperations.REPLACE.equals(snapshot.operation())) {
          changes.addAll(diff(before, after, snapshot.snapshotId()));
        }
        before = after;
      }
    }
    return shape(changes);
  }

  /** The snapshots of the window, oldest first, after checking it can be read exactly. */
  private List<Snapshot> window(Long from, long to) {
    Snapshot last = table.snapshot(to);
    if (last == null) {
      throw new IllegalArgumentException("table " + table.name() + " has no snapshot " + to
          + " (unknown or expired); read a window ending at a snapshot the table still has");
    }
    if (from != null && from == to) {
      return List.of();
    }
    if (from != null && table.snapshot(from) == null) {
      throw new MissingHistoryException("table " + table.name() + ": the window's start,"
          + " snapshot " + from + ", was expired (or never existed), so the rows it started"
          + " from are unknown; start at a snapshot the table still has, or set"
          + " on-missing-history to full-reload", null);
    }
    // Walk back from the end: the start must be met before the first snapshot, and every
    // snapshot on the way must still exist.
    Deque<Snapshot> window = new ArrayDeque<>();
    for (Snapshot s = last; from == null || s.snapshotId() != from; ) {
      window.addFirst(s);
      Long parent = s.parentId();
      if (parent == null) {
        if (from != null) {
          throw new IllegalArgumentException("table " + table.name() + ": snapshot " + from
              + " is not an ancestor of snapshot " + to + ", so no changelog leads from one to"
              + " the other (a rollback or another branch lies between); choose a window along"
              + " one history");
        }
        break;
      }
      s = table.snapshot(parent);
      if (s == null) {
        throw new MissingHistoryException("table " + table.name() + ": snapshot " + parent
            + " inside the window was expired, so its changes are gone; read a window starting"
            + " at or after snapshot " + window.getFirst().snapshotId() + ", or set"
            + " on-missing-history to full-reload", null);
      }
    }
    for (Snapshot s : window) {
      Schema at = table.schemas().get(s.schemaId());
      if (at != null && !at.identifierFieldIds().equals(schema.identifierFieldIds())) {
        throw new IllegalStateException("table " + table.name() + ": snapshot " + s.snapshotId()
            + " has identifier fields " + at.identifierFieldNames() + ", the table now has "
            + schema.identifierFieldNames() + "; a changelog cannot pair rows across that"
            + " change — read windows on either side of it");
      }
    }
    return new ArrayList<>(window);
  }

  /** Every live data file at a snapshot, with the delete files that apply to it there. */
  private Map<String, FileScanTask> plan(long snapshotId) {
    Map<String, FileScanTask> tasks = new HashMap<>();
    try (CloseableIterable<FileScanTask> planned =
        table.newScan().useSnapshot(snapshotId).planFiles()) {
      for (FileScanTask task : planned) {
        tasks.put(task.file().location(), task);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot plan snapshot " + snapshotId + " of " + table.name(), e);
    } catch (NotFoundException e) {
      throw missing(snapshotId, e);
    }
    return tasks;
  }

  /** The changes from one state to the next: rows live only before, then only after. */
  private List<ChangeRow> diff(Map<String, FileScanTask> before, Map<String, FileScanTask> after,
      long snapshotId) {
    Set<String> affected = new TreeSet<>();
    for (Map.Entry<String, FileScanTask> e : before.entrySet()) {
      FileScanTask next = after.get(e.getKey());
      if (next == null || !deletePaths(next).equals(deletePaths(e.getValue()))) {
        affected.add(e.getKey());
      }
    }
    for (String path : after.keySet()) {
      if (!before.containsKey(path)) {
        affected.add(path);
      }
    }
    List<Record> deleted = new ArrayList<>();
    List<Record> inserted = new ArrayList<>();
    for (String path : affected) {
      FileScanTask old = before.get(path);
      FileScanTask now = after.get(path);
      if (now == null) {
        deleted.addAll(liveRows(old, snapshotId));           // the file was removed
      } else if (old == null) {
        inserted.addAll(liveRows(now, snapshotId));          // the file was added
      } else {                                              // its deletes changed
        compare(old, now, snapshotId, deleted, inserted);
      }
    }
    cancelIdentical(deleted, inserted);
    return pair(deleted, inserted, snapshotId);
  }

  private static Set<String> deletePaths(FileScanTask task) {
    Set<String> paths = new HashSet<>();
    task.deletes().forEach(delete -> paths.add(delete.location()));
    return paths;
  }

  /**
   * One data file under two states' deletes: rows live before only are deleted, rows live after
   * only are inserted. The file is read once, without deletes, and each row tested against both
   * states' position and equality deletes (read twice, filtered, only when the two states need
   * different columns for their deletes).
   */
  private void compare(FileScanTask old, FileScanTask now, long snapshotId, List<Record> deleted,
      List<Record> inserted) {
    GenericDeleteFilter before = new GenericDeleteFilter(table.io(), old, schema, readSchema);
    GenericDeleteFilter after = new GenericDeleteFilter(table.io(), now, schema, readSchema);
    Schema required = before.requiredSchema();
    if (!required.sameSchema(after.requiredSchema())) {
      Map<Long, Record> oldRows = new LinkedHashMap<>();
      scan(old, snapshotId, readSchema, oldRows::put);
      Map<Long, Record> newRows = new LinkedHashMap<>();
      scan(now, snapshotId, readSchema, newRows::put);
      oldRows.forEach((position, row) -> {
        if (!newRows.containsKey(position)) {
          deleted.add(row);
        }
      });
      newRows.forEach((position, row) -> {
        if (!oldRows.containsKey(position)) {
          inserted.add(row);
        }
      });
      return;
    }
    Predicate<Record> keptBefore = before.eqDeletedRowFilter();
    Predicate<Record> keptAfter = after.eqDeletedRowFilter();
    PositionDeleteIndex positionsBefore = before.deletedRowPositions();
    PositionDeleteIndex positionsAfter = after.deletedRowPositions();
    try (CloseableIterable<Record> records = open(now, required)) {
      for (Record record : records) {
        long position = (Long) record.getField(MetadataColumns.ROW_POSITION.name());
        boolean liveBefore = (positionsBefore == null || !positionsBefore.isDeleted(position))
            && keptBefore.test(record);
        boolean liveAfter = (positionsAfter == null || !positionsAfter.isDeleted(position))
            && keptAfter.test(record);
        if (liveBefore != liveAfter) {
          (liveBefore ? deleted : inserted).add(copy(record));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + now.file().location(), e);
    } catch (NotFoundException e) {
      throw missing(snapshotId, e);
    }
  }

  /** The live rows of a task's data file under its deletes, when positions do not matter. */
  private List<Record> liveRows(FileScanTask task, long snapshotId) {
    List<Record> rows = new ArrayList<>();
    scan(task, snapshotId, schema, (position, row) -> rows.add(row));
    return rows;
  }

  /**
   * Reads a data file's live rows (requesting {@code requested}, which may add the row position)
   * and hands each on as a row of the table schema — the record itself when the read added no
   * column, a copy otherwise.
   */
  private void scan(FileScanTask task, long snapshotId, Schema requested, BiConsumer<Long, Record> sink) {
    GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, schema, requested);
    Schema required = deletes.requiredSchema();
    boolean exact = required.columns().size() == schema.columns().size();
    boolean positions = required.findField(MetadataColumns.ROW_POSITION.fieldId()) != null;
    try (CloseableIterable<Record> records = deletes.filter(open(task, required))) {
      for (Record record : records) {
        Record row = exact ? record : copy(record);
        sink.accept(positions ? (Long) record.getField(MetadataColumns.ROW_POSITION.name()) : null,
            row);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + task.file().location(), e);
    } catch (NotFoundException e) {
      throw missing(snapshotId, e);
    }
  }

  /**
   * A task's data file, every row, in {@code required}; files written without field ids
   * (imported ones) are read by the table's name mapping.
   */
  private CloseableIterable<Record> open(FileScanTask task, Schema required) {
    if (task.file().format() != FileFormat.PARQUET) {
      throw new UnsupportedOperationException("table " + table.name() + ": data file "
          + task.file().location() + " is " + task.file().format() + "; skade's changelog reads"
          + " Parquet data files");
    }
    Map<Integer, ?> constants =
        PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant);
    Parquet.ReadBuilder read = Parquet.read(table.io().newInputFile(task.file().location()))
        .project(required)
        .createReaderFunc(fileSchema ->
            GenericParquetReaders.buildReader(required, fileSchema, constants));
    String mapping = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    return mapping == null ? read.build() : read.withNameMapping(NameMappingParser.fromJson(mapping)).build();
  }

  /** The table-schema columns of a record read with extra ones (the row position). */
  private Record copy(Record record) {
    GenericRecord row = GenericRecord.create(schema);
    for (int i = 0; i < schema.columns().size(); i++) {
      row.set(i, record.get(i)); // the requested columns come first, in schema order
    }
    return row;
  }

  private MissingHistoryException missing(long snapshotId, RuntimeException cause) {
    return new MissingHistoryException("table " + table.name() + ": a file needed for the"
        + " changes of snapshot " + snapshotId + " is gone (" + cause.getMessage() + "); its"
        + " history was expired or removed — read a later window, or set on-missing-history to"
        + " full-reload", cause);
  }

  /** A row deleted and inserted unchanged in one step (its file was rewritten) is no change. */
  private void cancelIdentical(List<Record> deleted, List<Record> inserted) {
    if (deleted.isEmpty() || inserted.isEmpty()) {
      return;
    }
    Map<List<Object>, Integer> insertedCounts = new HashMap<>();
    inserted.forEach(row -> insertedCounts.merge(identity(row, allColumns), 1, Integer::sum));
    Map<List<Object>, Integer> cancelled = new HashMap<>();
    for (Iterator<Record> it = deleted.iterator(); it.hasNext(); ) {
      List<Object> row = identity(it.next(), allColumns);
      Integer count = insertedCounts.get(row);
      if (count != null && count > 0) {
        insertedCounts.put(row, count - 1);
        cancelled.merge(row, 1, Integer::sum);
        it.remove();
      }
    }
    for (Iterator<Record> it = inserted.iterator(); it.hasNext(); ) {
      List<Object> row = identity(it.next(), allColumns);
      Integer count = cancelled.get(row);
      if (count != null && count > 0) {
        cancelled.put(row, count - 1);
        it.remove();
      }
    }
  }

  /**
   * The values of {@code columns} as a list that compares by value: binary values ({@code
   * byte[]} of fixed columns) are wrapped, since arrays compare by identity.
   */
  private static List<Object> identity(Record row, List<String> columns) {
    List<Object> values = new ArrayList<>(columns.size());
    for (String column : columns) {
      Object value = row.getField(column);
      values.add(value instanceof byte[] bytes ? ByteBuffer.wrap(bytes) : value);
    }
    return values;
  }

  /** Update pairs by key on a primary-key table (each before its after), then deletes, inserts. */
  private List<ChangeRow> pair(List<Record> deleted, List<Record> inserted, long snapshotId) {
    List<ChangeRow> changes = new ArrayList<>(deleted.size() + inserted.size());
    if (kind == TableKind.PRIMARY_KEY) {
      Map<List<Object>, Deque<Record>> insertsByKey = new LinkedHashMap<>();
      inserted.forEach(row -> insertsByKey.computeIfAbsent(key(row), k -> new ArrayDeque<>()).add(row));
      List<Record> unpaired = new ArrayList<>();
      for (Record old : deleted) {
        Deque<Record> candidates = insertsByKey.get(key(old));
        if (candidates == null || candidates.isEmpty()) {
          unpaired.add(old);
        } else {
          changes.add(new ChangeRow(ChangeType.UPDATE_BEFORE, old, snapshotId));
          changes.add(new ChangeRow(ChangeType.UPDATE_AFTER, candidates.poll(), snapshotId));
        }
      }
      unpaired.forEach(row -> changes.add(new ChangeRow(ChangeType.DELETE, row, snapshotId)));
      insertsByKey.values().forEach(rest -> rest.forEach(
          row -> changes.add(new ChangeRow(ChangeType.INSERT, row, snapshotId))));
    } else {
      deleted.forEach(row -> changes.add(new ChangeRow(ChangeType.DELETE, row, snapshotId)));
      inserted.forEach(row -> changes.add(new ChangeRow(ChangeType.INSERT, row, snapshotId)));
    }
    return changes;
  }

  private List<Object> key(Record row) {
    return identity(row, keyColumns);
  }

  /** The row filter (pairs half-kept become a delete or an insert), before-images, projection. */
  private List<ChangeRow> shape(List<ChangeRow> changes) {
    InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct());
    Schema projected = options.columns() == null ? schema : schema.select(options.columns());
    List<ChangeRow> shaped = new ArrayList<>(changes.size());
    for (int i = 0; i < changes.size(); i++) {
      ChangeRow change = changes.get(i);
      boolean keep = filter.eval(internal.wrap(change.row()));
      ChangeType type = change.type();
      if (type == ChangeType.UPDATE_BEFORE || type == ChangeType.UPDATE_AFTER) {
        ChangeRow partner = changes.get(type == ChangeType.UPDATE_BEFORE ? i + 1 : i - 1);
        if (!filter.eval(internal.wrap(partner.row()))) {
          type = type == ChangeType.UPDATE_BEFORE ? ChangeType.DELETE : ChangeType.INSERT;
        }
      }
      if (!keep) {
        continue;
      }
      Record row = change.row();
      if (type.removes() && options.beforeImage() == BeforeImage.KEY_ONLY && !keyColumns.isEmpty()) {
        row = keyOnly(row, projected);
      } else if (projected != schema) {
        row = select(row, projected);
      }
      shaped.add(new ChangeRow(type, row, change.snapshotId()));
    }
    return shaped;
  }

  /** A before-image cut to its key: the projected columns, all but the key fields null. */
  private Record keyOnly(Record row, Schema projected) {
    GenericRecord key = GenericRecord.create(projected);
    keyColumns.forEach(column -> key.setField(column, row.getField(column)));
    return key;
  }

  private static Record select(Record row, Schema target) {
    GenericRecord selected = GenericRecord.create(target);
    target.columns().forEach(field -> selected.setField(field.name(), row.getField(field.name())));
    return selected;
  }
}
