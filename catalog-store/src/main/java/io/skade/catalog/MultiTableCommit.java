package io.skade.catalog;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.apache.iceberg.RetryableValidationException;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A commit of several tables at once ({@link SkadeCatalog#commitTransaction}): every table's {@link
 * TableCommit} is validated against its current metadata and its new metadata file written, then
 * one mutation of the {@link Committer} checks every table's pointer against the metadata the
 * commit was built on and moves all of them in one batch, with consecutive {@code commitSeq}s — or,
 * when one table moved meanwhile, moves none and deletes the metadata files written for the
 * attempt.
 */
final class MultiTableCommit {
  private static final Logger LOG = LoggerFactory.getLogger(MultiTableCommit.class);

  private MultiTableCommit() {}

  /** See {@link SkadeCatalog#commitTransaction}. */
  static void commit(SkadeCatalog catalog, List<TableCommit> commits) {
    Set<TableIdentifier> seen = new HashSet<>();
    for (TableCommit commit : commits) {
      if (!seen.add(commit.identifier())) {
        throw new IllegalArgumentException(
            "multi-table commit names table "
                + commit.identifier()
                + " twice; merge its changes"
                + " into one TableCommit");
      }
    }
    Committer committer = catalog.committer(); // a follower fails here, before writing any file
    // newLocation is null for a table that is only checked (requirements, no changes).
    record Prepared(
        SkadeTableOperations ops,
        TableMetadata base,
        String newLocation,
        List<Long> added,
        long snapshotId,
        List<Snapshot> removed) {}
    List<Prepared> prepared = new ArrayList<>();
    try {
      for (TableCommit commit : commits) {
        SkadeTableOperations ops = (SkadeTableOperations) catalog.newTableOps(commit.identifier());
        TableMetadata base = ops.refresh();
        if (base == null) {
          throw new NoSuchTableException("Table does not exist: %s", commit.identifier());
        }
        commit.requirements().forEach(requirement -> requirement.validate(base));
        TableMetadata.Builder builder = TableMetadata.buildFrom(base);
        try {
          commit.updates().forEach(update -> update.applyTo(builder));
        } catch (RetryableValidationException e) {
          throw new CommitFailedException(e, "Validation failed, please retry: %s", e.getMessage());
        }
        TableMetadata updated = builder.build();
        FlinkCheckpointGuard.check(ops.tableName(), base, updated, catalog.io());
        boolean changed = !updated.changes().isEmpty();
        prepared.add(
            new Prepared(
                ops,
                base,
                changed ? ops.writeMetadata(updated) : null,
                SkadeTableOperations.addedSnapshots(updated),
                SkadeTableOperations.currentSnapshotId(updated),
                ExpiryGuard.removedSnapshots(base, updated)));
      }
      if (prepared.stream().allMatch(p -> p.newLocation() == null)) {
        return;
      }
      committer.submit(
          stage -> {
            // Every table is checked, changed or not: its requirements held at its base.
            for (Prepared p : prepared) {
              TablePointer current = stage.pointer(p.ops().tableKey());
              String baseLocation = p.base().metadataFileLocation();
              if (current == null || !current.metadataLocation().equals(baseLocation)) {
                throw new CommitFailedException(
                    "Cannot commit %s: metadata location %s has changed from %s; no table of this"
                        + " multi-table commit was changed",
                    p.ops().tableName(),
                    current == null ? null : current.metadataLocation(),
                    baseLocation);
              }
              catalog
                  .expiryGuard()
                  .check(stage, p.ops().tableKey(), p.ops().tableName(), p.base(), p.removed());
            }
            long first = 0;
            int changed = 0;
            for (Prepared p : prepared) {
              if (p.newLocation() != null) {
                long seq =
                    stage.commit(
                        p.ops().tableKey(),
                        CommitOperation.UPDATE,
                        p.added(),
                        p.newLocation(),
                        p.snapshotId());
                if (changed++ == 0) {
                  first = seq;
                }
              }
            }
            stage.markTransaction(first, changed); // lineage describes it as one release
            return null;
          });
    } catch (CommitFailedException
        | NoSuchTableException
        | ExpiryBlockedException
        | IdempotencyKeyUsedException e) {
      // Nothing points at the metadata files written for this attempt.
      prepared.stream()
          .map(Prepared::newLocation)
          .filter(Objects::nonNull)
          .forEach(location -> deleteQuietly(catalog, location));
      throw e;
    }
  }

  private static void deleteQuietly(SkadeCatalog catalog, String location) {
    try {
      catalog.io().deleteFile(location);
    } catch (RuntimeException e) {
      LOG.warn("could not delete unreferenced metadata file {}", location, e);
    }
  }
}
