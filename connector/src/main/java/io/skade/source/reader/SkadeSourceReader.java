package io.skade.source.reader;

import io.skade.changelog.ChangelogOptions;
import io.skade.source.ChangeDeserializer;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitState;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.iceberg.io.FileIO;

/**
 * A skade source reader: one fetcher thread reads the splits assigned to this subtask in the
 * order they came (the enumerator pins each ordering unit to one reader, so a key's changes come
 * out in commit order), and the task thread emits them. Its checkpointed state is each
 * unfinished split with how far it was emitted. Finished splits are reported to the enumerator,
 * which then lets the catalog expire the snapshots they needed.
 */
public final class SkadeSourceReader<T>
    extends SingleThreadMultiplexSourceReaderBase<ChangeRecord, T, ChangelogSplit,
        ChangelogSplitState> {
  private final FileIO io;

  /** A reader that owns {@code io} and closes it with itself. */
  public SkadeSourceReader(FileIO io, ChangelogOptions options, int batchRows,
      ChangeDeserializer<T> deserializer, SourceReaderContext context) {
    super(() -> new ChangelogSplitReader(io, options, batchRows),
        new ChangeRecordEmitter<>(deserializer), context.getConfiguration(), context);
    this.io = io;
  }

  @Override
  public void close() throws Exception {
    try {
      super.close();
    } finally {
      io.close();
    }
  }

  /**
   * The unfinished splits in commit order. The base class keeps split states in a hash map, so
   * its list comes in any order — and a restore adds splits in the list's order, which is the
   * order this reader emits them in.
   */
  @Override
  public List<ChangelogSplit> snapshotState(long checkpointId) {
    List<ChangelogSplit> splits = new ArrayList<>(super.snapshotState(checkpointId));
    splits.sort(IN_COMMIT_ORDER);
    return splits;
  }

  /** A window after the commit it ends at; a table's rows before the windows after them. */
  static final Comparator<ChangelogSplit> IN_COMMIT_ORDER =
      Comparator.comparingLong(ChangelogSplit::commitSeq)
          .thenComparing(split -> !split.fullSnapshot());

  @Override
  protected void onSplitFinished(Map<String, ChangelogSplitState> finished) {
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
