package io.skade.changelog;

import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.ChangelogOptions.OnMissingHistory;
import io.skade.scan.DataFileRows;
import io.skade.scan.FileFetch;
import io.skade.scan.FileSlice;
import io.skade.scan.PartitionFilter;
import io.skade.scan.RecordDecoder;
import io.skade.scan.WindowFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeSet;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
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
 * <p>How: a row is identified by its data file and position. {@link WindowFiles} gives, at each
 * snapshot of the window, every live data file with the delete files that apply to it there, by
 * Iceberg's planning rules, from manifests read once per window. Between two states, only data
 * files that appeared, disappeared or whose applicable deletes changed can hold a change; each is
 * read once and its rows tested against the deletes of both states: rows live only before leave
 * (with their full old row), rows live only after arrive. An arriving row identical to a leaving
 * one (a file rewritten) cancels it; on a primary-key table one sharing a leaving row's key pairs
 * with it as {@code UPDATE_BEFORE}/{@code UPDATE_AFTER}. Per-snapshot mode does this for every
 * snapshot of the window in commit order ({@code replace} snapshots change nothing); collapsed mode
 * does it once, between {@code from} and {@code to}. A step over plain appends skips the states:
 * its changes are the rows of the files added, found from the manifests those commits wrote, so a
 * streaming append costs what it added, not what the table holds. Arriving rows are streamed, never
 * held.
 *
 * <p>A row filter ({@link ChangelogOptions#filter}) also rules out whole files by partition ({@link
 * PartitionFilter}): their manifests, data files and delete files are not read, in any state of the
 * window, so they neither add nor remove rows. Rows of the files kept are still tested one by one.
 * A {@link FileSlice} ({@link ChangelogOptions#slice}) leaves out data files in the same way, by
 * their ordering unit: the changes of the rows the slice's files hold (or held) are the read's
 * changes.
 */
public final class ChangelogReader {
  private static final Logger LOG = LoggerFactory.getLogger(ChangelogReader.class);

  /** How many steps of plain appends ahead of the current one have their files fetched. */
  private static final int LOOKAHEAD_STEPS = 2 * FileFetch.MAX_IN_FLIGHT;

  /** Column names in the filter match regardless of case, on rows and partitions alike. */
  private static final boolean CASE_SENSITIVE = false;

  private final Table table;
  private final ChangelogOptions options;
  private final Schema schema;
  private final Schema readSchema;
  private final TableKind kind;
  private final List<String> keyColumns;
  private final List<String> allColumns;
  private final Evaluator filter;
  private final boolean filterAll;

  /** The filter on files: those of partitions it rules out are not read at all. */
  private final PartitionFilter partitions;

  private final InternalRecordWrapper internal;
  private final Schema projected;

  /** A batch's identity keys: the identifier fields, or all columns when projected away. */
  private final List<String> batchKeys;

  /** The key columns and the row position: what a key-only read of a changed file needs. */
  private final Schema keyReadSchema;

  private final GenericRecord template;
  private final String schemaJson;
  private final Map<Integer, String> specJson = new HashMap<>();

  /** What newly added equality deletes can delete, for pruning the row groups read. */
  private final EqualityDeleteKeys deletedKeys;

  /** Per plain-append snapshot, the data files it added, as a planner found them. */
  private final Map<Long, List<DataFile>> knownAppends;

  /** What decodes the rows of data files, or null for Iceberg's generic records. */
  private final RecordDecoder decoder;

  private long rowsScanned;
  private final LongAdder dataFilesRead = new LongAdder();

  public ChangelogReader(Table table, ChangelogOptions options) {
    this(table, options, Map.of());
  }

  /**
   * A reader that takes the added files of the plain-append snapshots in {@code knownAppends}
   * (every data file each added, as {@link WindowFiles#appendedBy} gives them, such as a {@link
   * PlannedWindow} carries) rather than reading their manifests.
   */
  public ChangelogReader(
      Table table, ChangelogOptions options, Map<Long, List<DataFile>> knownAppends) {
    this(table, options, knownAppends, null);
  }

  /**
   * As {@link #ChangelogReader(Table, ChangelogOptions, Map)}, the rows of data files decoded by
   * {@code decoder} (into a query engine's own rows; null: Iceberg's generic records).
   */
  public ChangelogReader(
      Table table,
      ChangelogOptions options,
      Map<Long, List<DataFile>> knownAppends,
      RecordDecoder decoder) {
    this.decoder = decoder;
    this.knownAppends = Map.copyOf(knownAppends);
    this.table = table;
    this.options = options;
    this.schema = table.schema();
    this.readSchema = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_POSITION));
    this.kind = TableKind.of(schema);
    this.keyColumns = List.copyOf(new TreeSet<>(schema.identifierFieldNames()));
    this.allColumns = schema.columns().stream().map(Types.NestedField::name).toList();
    this.filter = new Evaluator(schema.asStruct(), options.filter(), CASE_SENSITIVE);
    this.filterAll = options.filter().op() == Expression.Operation.TRUE;
    this.partitions = new PartitionFilter(table.specs(), schema, options.filter(), CASE_SENSITIVE);
    this.internal = new InternalRecordWrapper(schema.asStruct());
    this.keyReadSchema =
        TypeUtil.join(schema.select(keyColumns), new Schema(MetadataColumns.ROW_POSITION));
    this.template = GenericRecord.create(schema);
    this.deletedKeys = new EqualityDeleteKeys(schema);
    this.schemaJson = SchemaParser.toJson(schema);
    if (options.columns() != null) {
      if (options.beforeImage() == BeforeImage.KEY_ONLY
          && !options.columns().containsAll(keyColumns)) {
        throw new IllegalArgumentException(
            "table "
                + table.name()
                + ": key-only before-images"
                + " carry the key "
                + keyColumns
                + ", so the projection "
                + options.columns()
                + " must include it; add the key columns or use full before-images");
      }
      for (String column : options.columns()) {
        if (schema.findField(column) == null) {
          throw new IllegalArgumentException(
              "table "
                  + table.name()
                  + " has no column '"
                  + column
                  + "' to project; its columns are "
                  + schema.columns().stream().map(field -> field.name()).toList());
        }
      }
    }
    this.projected = options.columns() == null ? schema : schema.select(options.columns());
    this.batchKeys =
        keyColumns.stream().allMatch(k -> projected.findField(k) != null) ? keyColumns : List.of();
  }

  /**
   * {@code base}'s set-up, which depends only on the schema, specs and options, for another read.
   */
  private ChangelogReader(
      ChangelogReader base,
      Table table,
      ChangelogOptions options,
      Map<Long, List<DataFile>> knownAppends) {
    this.table = table;
    this.options = options;
    this.knownAppends = Map.copyOf(knownAppends);
    this.decoder = base.decoder;
    this.schema = base.schema;
    this.readSchema = base.readSchema;
    this.kind = base.kind;
    this.keyColumns = base.keyColumns;
    this.allColumns = base.allColumns;
    this.filter = base.filter;
    this.filterAll = base.filterAll;
    this.partitions = base.partitions;
    this.internal = base.internal;
    this.keyReadSchema = base.keyReadSchema;
    this.template = base.template;
    this.deletedKeys = base.deletedKeys;
    this.schemaJson = base.schemaJson;
    this.projected = base.projected;
    this.batchKeys = base.batchKeys;
  }

  /**
   * A reader of {@code table} with {@code options} (and {@code knownAppends}, as above): this one's
   * set-up reused when the table has its schema and partition specs and the options differ from its
   * own by their slice only, so that a stream of small windows pays it once; a new reader
   * otherwise. Either is used on one thread at a time, as this one is.
   */
  public ChangelogReader reading(
      Table table, ChangelogOptions options, Map<Long, List<DataFile>> knownAppends) {
    Schema other = table.schema();
    boolean same =
        other.schemaId() == schema.schemaId()
            && other.sameSchema(schema)
            && table.specs().equals(this.table.specs())
            && options.withSlice(this.options.slice()).equals(this.options);
    return same
        ? new ChangelogReader(this, table, options, knownAppends)
        : new ChangelogReader(table, options, knownAppends, decoder);
  }

  /**
   * Rows decoded from data files by this reader so far: what manifest bounds and bloom filters
   * spared shows as rows not scanned.
   */
  public long rowsScanned() {
    return rowsScanned;
  }

  /** Data files this reader has read so far, fetched ahead or opened in place. */
  public long dataFilesRead() {
    return dataFilesRead.sum();
  }

  /** The schema of the rows it emits: the table's, or its projection. */
  public Schema schema() {
    return projected;
  }

  /** Whether the table has identifier fields, which decides how changes pair up. */
  public TableKind kind() {
    return kind;
  }

  /**
   * The changes of the window {@code (fromExclusive, toInclusive]}, in order, as one list. With
   * {@link OnMissingHistory#FULL_RELOAD}, history found missing at any point gives the full reload
   * instead.
   *
   * @param fromExclusive the snapshot the window starts after, or null for "before the first
   *     snapshot" (the whole history up to {@code toInclusive})
   */
  public List<ChangeRow> read(Long fromExclusive, long toInclusive) {
    try {
      return collect(open(fromExclusive, toInclusive));
    } catch (MissingHistoryException e) {
      if (!reloads(e, toInclusive)) {
        throw e;
      }
      return collect(fullReload(toInclusive));
    }
  }

  /**
   * The changes of the window as a stream that holds only the rows one snapshot deletes (to pair
   * them with its inserts), never the inserted rows. Everything that can fail before the first
   * change (the window's snapshots and manifests) is checked here, where {@link
   * OnMissingHistory#FULL_RELOAD} applies; a data file found missing later fails the stream. The
   * caller closes it.
   */
  public CloseableIterator<ChangeRow> changes(Long fromExclusive, long toInclusive) {
    try {
      return open(fromExclusive, toInclusive);
    } catch (MissingHistoryException e) {
      if (!reloads(e, toInclusive)) {
        throw e;
      }
      return fullReload(toInclusive);
    }
  }

  /**
   * The changes that take the table's rows at snapshot {@code from} to its rows at snapshot {@code
   * to} in one step, for any two snapshots the table still has, whatever lies between them — the
   * changelog of a commit that moved the table's head off its history, such as a rollback (where
   * {@code to} is an ancestor of {@code from}) or a branch made current. Rows live only at {@code
   * from} leave, rows live only at {@code to} arrive, one identical to a leaving row cancels it,
   * and on a primary-key table a key in both pairs as an update; each change carries {@code to}.
   * The caller closes it.
   */
  public CloseableIterator<ChangeRow> changesBetween(long from, long to) {
    Snapshot before = table.snapshot(from);
    Snapshot after = table.snapshot(to);
    if (before == null || after == null) {
      throw new MissingHistoryException(
          "table "
              + table.name()
              + ": snapshot "
              + (before == null ? from : to)
              + " was expired (or never existed), so the rows of its state are unknown and no"
              + " changelog leads from snapshot "
              + from
              + " to snapshot "
              + to,
          null);
    }
    // A span without its snapshots compares the two states, never reads appended files.
    return changes(before, List.of(new Span(after, null)), to);
  }

  /**
   * The changes of the window as Arrow batches of at most {@code maxRows} changes (one more to keep
   * an update pair together); see {@link #readBatch} for their columns and keys. The caller closes
   * each batch and the iterator.
   */
  public CloseableIterator<ChangelogBatch> readBatches(
      Long fromExclusive, long toInclusive, BufferAllocator allocator, int maxRows) {
    requirePositive(maxRows);
    return batches(changes(fromExclusive, toInclusive), allocator, maxRows);
  }

  /**
   * Every row at {@code snapshotId} (that the filter keeps) as an insert: the rows a consumer
   * starts from before it follows the changes after that snapshot. Only that snapshot's files are
   * read, so it works however much history was expired. The caller closes it.
   */
  public CloseableIterator<ChangeRow> snapshotChanges(long snapshotId) {
    return snapshotChanges(snapshotId, Long.MAX_VALUE);
  }

  /**
   * At most {@code limit} of the rows {@link #snapshotChanges(long)} gives, for a caller that needs
   * no more (a SQL {@code LIMIT}): it ends there, and fetches data files ahead only as far as their
   * record counts reach the limit, so the files after those are not read.
   */
  public CloseableIterator<ChangeRow> snapshotChanges(long snapshotId, long limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("a limit of rows is positive, got " + limit);
    }
    if (table.snapshot(snapshotId) == null) {
      throw new IllegalArgumentException(
          "table "
              + table.name()
              + " has no snapshot "
              + snapshotId
              + " (unknown or expired); read the rows of a snapshot it still has");
    }
    Changes rows = fullReload(snapshotId);
    rows.limit = limit;
    return rows;
  }

  private static void requirePositive(int maxRows) {
    if (maxRows <= 0) {
      throw new IllegalArgumentException(
          "a changelog batch holds at least one change, got " + maxRows + " rows per batch");
    }
  }

  private CloseableIterator<ChangelogBatch> batches(
      CloseableIterator<ChangeRow> changes, BufferAllocator allocator, int maxRows) {
    return new CloseableIterator<>() {
      @Override
      public boolean hasNext() {
        return changes.hasNext();
      }

      @Override
      public ChangelogBatch next() {
        List<ChangeRow> rows = new ArrayList<>(Math.min(maxRows, 4096) + 1);
        while (changes.hasNext()
            && (rows.size() < maxRows
                || rows.get(rows.size() - 1).type() == ChangeType.UPDATE_BEFORE)) {
          rows.add(changes.next());
        }
        return ChangelogBatch.of(projected, batchKeys, rows, allocator);
      }

      @Override
      public void close() throws IOException {
        changes.close();
      }
    };
  }

  /**
   * The changes of the window as one Arrow batch (see {@link #read}); its columns are the projected
   * ones, its identity keys the identifier fields (or, on a log table or when they are projected
   * away, all columns). The caller closes it.
   */
  public ChangelogBatch readBatch(Long fromExclusive, long toInclusive, BufferAllocator allocator) {
    return ChangelogBatch.of(projected, batchKeys, read(fromExclusive, toInclusive), allocator);
  }

  private boolean reloads(MissingHistoryException e, long toInclusive) {
    if (options.onMissingHistory() != OnMissingHistory.FULL_RELOAD
        || table.snapshot(toInclusive) == null) {
      return false;
    }
    LOG.warn(
        "{}; full reload: emitting every row at snapshot {} as an insert",
        e.getMessage(),
        toInclusive);
    return true;
  }

  private static List<ChangeRow> collect(CloseableIterator<ChangeRow> changes) {
    try (changes) {
      List<ChangeRow> all = new ArrayList<>();
      changes.forEachRemaining(all::add);
      return all;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private Changes open(Long fromExclusive, long toInclusive) {
    List<Snapshot> window = SnapshotWindow.of(table, schema, fromExclusive, toInclusive);
    Snapshot from = fromExclusive == null ? null : table.snapshot(fromExclusive);
    List<Span> spans =
        window.isEmpty()
            ? List.of()
            : options.mode() == Mode.COLLAPSED
                ? List.of(new Span(window.get(window.size() - 1), window))
                : window.stream().map(s -> new Span(s, List.of(s))).toList();
    return changes(from, spans, toInclusive);
  }

  /** Every row at {@code snapshotId} as an insert. */
  private Changes fullReload(long snapshotId) {
    return changes(null, List.of(new Span(table.snapshot(snapshotId), null)), snapshotId);
  }

  private Changes changes(Snapshot from, List<Span> spans, long toInclusive) {
    try {
      return new Changes(from, spans);
    } catch (NotFoundException e) {
      throw missing(toInclusive, e);
    }
  }

  /**
   * One step of a window: from the state before it to the state at {@code to}, over {@code
   * snapshots} (null when unknown: a full reload from nothing, or a step between two states that
   * are not on one history), whose states are then compared.
   */
  private record Span(Snapshot to, List<Snapshot> snapshots) {}

  /**
   * The window's changes, step by step: one step per snapshot (per-snapshot mode; a {@code replace}
   * snapshot moves the state but emits nothing) or one for the whole window. A step over plain
   * appends reads only the files they added ({@link WindowFiles#appended}); any other compares the
   * whole states on either side. Every manifest the steps need is read here, before the first
   * change, so a gone one fails the window up front.
   */
  private final class Changes implements CloseableIterator<ChangeRow> {
    /** A step to take: its end, the state before it, and its appended files (null: compare). */
    private record Planned(Snapshot to, Snapshot before, WindowFiles.Live appended) {}

    private final WindowFiles files =
        new WindowFiles(table, partitions, options.slice(), knownAppends);
    private final List<Planned> planned;
    private final ArrayDeque<ChangeRow> ready = new ArrayDeque<>();
    private final FileFetch fetch = new FileFetch(table.io(), dataFilesRead);
    private final DeleteCache deleteCache = new DeleteCache(table.io(), fetch);

    /** The next step to take, and the last one whose files were announced to {@link #fetch}. */
    private int nextStep;

    private int announced = -1;

    /** The files of the step after the current one, when it compares states (else null). */
    private StepFiles ahead;

    /** The last full state assembled, which the next step may start from. */
    private WindowFiles.Live last;

    private Snapshot lastAt;
    private Step step;
    private long current;

    /** The most changes to return, and those returned. */
    private long limit = Long.MAX_VALUE;

    private long returned;

    Changes(Snapshot from, List<Span> spans) {
      List<Planned> steps = new ArrayList<>();
      List<Snapshot> states = new ArrayList<>();
      Snapshot before = from;
      for (Span span : spans) {
        // A rewrite changes nothing, unless it can move rows between slices (FileSlice); a step
        // without its snapshots (a full reload, a step between states) compares the states,
        // whatever the snapshot's operation.
        if (options.mode() == Mode.COLLAPSED
            || span.snapshots() == null
            || options.slice().movesRows(table.specs())
            || !DataOperations.REPLACE.equals(span.to().operation())) {
          WindowFiles.Live appended =
              span.snapshots() == null ? null : files.appended(span.snapshots());
          if (appended == null) {
            if (before != null) {
              states.add(before);
            }
            states.add(span.to());
          }
          steps.add(new Planned(span.to(), before, appended));
        }
        before = span.to();
      }
      files.load(states);
      this.planned = steps;
    }

    @Override
    public boolean hasNext() {
      if (returned >= limit) {
        return false;
      }
      try {
        return advance();
      } catch (NotFoundException e) { // a data or delete file of the window is gone
        throw missing(current, e);
      }
    }

    private boolean advance() {
      while (ready.isEmpty()) {
        if (step != null) {
          if (!step.next(ready)) {
            step.close();
            step = null;
          }
          continue;
        }
        if (nextStep == planned.size()) {
          return false;
        }
        Planned next = planned.get(nextStep);
        current = next.to().snapshotId();
        StepFiles delta = ahead != null ? ahead : delta(next);
        ahead = null;
        fetch.ahead(wanted(delta.reads()));
        announced = Math.max(announced, nextStep++);
        if (nextStep < planned.size() && planned.get(nextStep).appended() == null) {
          // Its states are assembled now instead of when it starts, so its files come meanwhile.
          ahead = delta(planned.get(nextStep));
          fetch.ahead(wanted(ahead.reads()));
          announced = Math.max(announced, nextStep);
        }
        announceAppends();
        step = new Step(delta, current, deleteCache, fetch);
      }
      return true;
    }

    /** What a planned step reads, its states assembled in step order. */
    private StepFiles delta(Planned next) {
      if (next.appended() != null) {
        return StepFiles.between(files.empty(), next.appended());
      }
      WindowFiles.Live before =
          next.before() == null
              ? files.empty()
              : next.before() == lastAt ? last : files.at(next.before());
      last = files.at(next.to());
      lastAt = next.to();
      return StepFiles.between(before, last);
    }

    /**
     * Announces the files of the plain appends coming next, up to {@link #LOOKAHEAD_STEPS} steps
     * ahead, so that a window of many small commits fetches them together; a step that compares
     * states is announced one step ahead, when its states are assembled.
     */
    private void announceAppends() {
      while (announced + 1 < planned.size()
          && announced + 1 < nextStep + LOOKAHEAD_STEPS
          && planned.get(announced + 1).appended() != null) {
        fetch.ahead(wanted(planned.get(++announced).appended().data.values()));
      }
    }

    /**
     * The files to fetch ahead: all of them, or under a limit the data files only as far as their
     * record counts reach it (the rest are read in place if deletes or the filter leave fewer
     * rows).
     */
    private List<ContentFile<?>> wanted(Iterable<? extends ContentFile<?>> reads) {
      List<ContentFile<?>> wanted = new ArrayList<>();
      long rows = returned;
      for (ContentFile<?> file : reads) {
        if (file.content() != FileContent.DATA) {
          wanted.add(file);
        } else if (rows < limit) {
          wanted.add(file);
          rows += file.recordCount();
        }
      }
      return wanted;
    }

    @Override
    public ChangeRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      returned++;
      return ready.poll();
    }

    @Override
    public void close() {
      fetch.close();
      if (step != null) {
        step.close();
        step = null;
      }
    }
  }

  /** A row one step removed: the full old row, or (key-only reads) only its key columns. */
  private record Removed(Record row, boolean full) {}

  /**
   * The changes from one state to the next. First the rows that leave are read and held by key (by
   * the whole row on a log table): rows of removed files, and rows of files whose deletes changed.
   * Then the rows that arrive are streamed, file by file: one identical to a removed row cancels it
   * (a rewrite), one sharing a removed row's key pairs with it as an update, any other is an
   * insert. The removed rows left over are deletes.
   */
  private final class Step {
    private final long snapshotId;
    private final DeleteCache deleteCache;
    private final FileFetch fetch;
    private final Map<List<Object>, Deque<Removed>> removed = new LinkedHashMap<>();
    private final ArrayDeque<Record> revived = new ArrayDeque<>();
    private final Iterator<DataFile> added;
    private final WindowFiles.Live after;
    private CloseableIterable<Record> reading;
    private Iterator<Record> rows = Collections.emptyIterator();

    Step(StepFiles delta, long snapshotId, DeleteCache deleteCache, FileFetch fetch) {
      this.snapshotId = snapshotId;
      this.deleteCache = deleteCache;
      this.fetch = fetch;
      this.after = delta.after();
      for (DataFile file : delta.gone()) {
        try (CloseableIterable<Record> rows = liveRows(delta.before(), file)) {
          rows.forEach(row -> remove(row, true));
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read " + file.location(), e);
        }
      }
      for (StepFiles.Changed file : delta.changed()) {
        compare(file.file(), file.old(), file.now());
      }
      this.added = delta.arriving().iterator();
    }

    /** Adds the step's next changes to {@code out}; false once it has none left. */
    boolean next(Deque<ChangeRow> out) {
      Record row = nextArrived();
      if (row != null) {
        arrive(row, out);
        return true;
      }
      for (Deque<Removed> rest : removed.values()) {
        rest.forEach(gone -> emit(ChangeType.DELETE, gone.row(), out));
      }
      removed.clear();
      return false;
    }

    private Record nextArrived() {
      if (!revived.isEmpty()) {
        return revived.poll();
      }
      while (!rows.hasNext()) {
        close();
        if (!added.hasNext()) {
          return null;
        }
        reading = liveRows(after, added.next());
        rows = reading.iterator();
      }
      return rows.next();
    }

    private void remove(Record row, boolean full) {
      removed.computeIfAbsent(matchKey(row), k -> new ArrayDeque<>()).add(new Removed(row, full));
    }

    private void arrive(Record row, Deque<ChangeRow> out) {
      if (removed.isEmpty()) { // an append: nothing to cancel or pair with
        emit(ChangeType.INSERT, row, out);
        return;
      }
      List<Object> key = matchKey(row);
      Deque<Removed> candidates = removed.get(key);
      if (candidates == null) {
        emit(ChangeType.INSERT, row, out);
        return;
      }
      Removed match = null;
      if (kind == TableKind.PRIMARY_KEY) {
        List<Object> whole = identity(row, allColumns);
        for (Removed candidate : candidates) {
          if (candidate.full() && identity(candidate.row(), allColumns).equals(whole)) {
            match = candidate; // rewritten unchanged: no change
            break;
          }
        }
        if (match == null) {
          Removed old = candidates.poll();
          emitPair(old.row(), row, out);
        } else {
          candidates.remove(match);
        }
      } else {
        candidates.poll(); // keyed by the whole row: an identical row, rewritten
      }
      if (candidates.isEmpty()) {
        removed.remove(key);
      }
    }

    /**
     * One data file under both states' deletes: rows live before only leave, rows live after only
     * arrive. The file is read once, without deletes, and each row tested against both states'
     * position and equality deletes (read twice, filtered, only when the two states need different
     * columns for their deletes). With key-only before-images, when the later state only adds
     * deletes (so no row can arrive), only the key columns are read.
     */
    private void compare(DataFile file, List<DeleteFile> old, List<DeleteFile> now) {
      boolean keysOnly =
          options.beforeImage() == BeforeImage.KEY_ONLY
              && kind == TableKind.PRIMARY_KEY
              && StepFiles.keys(now).containsAll(StepFiles.keys(old));
      Schema requested = keysOnly ? keyReadSchema : readSchema;
      GenericDeleteFilter before = deleteCache.filter(task(file, old), schema, requested);
      GenericDeleteFilter later = deleteCache.filter(task(file, now), schema, requested);
      List<DeleteFile> added = EqualityDeleteKeys.added(old, now);
      if (added != null) {
        leaveByAddedKeys(file, old, before, later, added, keysOnly);
        return;
      }
      Schema required = before.requiredSchema();
      if (!required.sameSchema(later.requiredSchema())) {
        Map<Long, Record> oldRows = positions(task(file, old), requested);
        Map<Long, Record> newRows = positions(task(file, now), requested);
        oldRows.forEach(
            (position, row) -> {
              if (!newRows.containsKey(position)) {
                remove(row, !keysOnly);
              }
            });
        newRows.forEach(
            (position, row) -> {
              if (!oldRows.containsKey(position)) {
                revived.add(row);
              }
            });
        return;
      }
      Predicate<Record> keptBefore = before.eqDeletedRowFilter();
      Predicate<Record> keptAfter = later.eqDeletedRowFilter();
      PositionDeleteIndex positionsBefore = before.deletedRowPositions();
      PositionDeleteIndex positionsAfter = later.deletedRowPositions();
      TableRows toTable = new TableRows(template, required);
      try (CloseableIterable<Record> records = open(task(file, now), required, fetch)) {
        for (Record record : records) {
          long position = (Long) record.getField(MetadataColumns.ROW_POSITION.name());
          boolean liveBefore =
              (positionsBefore == null || !positionsBefore.isDeleted(position))
                  && keptBefore.test(record);
          boolean liveAfter =
              (positionsAfter == null || !positionsAfter.isDeleted(position))
                  && keptAfter.test(record);
          if (liveBefore && !liveAfter) {
            remove(toTable.apply(record), !keysOnly);
          } else if (liveAfter && !liveBefore) {
            revived.add(toTable.apply(record));
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file.location(), e);
      }
    }

    /**
     * {@link #compare} when the later state only adds equality deletes ({@code added}): a row
     * leaves when it was live before and an added delete holds its key, and no row arrives. Each
     * delete file's keys are tested as a set of their own, loaded once per window, where Iceberg's
     * filter builds for every data file the union of all its deletes: reading a commit then grew
     * with the square of the files written since the last compaction.
     */
    private void leaveByAddedKeys(
        DataFile file,
        List<DeleteFile> old,
        GenericDeleteFilter before,
        GenericDeleteFilter later,
        List<DeleteFile> added,
        boolean keysOnly) {
      Schema required = later.requiredSchema(); // the columns of both states' deletes
      Predicate<Record> deletedBefore = deleteCache.anyHoldsKey(old, required);
      Predicate<Record> deletedNow = deleteCache.anyHoldsKey(added, required);
      PositionDeleteIndex positionsBefore = before.deletedRowPositions();
      TableRows toTable = new TableRows(template, required);
      try (CloseableIterable<Record> records =
          open(task(file, old), required, deletedKeys.rowsOf(added, fetch), fetch)) {
        for (Record record : records) {
          if (!deletedNow.test(record)) {
            continue;
          }
          long position = (Long) record.getField(MetadataColumns.ROW_POSITION.name());
          if ((positionsBefore == null || !positionsBefore.isDeleted(position))
              && !deletedBefore.test(record)) {
            remove(toTable.apply(record), !keysOnly);
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file.location(), e);
      }
    }

    /** A file's live rows under some deletes, by position. */
    private Map<Long, Record> positions(FileScanTask task, Schema requested) {
      GenericDeleteFilter deletes = deleteCache.filter(task, schema, requested);
      Schema required = deletes.requiredSchema();
      TableRows toTable = new TableRows(template, required);
      Map<Long, Record> live = new LinkedHashMap<>();
      try (CloseableIterable<Record> records = deletes.filter(open(task, required, fetch))) {
        for (Record record : records) {
          live.put(
              (Long) record.getField(MetadataColumns.ROW_POSITION.name()), toTable.apply(record));
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + task.file().location(), e);
      }
      return live;
    }

    /** A data file's live rows in a state, as rows of the table schema; read lazily. */
    private CloseableIterable<Record> liveRows(WindowFiles.Live state, DataFile file) {
      List<DeleteFile> deleteFiles = state.deletesFor(file);
      FileScanTask task = task(file, deleteFiles);
      if (deleteFiles.isEmpty()) {
        return open(task, schema, fetch); // nothing to delete: every row, in the table's schema
      }
      GenericDeleteFilter deletes = deleteCache.filter(task, schema, schema);
      Schema required = deletes.requiredSchema();
      return CloseableIterable.transform(
          deletes.filter(open(task, required, fetch)), new TableRows(template, required));
    }

    private void emit(ChangeType type, Record row, Deque<ChangeRow> out) {
      if (keeps(row)) {
        out.add(change(type, row));
      }
    }

    /** An update pair; when the filter keeps only one side, a delete or an insert. */
    private void emitPair(Record old, Record now, Deque<ChangeRow> out) {
      boolean keepOld = keeps(old);
      boolean keepNew = keeps(now);
      if (keepOld && keepNew) {
        out.add(change(ChangeType.UPDATE_BEFORE, old));
        out.add(change(ChangeType.UPDATE_AFTER, now));
      } else if (keepOld) {
        out.add(change(ChangeType.DELETE, old));
      } else if (keepNew) {
        out.add(change(ChangeType.INSERT, now));
      }
    }

    private ChangeRow change(ChangeType type, Record row) {
      return new ChangeRow(type, shape(type, row), snapshotId);
    }

    void close() {
      if (reading != null) {
        try {
          reading.close();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        reading = null;
      }
      rows = Collections.emptyIterator();
    }
  }

  private FileScanTask task(DataFile file, List<DeleteFile> deletes) {
    return WindowFiles.task(table, file, deletes, schemaJson, specJson);
  }

  /**
   * A task's data file, every row, in {@code required}, counted in {@link #rowsScanned}; its bytes
   * from {@code fetch} when fetched ahead.
   */
  private CloseableIterable<Record> open(FileScanTask task, Schema required, FileFetch fetch) {
    return open(task, required, Expressions.alwaysTrue(), fetch);
  }

  /**
   * As {@link #open(FileScanTask, Schema, FileFetch)}, skipping row groups with no row in {@code
   * rowGroups}.
   */
  private CloseableIterable<Record> open(
      FileScanTask task, Schema required, Expression rowGroups, FileFetch fetch) {
    CloseableIterable<Record> rows =
        DataFileRows.read(fetch, table, task, required, rowGroups, decoder);
    return CloseableIterable.transform(
        rows,
        record -> {
          rowsScanned++;
          return record;
        });
  }

  private MissingHistoryException missing(long snapshotId, RuntimeException cause) {
    return new MissingHistoryException(
        "table "
            + table.name()
            + ": a file needed for the"
            + " changes of snapshot "
            + snapshotId
            + " is gone ("
            + cause.getMessage()
            + "); its"
            + " history was expired or removed — read a later window, or set on-missing-history to"
            + " full-reload",
        cause);
  }

  /**
   * The values of {@code columns} as a list that compares by value: binary values ({@code byte[]}
   * of fixed columns) are wrapped, since arrays compare by identity.
   */
  private static List<Object> identity(Record row, List<String> columns) {
    List<Object> values = new ArrayList<>(columns.size());
    for (String column : columns) {
      Object value = row.getField(column);
      values.add(value instanceof byte[] bytes ? ByteBuffer.wrap(bytes) : value);
    }
    return values;
  }

  private boolean keeps(Record row) {
    return filterAll || filter.eval(internal.wrap(row));
  }

  /** What an arriving row is matched with removed rows by: its key, or on a log table all of it. */
  private List<Object> matchKey(Record row) {
    return identity(row, kind == TableKind.PRIMARY_KEY ? keyColumns : allColumns);
  }

  /** A change's row as emitted: key-only before-images, then the projection. */
  private Record shape(ChangeType type, Record row) {
    if (type.removes() && options.beforeImage() == BeforeImage.KEY_ONLY && !keyColumns.isEmpty()) {
      return keyOnly(row, projected);
    }
    if (projected == schema) {
      return row;
    }
    return decoder != null && decoder.decoded(row)
        ? decoder.select(row, projected)
        : select(row, projected);
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
