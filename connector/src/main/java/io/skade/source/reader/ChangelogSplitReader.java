package io.skade.source.reader;

import io.skade.changelog.ChangeEstimate;
import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangeType;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.changelog.PlannedWindow;
import io.skade.scan.MetadataCache;
import io.skade.source.StageTrace;
import io.skade.source.StageTrace.Stage;
import io.skade.source.split.ChangelogSplit;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.data.StructRowData;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.Types;

/**
 * Reads changelog splits one at a time, in the order they were assigned (so one reader emits the
 * changes of its ordering units in commit order), each from where it was left: a split is opened
 * with the table's file IO (never the catalog) from the metadata this JVM holds for it (with the
 * manifests, where its planner ran), else from the plan it carries ({@link PlannedWindow}: no
 * metadata file read, and no manifest for an append), else from its metadata file (with the plan's
 * appended files, when it carries them alone); its first {@code emitted} changes are skipped, and
 * the rest are fetched in bounded batches. A split is finished when it has no change left.
 * Consecutive splits of one schema share the changelog reader's set-up.
 *
 * <p>Data files are decoded straight into Flink's rows ({@link RowDataDecoder}); a change's row
 * goes to Flink as it was decoded. A row the engine built itself (a key-only before-image, or any
 * row of a schema the decoder leaves to Iceberg's generic reader) goes as a view ({@link
 * StructRowData}, the adapter Iceberg's Flink module uses for its own metadata tables), converted
 * field by field as Flink reads it.
 */
public final class ChangelogSplitReader implements SplitReader<ChangeRecord, ChangelogSplit> {
  /** How many queued windows' metadata is read ahead. */
  private static final int PREFETCH_SPLITS = 2;

  /** How long a fetch waits while the split to read is paused. */
  private static final long PAUSED_WAIT_MILLIS = 10;

  private final FileIO io;
  private final ChangelogOptions options;
  private final int batchRows;
  private final Queue<ChangelogSplit> assigned = new ArrayDeque<>();
  // Splits Flink's watermark alignment paused (set from the task thread, read by the fetcher).
  private final Set<String> paused = ConcurrentHashMap.newKeySet();
  private final Object wake = new Object();
  private ChangelogSplit current;
  private Table table;

  /** Decodes data files into Flink's rows, which the changes then carry to Flink as they are. */
  private final RowDataDecoder decoder = new RowDataDecoder();

  /** The last split's changelog reader, whose set-up the next split of its schema reuses. */
  private ChangelogReader reader;

  /** Each assigned split's table and known appends, by split id, until it is opened. */
  private final Map<String, Window> windows = new HashMap<>();

  /** What a split reads: its table and the files its plain appends added, when planned. */
  private record Window(Table table, Map<Long, List<DataFile>> knownAppends) {}

  /**
   * The snapshot of the last change fetched and its commit time: a snapshot's changes come in a
   * run, often over many fetches, and its time never changes.
   */
  private long snapshotId = -1;

  private long commitMillis;

  private Types.StructType rowType;
  private CloseableIterator<ChangeRow> changes;
  private long emitted;
  private final ReaderMetrics metrics;
  // Estimated changes of each assigned split not yet finished, by split id.
  private final Map<String, Long> estimates = new HashMap<>();

  /** The sum of {@link #estimates}, kept so that a fetch does not walk every assigned split. */
  private long estimated;

  /** The most rows this reader emits (a SQL {@code LIMIT}); {@link Long#MAX_VALUE} for all. */
  private final long limit;

  /** Rows emitted by this reader (since it started), against {@link #limit}. */
  private long delivered;

  /** Data files read by the changelog readers this one has let go. */
  private long dataFilesReadBefore;

  /**
   * @param io the table's file IO
   * @param options how windows are read (mode, before-images, projection, filter)
   * @param batchRows the most changes one fetch returns (one more to keep an update pair whole)
   */
  public ChangelogSplitReader(FileIO io, ChangelogOptions options, int batchRows) {
    this(io, options, batchRows, Long.MAX_VALUE, new ReaderMetrics());
  }

  /**
   * As above, emitting at most {@code limit} rows (the splits left are then finished unread; only
   * for reads of a snapshot's rows), reporting into {@code metrics} (which the source reader
   * registers with Flink).
   */
  ChangelogSplitReader(
      FileIO io, ChangelogOptions options, int batchRows, long limit, ReaderMetrics metrics) {
    this.io = io;
    this.options = options;
    this.batchRows = batchRows;
    this.limit = limit;
    this.metrics = metrics;
  }

