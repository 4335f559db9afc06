package io.skade.sink;

import io.skade.maintenance.IcebergInternals;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableSummary;
import org.apache.flink.streaming.api.connector.sink2.CommittableWithLineage;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.sink.DeltaManifests;
import org.apache.iceberg.flink.sink.DeltaManifestsSerializer;
import org.apache.iceberg.flink.sink.FlinkManifestUtil;
import org.apache.iceberg.flink.sink.ManifestOutputFileFactory;
import org.apache.iceberg.io.WriteResult;

/**
 * The sink's pre-commit step (one task): the writers' results of each checkpoint become one
 * manifest and one committable of Iceberg's committer, which commits each as its own row delta, in
 * checkpoint order. Results are grouped by the checkpoint at which the writers flushed them.
 *
 * <p>Iceberg's own aggregator (iceberg-flink 1.11) merges whatever it received since its last
 * flush. When a checkpoint is aborted after the writers flushed for it (a savepoint taken while a
 * checkpoint was under way, a declined checkpoint), two flushes of one writer then become one row
 * delta, whose rows share a data sequence number: the later flush's equality deletes do not apply
 * to the earlier flush's rows, and a key upserted in both is held twice. Committed separately, the
 * later flush's deletes apply as they do between any two checkpoints.
 *
 * <p>A committable is made with Iceberg's committable serializer, its type being package-private
 * ({@link IcebergInternals#committable}).
 */
final class CheckpointAggregator extends AbstractStreamOperator<CommittableMessage<Object>>
    implements OneInputStreamOperator<CommittableMessage<WriteResult>, CommittableMessage<Object>> {
  private static final long serialVersionUID = 1L;

  private final TableLoader tableLoader;
  private final SerializableSupplier<SimpleVersionedSerializer<Object>> serializer;

  /** Per checkpoint the writers flushed at, their results since the last flush here. */
  private final NavigableMap<Long, List<WriteResult>> results = new TreeMap<>();

  private long lastCheckpointId;
  private transient Table table;
  private transient ManifestOutputFileFactory manifests;
  private transient SimpleVersionedSerializer<Object> committables;

  /**
   * @param tableLoader the table the manifests are written for (its FileIO, spec, properties)
   * @param serializer Iceberg's committable serializer
   */
  CheckpointAggregator(
      TableLoader tableLoader, SerializableSupplier<SimpleVersionedSerializer<Object>> serializer) {
    this.tableLoader = tableLoader;
    this.serializer = serializer;
  }

  @Override
  public void initializeState(StateInitializationContext context) throws Exception {
    super.initializeState(context);
    context.getRestoredCheckpointId().ifPresent(id -> lastCheckpointId = id);
  }

  @Override
  public void open() throws Exception {
    super.open();
    if (!tableLoader.isOpen()) {
      tableLoader.open();
    }
    table = tableLoader.loadTable();
    committables = serializer.get();
    manifests =
        FlinkManifestUtil.createOutputFileFactory(
            () -> table,
            table.properties(),
            getContainingTask().getEnvironment().getJobID().toString(),
            getOperatorID().toString(),
            getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
            getRuntimeContext().getTaskInfo().getAttemptNumber());
  }

  @Override
  public void processElement(StreamRecord<CommittableMessage<WriteResult>> element) {
    if (element.getValue() instanceof CommittableWithLineage<WriteResult> written) {
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
  public void prepareSnapshotPreBarrier(long checkpointId) throws IOException {
    if (checkpointId == lastCheckpointId) {
      return; // flushed by finish() before the final checkpoint
    }
    lastCheckpointId = checkpointId;
    NavigableMap<Long, List<WriteResult>> byCommit = new TreeMap<>();
    for (Map.Entry<Long, List<WriteResult>> entry : results.entrySet()) {
      byCommit
          .computeIfAbsent(Math.min(entry.getKey(), checkpointId), id -> new ArrayList<>())
          .addAll(entry.getValue());
    }
    results.clear();
    if (byCommit.isEmpty()) {
      emit(checkpointId, new byte[0]);
    }
    for (Map.Entry<Long, List<WriteResult>> entry : byCommit.entrySet()) {
      emit(entry.getKey(), manifest(entry.getValue(), entry.getKey()));
    }
  }

  /** The results' files in a new manifest, as Iceberg's committer reads it. */
  private byte[] manifest(List<WriteResult> written, long checkpointId) throws IOException {
    WriteResult merged = WriteResult.builder().addAll(written).build();
    DeltaManifests delta =
        FlinkManifestUtil.writeCompletedFiles(
            merged,
            () -> manifests.create(checkpointId),
            table.spec(),
            TableUtil.formatVersion(table));
    return SimpleVersionedSerialization.writeVersionAndSerialize(
        DeltaManifestsSerializer.INSTANCE, delta);
  }

  private void emit(long checkpointId, byte[] manifest) throws IOException {
    Object committable =
        IcebergInternals.committable(
            committables,
            getContainingTask().getEnvironment().getJobID().toString(),
            getRuntimeContext().getOperatorUniqueID(),
            checkpointId,
            manifest);
    output.collect(new StreamRecord<>(new CommittableSummary<>(0, 1, checkpointId, 1, 0)));
    output.collect(new StreamRecord<>(new CommittableWithLineage<>(committable, checkpointId, 0)));
  }
}
