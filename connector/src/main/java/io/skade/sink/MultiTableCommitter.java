package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.lineage.CommitLineage;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.flink.sink.DeltaManifests;
import org.apache.iceberg.flink.sink.DeltaManifestsSerializer;
import org.apache.iceberg.flink.sink.FlinkManifestUtil;
import org.apache.iceberg.flink.sink.SinkUtil;
import org.apache.iceberg.io.WriteResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits each checkpoint of a {@link SkadeMultiTableSink} as one catalog transaction: a row delta
 * per table written, all tables advancing together with consecutive {@code commit_seq}s, or none.
 *
 * <p>Exactly once across restarts: each table's snapshot is stamped, as Iceberg's Flink committers
 * stamp theirs, with the job, the pre-commit operator and the checkpoint ({@code flink.job-id},
 * {@code flink.operator-id}, {@code flink.max-committed-checkpoint-id}). Flink hands a restarted
 * committer the committables of its last checkpoint again; one whose checkpoint a table already
 * records was committed, on every table of it, and is skipped. A transaction sent again after its
 * answer was lost is refused by the catalog's checkpoint guard; the retry then finds it committed.
 */
final class MultiTableCommitter implements Committer<MultiTableCommittable> {
  private static final Logger LOG = LoggerFactory.getLogger(MultiTableCommitter.class);

  /** Attempts of one transaction whose tables other writers moved meanwhile. */
  private static final int ATTEMPTS = 5;

  private final Map<String, String> catalogProperties;
  private final String actor;
  private CatalogConnection connection;

  MultiTableCommitter(Map<String, String> catalogProperties, String actor) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.actor = actor;
  }

  @Override
  public void commit(Collection<CommitRequest<MultiTableCommittable>> requests) throws IOException {
    List<MultiTableCommittable> inOrder = new ArrayList<>();
    for (CommitRequest<MultiTableCommittable> request : requests) {
      inOrder.add(request.getCommittable());
    }
    inOrder.sort(Comparator.comparingLong(MultiTableCommittable::checkpointId));
    for (MultiTableCommittable committable : inOrder) {
      if (!committable.manifests().isEmpty()) {
        commit(committable);
      }
    }
  }

  private void commit(MultiTableCommittable committable) throws IOException {
    Map<TableIdentifier, DeltaManifests> manifests = manifests(committable);
    for (int attempt = 1; ; attempt++) {
      Map<TableIdentifier, Table> tables = new LinkedHashMap<>();
      for (String name : committable.manifests().keySet()) {
        TableIdentifier table = TableIdentifier.parse(name);
        tables.put(table, connection().catalog().loadTable(table));
      }
      for (Map.Entry<TableIdentifier, Table> table : tables.entrySet()) {
        long committed =
            committedCheckpoint(table.getValue(), committable.jobId(), committable.operatorId());
        if (committed >= committable.checkpointId()) {
          LOG.info(
              "checkpoint {} of Flink job {} is committed already ({} records checkpoint {});"
                  + " skipping it",
              committable.checkpointId(),
              committable.jobId(),
              table.getKey(),
              committed);
          deleteManifests(tables, manifests, committable);
          return;
        }
      }
      List<TableCommit> commits = new ArrayList<>();
      for (Map.Entry<TableIdentifier, Table> table : tables.entrySet()) {
        Table loaded = table.getValue();
        WriteResult files =
            FlinkManifestUtil.readCompletedFiles(
                manifests.get(table.getKey()), loaded.io(), loaded.specs());
        commits.add(stage(table.getKey(), loaded, files, committable));
      }
      try {
        connection().commitTransaction(commits);
      } catch (CommitFailedException e) {
        if (attempt >= ATTEMPTS) {
          throw new CommitFailedException(
              e,
              "skade multi-table sink: checkpoint %d of Flink job %s could not be committed to %s"
                  + " in %d attempts; the tables kept moving under other writers' commits",
              committable.checkpointId(),
              committable.jobId(),
              tables.keySet(),
              ATTEMPTS);
        }
        LOG.info(
            "the transaction of checkpoint {} of Flink job {} was refused ({}); trying again",
            committable.checkpointId(),
            committable.jobId(),
            e.getMessage());
        continue;
      }
      deleteManifests(tables, manifests, committable);
      return;
    }
  }

  /** {@code files} as a row delta of {@code table}, stamped with the job, operator, checkpoint. */
  private TableCommit stage(
      TableIdentifier identifier, Table table, WriteResult files, MultiTableCommittable committed) {
    Transaction transaction = table.newTransaction();
    RowDelta delta = transaction.newRowDelta();
    for (DataFile file : files.dataFiles()) {
      if (file.recordCount() > 0) {
        delta.addRows(file);
      }
    }
    for (DeleteFile file : files.deleteFiles()) {
      if (file.recordCount() > 0) {
        delta.addDeletes(file);
      }
    }
    delta.set(SinkUtil.FLINK_JOB_ID, committed.jobId());
    delta.set(SinkUtil.OPERATOR_ID, committed.operatorId());
    delta.set(SinkUtil.MAX_COMMITTED_CHECKPOINT_ID, Long.toString(committed.checkpointId()));
    if (actor != null) {
      delta.set(CommitLineage.ACTOR, actor);
    }
    delta.commit();
    BaseTransaction staged = (BaseTransaction) transaction;
    return TableCommit.create(identifier, staged.startMetadata(), staged.currentMetadata());
  }

  /**
   * The newest checkpoint of {@code job}'s operator {@code operator} that {@code table}'s current
   * snapshot or an ancestor records, or -1.
   */
  static long committedCheckpoint(Table table, String job, String operator) {
    for (Snapshot snapshot = table.currentSnapshot();
        snapshot != null;
        snapshot = snapshot.parentId() == null ? null : table.snapshot(snapshot.parentId())) {
      Map<String, String> summary = snapshot.summary();
      String checkpoint = summary.get(SinkUtil.MAX_COMMITTED_CHECKPOINT_ID);
      if (checkpoint != null
          && job.equals(summary.get(SinkUtil.FLINK_JOB_ID))
          && operator.equals(summary.get(SinkUtil.OPERATOR_ID))) {
        return Long.parseLong(checkpoint);
      }
    }
    return -1;
  }

  private static Map<TableIdentifier, DeltaManifests> manifests(MultiTableCommittable committable)
      throws IOException {
    Map<TableIdentifier, DeltaManifests> manifests = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> table : committable.manifests().entrySet()) {
      manifests.put(
          TableIdentifier.parse(table.getKey()),
          SimpleVersionedSerialization.readVersionAndDeSerialize(
              DeltaManifestsSerializer.INSTANCE, table.getValue()));
    }
    return manifests;
  }

  /** The manifests that carried the files here: the commit wrote its own. */
  private static void deleteManifests(
      Map<TableIdentifier, Table> tables,
      Map<TableIdentifier, DeltaManifests> manifests,
      MultiTableCommittable committable) {
    for (Map.Entry<TableIdentifier, Table> table : tables.entrySet()) {
      FlinkManifestUtil.deleteCommittedManifests(
          table.getValue(),
          manifests.get(table.getKey()).manifests(),
          committable.jobId(),
          committable.checkpointId());
    }
  }

  private CatalogConnection connection() {
    if (connection == null) {
      // On a TaskManager: never creates a catalog (SkadeCatalog.inTask).
      connection = CatalogConnection.forWriting(SkadeCatalog.inTask(catalogProperties));
    }
    return connection;
  }

  @Override
  public void close() {
    if (connection != null) {
      connection.close();
      connection = null;
    }
  }
}