  @Override
  public RecordsWithSplitIds<ChangeRecord> fetch() throws IOException {
    RecordsBySplits.Builder<ChangeRecord> records = new RecordsBySplits.Builder<>();
    if (isPaused(current != null ? current : assigned.peek())) {
      // Splits are read one at a time, in order, so a paused split holds back those after it
      // (each key's changes stay in commit order); wait a little rather than spin.
      synchronized (wake) {
        try {
          wake.wait(PAUSED_WAIT_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return records.build();
    }
    if (delivered >= limit) {
      return finishUnread(records);
    }
    if (current == null && !open()) {
      return records.build(); // nothing assigned
    }
    String splitId = current.splitId();
    ChangeType last = null;
    List<ChangeRecord> batch = new ArrayList<>();
    for (int n = 0; changes.hasNext() && (n < batchRows || last == ChangeType.UPDATE_BEFORE); n++) {
      ChangeRow change = changes.next();
      if (emitted == 0) {
        StageTrace.mark(Stage.FIRST_ROW_DECODED, current.commitSeq());
      }
      if (change.snapshotId() != snapshotId) {
        snapshotId = change.snapshotId();
        commitMillis =
            current.commitMicros() == ChangelogSplit.UNKNOWN_TIME
                ? table.snapshot(snapshotId).timestampMillis()
                : Math.floorDiv(current.commitMicros(), 1000);
      }
      last = change.type();
      emitted++;
      delivered++;
      RowKind kind = FlinkChanges.rowKind(last);
      RowData row = RowDataDecoder.rowData(change.row(), kind);
      batch.add(
          new ChangeRecord(
              row != null ? row : new StructRowData(rowType, kind).setStruct(change.row()),
              snapshotId,
              commitMillis,
              emitted));
    }
    if (!batch.isEmpty()) {
      records.addAll(splitId, batch);
      metrics.fetched(commitMillis);
    }
    if (!changes.hasNext()) {
      records.addFinishedSplit(splitId);
      paused.remove(splitId);
      Long estimate = estimates.remove(splitId);
      estimated -= estimate == null ? 0 : estimate;
      closeCurrent();
    }
    updatePending();
    metrics.dataFilesRead(dataFilesReadBefore + reader.dataFilesRead());
    return records.build();
  }

  /** The rows {@code split} may still give: the limit's rest, and those it skips on a restore. */
  private long rowsWanted(ChangelogSplit split) {
    return limit == Long.MAX_VALUE ? Long.MAX_VALUE : limit - delivered + split.emitted();
  }

  /** The limit is reached: the current split and every assigned one end, unread. */
  private RecordsWithSplitIds<ChangeRecord> finishUnread(
      RecordsBySplits.Builder<ChangeRecord> records) throws IOException {
    if (current != null) {
      records.addFinishedSplit(current.splitId());
      closeCurrent();
    }
    for (ChangelogSplit split; (split = assigned.poll()) != null; ) {
      records.addFinishedSplit(split.splitId());
      windows.remove(split.splitId());
    }
    paused.clear();
    estimates.clear();
    estimated = 0;
    updatePending();
    return records.build();
  }

  /** Opens the next assigned split; false when there is none. */
  private boolean open() {
    ChangelogSplit next = assigned.poll();
    if (next == null) {
      return false;
    }
    Window window = windows.remove(next.splitId());
    if (window == null) {
      window = window(next);
    }
    table = window.table();
    ChangelogOptions read = options.withSlice(next.slice());
    if (reader != null) {
      dataFilesReadBefore += reader.dataFilesRead();
    }
    reader =
        reader == null
            ? new ChangelogReader(table, read, window.knownAppends(), decoder)
            : reader.reading(table, read, window.knownAppends());
    rowType = reader.schema().asStruct();
    changes =
        next.fullSnapshot()
            ? reader.snapshotChanges(next.toSnapshotId(), rowsWanted(next))
            : next.betweenStates()
                ? reader.changesBetween(next.fromSnapshotId(), next.toSnapshotId())
                : reader.changes(next.fromExclusive(), next.toSnapshotId());
    for (long skipped = 0; skipped < next.emitted() && changes.hasNext(); skipped++) {
      changes.next(); // emitted before the checkpoint this split was restored from
    }
    current = next;
    emitted = next.emitted();
    StageTrace.mark(Stage.SPLIT_OPENED, next.commitSeq());
    prefetchNext();
    return true;
  }

  /**
   * The table and known appends of {@code split}: from the metadata this JVM holds, else from its
   * plan, else read from its metadata file.
   */
  private Window window(ChangelogSplit split) {
    MetadataCache cache = MetadataCache.shared();
    Table held = cache.tableInMemory(split.metadataLocation(), io, split.tableKey());
    if (held != null) {
      // The planner's JVM, whose cache holds the metadata and, for a commit it read ahead, the
      // manifests. Else (a backlog) the plan's appended files spare a manifest list per append.
      Snapshot last = held.snapshot(split.toSnapshotId());
      PlannedWindow plan =
          last == null || cache.holdsManifestList(last) ? null : split.plannedWindow();
      return new Window(held, plan == null ? Map.of() : plan.appended());
    }
    PlannedWindow plan = split.plannedWindow();
    Table planned = plan == null ? null : plan.table(io, split.tableKey());
    // Without a plan, or with one of appended files alone (planned for a reader of the planner's
    // JVM whose cache has let the table go since), the metadata file is read.
    return new Window(
        planned != null ? planned : cache.table(split.metadataLocation(), io, split.tableKey()),
        plan == null ? Map.of() : plan.appended());
  }

  /**
   * Warms the metadata of the next assigned windows while this one is read: their manifests (and,
   * for a split without a plan, its metadata file); an append whose files the split carries needs
   * none.
   */
  private void prefetchNext() {
    MetadataCache cache = MetadataCache.shared();
    for (ChangelogSplit split : assigned.stream().limit(PREFETCH_SPLITS).toList()) {
      if (split.plan() == null) {
        cache.prefetch(split.metadataLocation(), io, split.tableKey(), split.toSnapshotId());
      } else {
        Window window = windows.computeIfAbsent(split.splitId(), id -> window(split));
        if (!window.knownAppends().containsKey(split.toSnapshotId())) {
          cache.prefetch(window.table(), split.toSnapshotId());
        }
      }
    }
  }

  private void closeCurrent() throws IOException {
    changes.close();
    changes = null;
    current = null;
  }

  @Override
  public void handleSplitsChanges(SplitsChange<ChangelogSplit> change) {
    if (!(change instanceof SplitsAddition)) {
      throw new UnsupportedOperationException(
          "a skade reader only takes new splits, got " + change.getClass().getSimpleName());
    }
    assigned.addAll(change.splits());
    for (ChangelogSplit split : change.splits()) {
      StageTrace.mark(Stage.SPLIT_RECEIVED, split.commitSeq());
      long estimate;
      try {
        estimate = estimate(split);
      } catch (RuntimeException e) {
        // Only a metric: a split whose files cannot be read fails when it is read, with the
        // error that explains it.
        estimate = 0;
      }
      Long replaced = estimates.put(split.splitId(), estimate);
      estimated += estimate - (replaced == null ? 0 : replaced);
    }
    updatePending();
  }

  /** The changes a split holds, estimated from its files' record counts. */
  private long estimate(ChangelogSplit split) {
    Window window = windows.computeIfAbsent(split.splitId(), id -> window(split));
    Table at = window.table();
    if (split.betweenStates()) {
      return 0; // a rollback's changes are not estimated: rare, and no commit lists them
    }
    return split.fullSnapshot()
        ? ChangeEstimate.fullSnapshot(at, split.toSnapshotId(), split.slice())
        : ChangeEstimate.window(
            at, split.fromExclusive(), split.toSnapshotId(), split.slice(), window.knownAppends());
  }

  private void updatePending() {
    long pending = estimated;
    Long reading = current == null ? null : estimates.get(current.splitId());
    if (reading != null) {
      pending -= Math.min(reading, emitted); // the current split's changes already emitted
    }
    metrics.pending(pending);
  }

  private boolean isPaused(ChangelogSplit split) {
    return split != null && paused.contains(split.splitId());
  }

  /**
   * Pauses or resumes splits for Flink's watermark alignment. A paused split is not read, nor (as
   * splits are read in order) any split after it; resuming it goes on where it stood.
   */
  @Override
  public void pauseOrResumeSplits(
      Collection<ChangelogSplit> toPause, Collection<ChangelogSplit> toResume) {
    toPause.forEach(split -> paused.add(split.splitId()));
    toResume.forEach(split -> paused.remove(split.splitId()));
    wakeUp();
  }

  @Override
  public void wakeUp() {
    // A fetch reads at most one bounded batch; only a paused one waits, briefly.
    synchronized (wake) {
      wake.notifyAll();
    }
  }

  @Override
  public void close() throws Exception {
    if (changes != null) {
      closeCurrent();
    }
  }
}
