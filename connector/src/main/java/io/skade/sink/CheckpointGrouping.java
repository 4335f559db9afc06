package io.skade.sink;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableSummary;
import org.apache.flink.streaming.api.connector.sink2.CommittableWithLineage;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.flink.sink.DeltaManifests;
import org.apache.iceberg.flink.sink.DeltaManifestsSerializer;
import org.apache.iceberg.flink.sink.FlinkManifestUtil;
import org.apache.iceberg.flink.sink.ManifestOutputFileFactory;
import org.apache.iceberg.io.WriteResult;

/**
 * A sink's pre-commit step (one task): the writers' results become one committable per checkpoint
 * at which the writers flushed them, in checkpoint order.
 *
 * <p>Why per flush, not per arrival: when a checkpoint is aborted after the writers flushed for it
 * (a savepoint taken while a checkpoint was under way, a declined checkpoint), its results arrive
 * here with the next checkpoint's. Merged into one commit, two flushes of one writer would share a
 * data sequence number, and the later flush's equality deletes would not apply to the earlier
 * flush's rows: a key upserted in both would be held twice. Committed separately, the later flush's
 * deletes apply as they do between any two checkpoints.
 *
 * @param <R> a writer's result
 * @param <C> the committable of one checkpoint
 */
abstract class CheckpointGrouping<R, C> extends AbstractStreamOperator<CommittableMessage<C>>
    implements OneInputStreamOperator<CommittableMessage<R>, CommittableMessage<C>> {
  private static final long serialVersionUID = 1L;

  /** Per checkpoint the writers flushed at, their results since the last flush here. */
  private final NavigableMap<Long, List<R>> results = new TreeMap<>();

  private long lastCheckpointId;

  @Override
  public void initializeState(StateInitializationContext context) throws Exception {
    super.initializeState(context);
    context.getRestoredCheckpointId().ifPresent(id -> lastCheckpointId = id);
  }

  @Override
  public void processElement(StreamRecord<CommittableMessage<R>> element) {
    if (element.getValue() instanceof CommittableWithLineage<R> written) {
      results
          .computeIfAbsent(written.getCheckpointIdOrEOI(), id -> new ArrayList<>())
          .add(written.getCommittable());
    }
  }

  @Override
  public void finish() throws Exception {
    prepareSnapshotPreBarrier(lastCheckpointId + 1);
    super.finish();
  }

  /**
   * Emits one committable per checkpoint whose results arrived, in order: those of an earlier
   * checkpoint that never reached this task under their own id, the rest (this checkpoint's, and
   * those of the writers' end of input) under {@code checkpointId}; an empty one when none came.
   */
  @Override
  public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
    if (checkpointId == lastCheckpointId) {
      return; // flushed by finish() before the final checkpoint
    }
    lastCheckpointId = checkpointId;
    NavigableMap<Long, List<R>> byCommit = new TreeMap<>();
    for (Map.Entry<Long, List<R>> entry : results.entrySet()) {
      byCommit
          .computeIfAbsent(Math.min(entry.getKey(), checkpointId), id -> new ArrayList<>())
          .addAll(entry.getValue());
    }
    results.clear();
    if (byCommit.isEmpty()) {
      byCommit.put(checkpointId, List.of());
    }
    for (Map.Entry<Long, List<R>> entry : byCommit.entrySet()) {
      long id = entry.getKey();
      output.collect(new StreamRecord<>(new CommittableSummary<>(0, 1, id, 1, 0)));
      output.collect(
          new StreamRecord<>(
              new CommittableWithLineage<>(committable(id, entry.getValue()), id, 0)));
    }
  }

  /** The committable of checkpoint {@code checkpointId}: {@code written}, possibly none. */
  abstract C committable(long checkpointId, List<R> written) throws Exception;

  /** A factory of this task's manifest files of {@code table}. */
  ManifestOutputFileFactory manifestFiles(Table table) {
    return FlinkManifestUtil.createOutputFileFactory(
        () -> table,
        table.properties(),
        jobId(),
        getOperatorID().toString(),
        getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
        getRuntimeContext().getTaskInfo().getAttemptNumber());
  }

  /**
   * {@code written}'s files in a new manifest of {@code table} from {@code files}, serialized as
   * Iceberg's committers read it.
   */
  static byte[] manifest(
      Table table, ManifestOutputFileFactory files, List<WriteResult> written, long checkpointId)
      throws IOException {
    WriteResult merged = WriteResult.builder().addAll(written).build();
    DeltaManifests delta =
        FlinkManifestUtil.writeCompletedFiles(
            merged, () -> files.create(checkpointId), table.spec(), TableUtil.formatVersion(table));
    return SimpleVersionedSerialization.writeVersionAndSerialize(
        DeltaManifestsSerializer.INSTANCE, delta);
  }

  /** The job's id, which stamps the commits. */
  String jobId() {
    return getContainingTask().getEnvironment().getJobID().toString();
  }
}
