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
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.flink.sink.DeltaManifests;
import org.apache.iceberg.flink.sink.DeltaManifestsSerializer;
import org.apache.iceberg.flink.sink.FlinkManifestUtil;
import org.apache.iceberg.flink.sink.SinkUtil;
import org.apache.iceberg.io.WriteResult;
import org.apache.iceberg.util.PropertyUtil;
import org.apache.iceberg.util.Tasks;
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

  /**
   * Commits {@code committable}, unless its tables record it already. A transaction refused because
   * a table moved since it was staged (another writer's commit) is staged again on the tables as
   * they are then, with the most retries and waits the tables' {@code commit.retry.*} properties
   * allow, as Iceberg retries a table's own commits.
   */
  private void commit(MultiTableCommittable committable) throws IOException {
    Map<TableIdentifier, DeltaManifests> manifests = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> written : committable.manifests().entrySet()) {
      manifests.put(
          TableIdentifier.parse(written.getKey()),
          SimpleVersionedSerialization.readVersionAndDeSerialize(
              DeltaManifestsSerializer.INSTANCE, written.getValue()));
    }
    Map<TableIdentifier, Table> tables = load(manifests.keySet());
    if (!committed(tables, committable)) {
      // The files are read only now: a committed checkpoint's manifests may be gone.
      Map<TableIdentifier, WriteResult> files = new LinkedHashMap<>();
      for (Map.Entry<TableIdentifier, Table> table : tables.entrySet()) {
        Table loaded = table.getValue();
        files.put(
            table.getKey(),
            FlinkManifestUtil.readCompletedFiles(
                manifests.get(table.getKey()), loaded.io(), loaded.specs()));
      }
      commitWithRetries(committable, tables, files);
    }
    deleteManifests(tables, manifests, committable);
  }

  private void commitWithRetries(
      MultiTableCommittable committable,
      Map<TableIdentifier, Table> tables,
      Map<TableIdentifier, WriteResult> files) {
    List<Map<String, String>> properties = tables.values().stream().map(Table::properties).toList();
    Map<TableIdentifier, Staged> staged = new HashMap<>();
    AtomicBoolean first = new AtomicBoolean(true); // the first attempt takes the tables just loaded
    try {
      Tasks.foreach(committable)
          .retry(
              (int)
                  most(
                      properties,
                      TableProperties.COMMIT_NUM_RETRIES,
                      TableProperties.COMMIT_NUM_RETRIES_DEFAULT))
          .exponentialBackoff(
              most(
                  properties,
                  TableProperties.COMMIT_MIN_RETRY_WAIT_MS,
                  TableProperties.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT),
              most(
                  properties,
                  TableProperties.COMMIT_MAX_RETRY_WAIT_MS,
                  TableProperties.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT),
              most(
                  properties,
                  TableProperties.COMMIT_TOTAL_RETRY_TIME_MS,
                  TableProperties.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT),
              2.0)
          .onlyRetryOn(CommitFailedException.class)
          .throwFailureWhenFinished()
          .run(
              attempt ->
                  commitOnce(
                      attempt,
                      first.getAndSet(false) ? tables : load(files.keySet()),
                      files,
                      staged));
    } catch (CommitFailedException e) {
      throw new CommitFailedException(
          e,
          "skade multi-table sink: checkpoint %d of Flink job %s could not be committed to %s;"
              + " every attempt found a table moved by another writer's commit (the attempts and"
              + " waits are the table properties commit.retry.*)",
          committable.checkpointId(),
          committable.jobId(),
          files.keySet());
    }
  }

  /** A table's part of the transaction, staged on the table whose main was {@code base}. */
  private record Staged(TableCommit commit, Long base) {}

  /**
   * One attempt on the tables as they are now ({@code tables}): checked for the checkpoint, and
   * committed; a table's part is staged again only when its main moved since it was staged, so that
   * an attempt after a refusal is as short as it can be.
   */
  private void commitOnce(
      MultiTableCommittable committable,
      Map<TableIdentifier, Table> tables,
      Map<TableIdentifier, WriteResult> files,
      Map<TableIdentifier, Staged> staged) {
    if (committed(tables, committable)) {
      return; // a transaction whose answer was lost landed; the guard refused it again
    }
    List<TableCommit> commits = new ArrayList<>();
    for (Map.Entry<TableIdentifier, Table> table : tables.entrySet()) {
      Snapshot head = table.getValue().currentSnapshot();
      Long main = head == null ? null : head.snapshotId();
      Staged part = staged.get(table.getKey());
      if (part == null || !Objects.equals(part.base(), main)) {
        part =
            new Staged(
                stage(table.getKey(), table.getValue(), files.get(table.getKey()), committable),
                main);
        staged.put(table.getKey(), part);
      }
      commits.add(part.commit());
    }
    connection().commitTransaction(commits);
  }

  private Map<TableIdentifier, Table> load(Collection<TableIdentifier> identifiers) {
    Map<TableIdentifier, Table> tables = new LinkedHashMap<>();
    for (TableIdentifier table : identifiers) {
      tables.put(table, connection().catalog().loadTable(table));
    }
    return tables;
  }

  /** Whether a table records the committable's checkpoint: then all do, and it is committed. */
  private static boolean committed(
      Map<TableIdentifier, Table> tables, MultiTableCommittable committable) {
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
        return true;
      }
    }
    return false;
  }

  /** The largest value of the retry property {@code key} among the tables'. */
  private static long most(List<Map<String, String>> properties, String key, long byDefault) {
    return properties.stream()
        .mapToLong(table -> PropertyUtil.propertyAsLong(table, key, byDefault))
        .max()
        .orElse(byDefault);
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
