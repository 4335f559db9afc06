package io.skade.catalog;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * One row of the commit log: a pointer change of one table, as durable in the catalog and as pushed
 * to subscribers.
 *
 * @param commitSeq the global, gapless position of this commit in the log (starts at 1)
 * @param tableKey the table's key ({@link CommitFeed#commitTableKey}), to filter events by
 * @param operation what the commit did to the pointer
 * @param addedSnapshotIds the snapshots this commit added, oldest first (empty for creates, drops,
 *     renames and metadata-only commits; several for a transaction)
 * @param metadataLocation the metadata file the pointer points to after this commit; for {@link
 *     CommitOperation#DROP} and {@link CommitOperation#RENAME_FROM}, the last one it pointed to
 * @param previousMetadataLocation the metadata file the pointer pointed to before, or null when the
 *     pointer did not exist
 * @param tsMicros when the commit was stamped by the committer, microseconds since the epoch; never
 *     before the stamp of the commit before it in the log
 * @param transactionSeq for a commit of a multi-table commit that changed several tables, the
 *     {@code commitSeq} of its first commit; else 0
 * @param transactionSize for such a commit, how many commits (tables) it made; else 0
 */
public record CommitEvent(
    long commitSeq,
    String tableKey,
    CommitOperation operation,
    List<Long> addedSnapshotIds,
    String metadataLocation,
    String previousMetadataLocation,
    long tsMicros,
    long transactionSeq,
    int transactionSize) {

  /** A commit that is not part of a multi-table commit. */
  public CommitEvent(
      long commitSeq,
      String tableKey,
      CommitOperation operation,
      List<Long> addedSnapshotIds,
      String metadataLocation,
      String previousMetadataLocation,
      long tsMicros) {
    this(
        commitSeq,
        tableKey,
        operation,
        addedSnapshotIds,
        metadataLocation,
        previousMetadataLocation,
        tsMicros,
        0,
        0);
  }

  public CommitEvent {
    Objects.requireNonNull(tableKey, "tableKey");
    Objects.requireNonNull(operation, "operation");
    Objects.requireNonNull(metadataLocation, "metadataLocation");
    addedSnapshotIds = List.copyOf(addedSnapshotIds);
  }

  /** Whether this commit is one of several tables' commits made atomically together. */
  public boolean inTransaction() {
    return transactionSize > 1;
  }

  /** The newest snapshot this commit added; absent for snapshot-less commits. */
  public OptionalLong snapshotId() {
    return addedSnapshotIds.isEmpty()
        ? OptionalLong.empty()
        : OptionalLong.of(addedSnapshotIds.get(addedSnapshotIds.size() - 1));
  }
}
