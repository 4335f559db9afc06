package io.skade.source.reader;

import io.skade.changelog.ChangelogOptions;
import io.skade.scan.MetadataCache;
import io.skade.source.ChangeDeserializer;
import io.skade.source.CommitProgressEvent;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.SplitsRestoredEvent;
import io.skade.source.SplitsTakenEvent;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.core.io.InputStatus;
import org.apache.iceberg.io.FileIO;

/**
 * A skade source reader: one fetcher thread reads the splits assigned to this subtask in the order
 * they came (the enumerator sends each slot of ordering units to one reader, so a key's changes
 * come out in commit order), and the task thread emits them. Its checkpointed state is each
 * unfinished split with how far it was emitted. Finished splits are reported to the enumerator,
 * which then lets the catalog expire the snapshots they needed.
 *
 * <p>Splits restored from a checkpoint are not read here: Flink hands reader state to whichever
 * readers it likes, so they go back to the enumerator ({@link SplitsRestoredEvent}), which sends
 * each to the reader of its slot, ahead of anything newer there. Until the enumerator confirms it
 * holds them ({@link SplitsTakenEvent}) they stay in this reader's checkpoints.
 */
public final class SkadeSourceReader<T>
    extends SingleThreadMultiplexSourceReaderBase<
        ChangeRecord, T, ChangelogSplit, ChangelogSplitState> {
  private final FileIO io;

  /** Restored splits handed back to the enumerator and not yet confirmed taken. */
  private final List<ChangelogSplit> handedBack = new ArrayList<>();

  private boolean started;

  /** The reader's watermark on commit time, when the source emits one; else null. */
  private final CommitTimeWatermarks watermarks;

  /**
   * A reader that owns {@code io} and closes it with itself, emitting at most {@code limit} rows
   * ({@link Long#MAX_VALUE} for all; a limit only for reads of a snapshot's rows).
   *
   * @param watermarkIdleTimeout null when the source emits no watermark of its own; else it emits
   *     one on commit time, and a reader without splits is marked idle after this long (zero:
   *     never)
   */
  public SkadeSourceReader(
      FileIO io,
      ChangelogOptions options,
      int batchRows,
      long limit,
      ChangeDeserializer<T> deserializer,
      Duration watermarkIdleTimeout,
      SourceReaderContext context) {
    this(
        io,
        options,
        batchRows,
        limit,
        deserializer,
        watermarkIdleTimeout,
        context,
        new ReaderMetrics());
  }

  private SkadeSourceReader(
      FileIO io,
      ChangelogOptions options,
      int batchRows,
      long limit,
      ChangeDeserializer<T> deserializer,
      Duration watermarkIdleTimeout,
      SourceReaderContext context,
      ReaderMetrics metrics) {
    super(
        () -> new ChangelogSplitReader(io, options, batchRows, limit, metrics),
        new ChangeRecordEmitter<>(deserializer),
        context.getConfiguration(),
        context);
    this.io = io;
    this.watermarks =
        watermarkIdleTimeout == null ? null : new CommitTimeWatermarks(watermarkIdleTimeout);
    metrics.register(context.metricGroup());
  }

  @Override
  public InputStatus pollNext(ReaderOutput<T> output) throws Exception {
    if (watermarks == null) {
      return super.pollNext(output);
    }
    watermarks.beforePoll(output);
    InputStatus status = super.pollNext(output);
    watermarks.afterPoll(output);
    return status;
  }

  @Override
  public CompletableFuture<Void> isAvailable() {
    return watermarks == null ? super.isAvailable() : watermarks.available(super.isAvailable());
  }

  @Override
  public void close() throws Exception {
    try {
      super.close();
    } finally {
      io.close();
    }
  }

  /** Splits added before the reader starts are its restored state: they go to the enumerator. */
  @Override
  public void addSplits(List<ChangelogSplit> splits) {
    if (started) {
      if (watermarks != null) {
        splits.forEach(watermarks::added);
      }
      super.addSplits(splits);
    } else {
      handedBack.addAll(splits);
    }
  }

  /** Registered with the enumerator by now: hands back the restored splits (or says none). */
  @Override
  public void start() {
    started = true;
    super.start();
    // Without their plans: the event goes over Flink's RPC, whose messages are bounded, and the
    // readers they go to read their metadata files instead.
    context.sendSourceEventToCoordinator(
        new SplitsRestoredEvent(
            handedBack.stream().map(split -> split.withPlan(null)).toList(),
            MetadataCache.shared().id()));
  }

  @Override
  public void handleSourceEvents(SourceEvent event) {
    if (event instanceof SplitsTakenEvent taken) {
      Set<String> ids = new HashSet<>(taken.splitIds());
      handedBack.removeIf(split -> ids.contains(split.splitId()));
    } else if (event instanceof CommitProgressEvent progress) {
      if (watermarks != null) {
        watermarks.progress(progress);
      }
    } else {
      super.handleSourceEvents(event);
    }
  }

  /**
   * The unfinished splits, with the restored ones the enumerator does not hold yet, in commit order
   * (the base class keeps split states in a hash map).
   */
  @Override
  public List<ChangelogSplit> snapshotState(long checkpointId) {
    List<ChangelogSplit> splits = new ArrayList<>(super.snapshotState(checkpointId));
    splits.addAll(handedBack);
    splits.sort(ChangelogSplit.COMMIT_ORDER);
    return splits;
  }

  @Override
  protected void onSplitFinished(Map<String, ChangelogSplitState> finished) {
    if (watermarks != null) {
      watermarks.finished(finished.keySet());
    }
    context.sendSourceEventToCoordinator(new SplitsFinishedEvent(List.copyOf(finished.keySet())));
  }

  @Override
  protected ChangelogSplitState initializedState(ChangelogSplit split) {
    return new ChangelogSplitState(split);
  }

  @Override
  protected ChangelogSplit toSplitType(String splitId, ChangelogSplitState state) {
    return state.toSplit();
  }
}
