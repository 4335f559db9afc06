package io.skade.source.database.reader;

import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.DatabaseChangelog;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.database.CheckpointBoundaryEvent;
import io.skade.source.database.DatabaseChange;
import io.skade.source.database.DatabaseChangeDeserializer;
import io.skade.source.database.split.CommitSplit;
import io.skade.source.reader.FlinkChanges;
import io.skade.source.reader.RowDataDecoder;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.List;
import java.util.NavigableSet;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.connector.source.ExternallyInducedSourceReader;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.data.StructRowData;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.io.FileIO;

/**
 * Reads the commit splits of a database source's tables, one after the other in commit order, each
 * whole, and lets Flink checkpoint only on the commit boundaries its enumerator names ({@link
 * CheckpointBoundaryEvent}): once every split up to a boundary is emitted, it induces that
 * checkpoint, and it starts no split after the boundary before the checkpoint's barrier went out.
 * Its state is therefore always empty: the enumerator's boundary says where each reader stands.
 *
 * <p>Splits are read in the task's thread, a bounded number of changes per call, so a checkpoint
 * waits at most for the rest of the splits before its boundary.
 *
 * @param <T> the emitted type
 */
public final class DatabaseSourceReader<T>
    implements ExternallyInducedSourceReader<T, CommitSplit> {
  /** The most changes emitted per call, so that the task's mailbox is served in between. */
  private static final int CHANGES_PER_CALL = 1024;

  private final SourceReaderContext context;
  private final FileIO io;
  private final ChangelogOptions options;
  private final DatabaseChangeDeserializer<T> deserializer;
  private final RowDataDecoder decoder = new RowDataDecoder();
  private final PriorityQueue<CommitSplit> splits =
      new PriorityQueue<>(Comparator.comparingLong(CommitSplit::commitSeq));
  private final ArrayDeque<CheckpointBoundaryEvent> boundaries = new ArrayDeque<>();

  /** Checkpoints aborted before their boundary came. */
  private final NavigableSet<Long> aborted = new TreeSet<>();

  private final Emitter<T> emitter = new Emitter<>();
  private CompletableFuture<Void> available = CompletableFuture.completedFuture(null);

  /** The checkpoint to induce: every split up to its boundary is emitted. */
  private Long toInduce;

  /** The checkpoint induced and not yet taken: no split is started until it is. */
  private Long induced;

  private CommitSplit current;
  private TableIdentifier table;
  private CloseableIterator<ChangeRow> changes;

  public DatabaseSourceReader(
      SourceReaderContext context,
      FileIO io,
      ChangelogOptions options,
      DatabaseChangeDeserializer<T> deserializer) {
    this.context = context;
    this.io = io;
    this.options = options;
    this.deserializer = deserializer;
  }

  @Override
  public void start() {
    // splits are pushed by the enumerator as commits come
  }

  @Override
  public InputStatus pollNext(ReaderOutput<T> output) throws Exception {
    emitter.output = output;
    for (int emitted = 0; emitted < CHANGES_PER_CALL; ) {
      if (current == null) {
        if (induced != null) {
          return unavailable(); // until the induced checkpoint is taken
        }
        CheckpointBoundaryEvent boundary = boundaries.peek();
        CommitSplit next = splits.peek();
        if (boundary != null && (next == null || next.commitSeq() > boundary.commitSeq())) {
          boundaries.poll();
          toInduce = boundary.checkpointId();
          return InputStatus.NOTHING_AVAILABLE; // the task asks shouldTriggerCheckpoint() now
        }
        if (next == null) {
          return unavailable();
        }
        open(splits.poll());
      }
      if (changes.hasNext()) {
        emit(changes.next());
        emitted++;
      } else {
        finish();
      }
    }
    return InputStatus.MORE_AVAILABLE;
  }

  private InputStatus unavailable() {
    if (available.isDone()) {
      available = new CompletableFuture<>();
    }
    return InputStatus.NOTHING_AVAILABLE;
  }

  private void open(CommitSplit split) {
    TableCommit commit = split.tableCommit();
    current = split;
    table = commit.table();
    changes = DatabaseChangelog.changes(io, options, decoder, commit);
  }

  private void emit(ChangeRow change) throws Exception {
    RowKind kind = FlinkChanges.rowKind(change.type());
    RowData row = RowDataDecoder.rowData(change.row(), kind);
    if (row == null) {
      row = new StructRowData(change.row().struct(), kind).setStruct(change.row());
    }
    long commitMillis = Math.floorDiv(current.commit().tsMicros(), 1000);
    emitter.timestamp = commitMillis;
    deserializer.deserialize(
        new DatabaseChange(
            table,
            change.row().struct(),
            row,
            current.commitSeq(),
            change.snapshotId(),
            commitMillis,
            current.transactionStart(),
            Math.max(1, current.commit().transactionSize())),
        emitter);
  }

  private void finish() throws IOException {
    changes.close();
    context.sendSourceEventToCoordinator(new SplitsFinishedEvent(List.of(current.splitId())));
    changes = null;
    current = null;
  }

  @Override
  public Optional<Long> shouldTriggerCheckpoint() {
    Long checkpoint = toInduce;
    toInduce = null;
    induced = checkpoint != null ? checkpoint : induced;
    return Optional.ofNullable(checkpoint);
  }

  /** Empty: a checkpoint is taken on a commit boundary, between splits. */
  @Override
  public List<CommitSplit> snapshotState(long checkpointId) {
    if (current != null) {
      throw new IllegalStateException(
          "skade database source reader checkpointed inside split "
              + current.splitId()
              + " (checkpoint "
              + checkpointId
              + "); checkpoints must fall between commits");
    }
    if (induced != null && induced <= checkpointId) {
      induced = null;
      available.complete(null);
    }
    return List.of();
  }

  /**
   * A checkpoint aborted is never induced: the task would wait for its trigger forever. Its abort
   * can overtake its boundary (they travel apart), so the abort is remembered until the boundary
   * comes.
   */
  @Override
  public void notifyCheckpointAborted(long checkpointId) {
    if (induced != null && induced == checkpointId) {
      induced = null;
      available.complete(null);
    }
    if (toInduce != null && toInduce == checkpointId) {
      toInduce = null;
    }
    if (!boundaries.removeIf(boundary -> boundary.checkpointId() == checkpointId)) {
      aborted.add(checkpointId);
    }
  }

  @Override
  public CompletableFuture<Void> isAvailable() {
    return available;
  }

  @Override
  public void addSplits(List<CommitSplit> added) {
    splits.addAll(added);
    available.complete(null);
  }

  @Override
  public void handleSourceEvents(SourceEvent event) {
    if (event instanceof CheckpointBoundaryEvent boundary) {
      boolean wasAborted = aborted.remove(boundary.checkpointId());
      aborted.headSet(boundary.checkpointId()).clear();
      if (!wasAborted) {
        boundaries.add(boundary);
        available.complete(null);
      }
    }
  }

  @Override
  public void notifyNoMoreSplits() {
    // an unbounded source: never told
  }

  @Override
  public void close() throws Exception {
    if (changes != null) {
      changes.close();
    }
  }

  /** The collector a deserializer emits to: the reader's output, stamped with the commit time. */
  private static final class Emitter<T> implements Collector<T> {
    private ReaderOutput<T> output;
    private long timestamp;

    @Override
    public void collect(T record) {
      output.collect(record, timestamp);
    }

    @Override
    public void close() {}
  }
}
