package io.skade.catalog;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.FileIO;

/**
 * Refuses a commit that would apply one Flink checkpoint twice: a snapshot stamped by Iceberg's
 * Flink sink with the job, operator and checkpoint of a snapshot the table already has, adding the
 * files that snapshot added.
 *
 * <p>Why: Iceberg's Flink committers skip checkpoints up to the newest one the table records for
 * their job ({@code flink.max-committed-checkpoint-id}) when they restart. Through a REST catalog
 * that check can miss a commit still in flight: the committer restarts, finds no record, the first
 * request lands, and the committer commits the same files again on the table as the first request
 * left it (apache/iceberg#14425). The catalog sees both, and refuses the second with {@link
 * CommitFailedException}; its committer fails, and after its restart finds the checkpoint
 * committed. A job that merely reuses a job id (a new run of an application with a fixed one)
 * writes new files and is not refused.
 */
final class FlinkCheckpointGuard {
  static final String JOB_ID = "flink.job-id";
  static final String OPERATOR_ID = "flink.operator-id";
  static final String MAX_COMMITTED_CHECKPOINT_ID = "flink.max-committed-checkpoint-id";

  private FlinkCheckpointGuard() {}

  /**
   * Checks each snapshot {@code updated} adds to {@code base} (null for a new table).
   *
   * @throws CommitFailedException naming the snapshot that already applied the checkpoint
   */
  static void check(String table, TableMetadata base, TableMetadata updated, FileIO io) {
    if (base == null) {
      return;
    }
    for (MetadataUpdate change : updated.changes()) {
      if (change instanceof MetadataUpdate.AddSnapshot add) {
        check(table, base, add.snapshot(), io);
      }
    }
  }

  private static void check(String table, TableMetadata base, Snapshot added, FileIO io) {
    Map<String, String> summary = added.summary();
    String job = summary == null ? null : summary.get(JOB_ID);
    Long checkpoint = summary == null ? null : checkpoint(summary);
    if (job == null || checkpoint == null) {
      return;
    }
    String operator = summary.get(OPERATOR_ID);
    Set<String> files = null;
    // The committer's own ancestors, newest first, back to its older checkpoints.
    for (Snapshot ancestor = parent(base, added);
        ancestor != null;
        ancestor = parent(base, ancestor)) {
      Map<String, String> their = ancestor.summary();
      if (their == null
          || !job.equals(their.get(JOB_ID))
          || operator != null
              && their.get(OPERATOR_ID) != null
              && !operator.equals(their.get(OPERATOR_ID))) {
        continue;
      }
      Long committed = checkpoint(their);
      if (committed == null || committed < checkpoint) {
        return; // an older checkpoint of the job: the newer ones are past
      }
      if (committed.equals(checkpoint)) {
        if (files == null) {
          files = addedFiles(added, io);
        }
        Set<String> again = new HashSet<>(files);
        again.retainAll(addedFiles(ancestor, io));
        if (!again.isEmpty()) {
          throw new CommitFailedException(
              "Cannot commit to %s: snapshot %d already committed"
                  + " checkpoint %d of Flink job %s%s with the same files (%d of them, such as %s);"
                  + " this commit would apply it twice, as a retry of a commit whose answer was"
                  + " lost does (apache/iceberg#14425). The job's committer finds the checkpoint"
                  + " committed when it restarts",
              table,
              ancestor.snapshotId(),
              checkpoint,
              job,
              operator == null ? "" : " (operator " + operator + ")",
              again.size(),
              again.iterator().next());
        }
      }
    }
  }

  private static Snapshot parent(TableMetadata base, Snapshot snapshot) {
    return snapshot.parentId() == null ? null : base.snapshot(snapshot.parentId());
  }

  private static Long checkpoint(Map<String, String> summary) {
    String value = summary.get(MAX_COMMITTED_CHECKPOINT_ID);
    try {
      return value == null ? null : Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** The paths of the data and delete files {@code snapshot} added. */
  private static Set<String> addedFiles(Snapshot snapshot, FileIO io) {
    Set<String> paths = new HashSet<>();
    for (ContentFile<?> file : snapshot.addedDataFiles(io)) {
      paths.add(file.location());
    }
    for (ContentFile<?> file : snapshot.addedDeleteFiles(io)) {
      paths.add(file.location());
    }
    return paths;
  }
}
