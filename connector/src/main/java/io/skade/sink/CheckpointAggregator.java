package io.skade.sink;

import io.skade.maintenance.IcebergInternals;
import java.io.IOException;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.sink.ManifestOutputFileFactory;
import org.apache.iceberg.io.WriteResult;

/**
 * {@link SkadeSink}'s pre-commit step: each checkpoint's results become one manifest and one
 * committable of Iceberg's committer, which commits each as its own row delta ({@link
 * CheckpointGrouping} says why per checkpoint). Iceberg's own aggregator (iceberg-flink 1.11)
 * merges whatever it received since its last flush.
 *
 * <p>A committable is made with Iceberg's committable serializer, its type being package-private
 * ({@link IcebergInternals#committable}).
 */
final class CheckpointAggregator extends CheckpointGrouping<WriteResult, Object> {
  private static final long serialVersionUID = 1L;

  private final TableLoader tableLoader;
  private final SerializableSupplier<SimpleVersionedSerializer<Object>> serializer;

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
  public void open() throws Exception {
    super.open();
    if (!tableLoader.isOpen()) {
      tableLoader.open();
    }
    table = tableLoader.loadTable();
    committables = serializer.get();
    manifests = manifestFiles(table);
  }

  @Override
  Object committable(long checkpointId, List<WriteResult> written) throws IOException {
    return IcebergInternals.committable(
        committables,
        jobId(),
        getRuntimeContext().getOperatorUniqueID(),
        checkpointId,
        written.isEmpty() ? new byte[0] : manifest(table, manifests, written, checkpointId));
  }
}
