package io.skade.catalog;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.BaseMetastoreTableOperations;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One table's operations: refresh reads the pointer; commit writes the new metadata file first,
 * then hands a compare-and-swap of the pointer to the catalog's {@link Committer}, which also
 * refuses to remove snapshots a live consumer still needs ({@link ExpiryGuard}). A metadata file
 * this JVM wrote is read back from memory ({@link CommittedMetadata}).
 */
final class SkadeTableOperations extends BaseMetastoreTableOperations {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeTableOperations.class);

  /** How often a metadata file that cannot be read yet is retried (Iceberg's default). */
  private static final int REFRESH_RETRIES = 20;

  /**
   * How many times a re-appliable change follows commits that land before it; each of them is lost
   * only to another commit that won, so this bounds a storm, not a normal race.
   */
  private static final int MAX_REAPPLY_ROUNDS = 100;

  private final SkadeCatalog catalog;
  private final TableIdentifier identifier;
  private final String tableKey;
  private final String fullName;

  SkadeTableOperations(SkadeCatalog catalog, TableIdentifier identifier) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.tableKey = TableKeys.tableKey(identifier);
    this.fullName = catalog.name() + "." + identifier;
  }

  @Override
  protected void doRefresh() {
    TablePointer pointer = catalog.readPointer(tableKey);
    if (pointer != null) {
      // The first load checks that the file is there; later ones follow this table's commits.
      boolean first = currentMetadataLocation() == null;
      refreshFromMetadataLocation(
          pointer.metadataLocation(),
          null,
          REFRESH_RETRIES,
          location ->
              first
                  ? CommittedMetadata.read(io(), location)
                  : CommittedMetadata.readKnown(io(), location));
    } else if (currentMetadataLocation() != null) {
      throw new NoSuchTableException("Table %s was dropped or renamed", fullName);
    } else {
      disableRefresh();
    }
  }

  @Override
  protected void doCommit(TableMetadata base, TableMetadata metadata) {
    Committer committer = catalog.committer(); // a follower fails here, before writing any file
    if (base == null) {
      commit(committer, null, metadata);
      return;
    }
    Reapply reapply = Reapply.of(fullName, base, metadata);
    TableMetadata onto = base;
    TableMetadata target = metadata;
    for (int round = 1; ; round++) {
      // Checked before any other work: a stale commit is refused without writing a file.
      TablePointer current = catalog.readPointer(tableKey);
      if (current == null) {
        throw dropped();
      }
      if (!current.metadataLocation().equals(onto.metadataFileLocation())) {
        if (reapply == null) {
          throw stale(current.metadataLocation(), onto.metadataFileLocation());
        }
        onto = CommittedMetadata.readKnown(io(), current.metadataLocation());
        target = reapply.onto(onto);
      }
      try {
        commit(committer, onto, target);
        return;
      } catch (StaleMetadataException e) {
        // Another commit landed between the read and the swap; only a re-appliable change
        // follows it, and each round is lost only to a commit that won.
        if (reapply == null || round == MAX_REAPPLY_ROUNDS) {
          throw e;
        }
      }
    }
  }

  /** Writes {@code metadata}'s file and swaps the pointer from {@code base} (null: creates). */
  private void commit(Committer committer, TableMetadata base, TableMetadata metadata) {
    FlinkCheckpointGuard.check(fullName, base, metadata, io());
    boolean register = base == null && metadata.metadataFileLocation() != null;
    String newLocation =
        register ? metadata.metadataFileLocation() : writeNewMetadata(metadata, nextVersion(base));
    List<Long> added = addedSnapshots(metadata);
    Map<Long, List<DataFile>> appended = KnownAppend.added(this, metadata, added);
    if (!register) {
      // before the swap: the commit feed may wake a reader of this file before submit returns
      CommittedMetadata.written(tableKey, newLocation, metadata, base, io(), added, appended);
    }
    String baseLocation = base == null ? null : base.metadataFileLocation();
    CommitOperation operation =
        base != null
            ? CommitOperation.UPDATE
            : register ? CommitOperation.REGISTER : CommitOperation.CREATE;
    long snapshotId = currentSnapshotId(metadata);
    List<Snapshot> removed = ExpiryGuard.removedSnapshots(base, metadata);
    try {
      submit(
          committer,
          base,
          baseLocation,
          operation,
          added,
          newLocation,
          snapshotId,
          removed,
          () -> readManifestLists(metadata, appended.keySet()));
    } catch (CommitFailedException
        | AlreadyExistsException
        | NoSuchNamespaceException
        | NoSuchTableException
        | ExpiryBlockedException
        | IdempotencyKeyUsedException e) {
      // The swap was refused, so nothing points at the file just written; a registered file
      // is the user's and stays.
      if (!register) {
        CommittedMetadata.deleted(newLocation);
        io().deleteFile(newLocation);
      }
      throw e;
    }
  }

  private void submit(
      Committer committer,
      TableMetadata base,
      String baseLocation,
      CommitOperation operation,
      List<Long> added,
      String newLocation,
      long snapshotId,
      List<Snapshot> removed,
      Runnable whileSyncing) {
    String namespaceKey = TableKeys.namespaceKey(identifier.namespace());
    committer.submit(
        stage -> {
          TablePointer current = stage.pointer(tableKey);
          if (base == null) {
            if (current != null) {
              throw new AlreadyExistsException("Table already exists: %s", identifier);
            }
            if (stage.namespace(namespaceKey) == null) {
              throw new NoSuchNamespaceException(
                  "Cannot create table %s. Namespace does not exist: %s (create the namespace first)",
                  identifier, identifier.namespace());
            }
          } else if (current == null) {
            throw dropped();
          } else if (!current.metadataLocation().equals(baseLocation)) {
            throw stale(current.metadataLocation(), baseLocation);
          } else {
            catalog.expiryGuard().check(stage, tableKey, fullName, base, removed);
          }
          return stage.commit(tableKey, operation, added, newLocation, snapshotId);
        },
        whileSyncing);
  }

  /**
   * Reads the manifest lists of {@code snapshots} of {@code metadata} into those snapshots, while
   * the catalog syncs their commit: Iceberg's append reads its committed manifest list back right
   * after the commit (to clean up what lost attempts wrote), from the snapshot this table's refresh
   * then returns, which is this one ({@link CommittedMetadata}). Read here, on the appending thread
   * (the snapshot caches what it read, unsynchronized), that read overlaps the sync rather than
   * taking CPU from the commit's readers after it; an error is left for that read to report.
   */
  private void readManifestLists(TableMetadata metadata, Set<Long> snapshots) {
    for (long id : snapshots) {
      try {
        metadata.snapshot(id).allManifests(io());
      } catch (RuntimeException e) {
        LOG.debug("could not read the manifest list of snapshot {} of {} ahead", id, fullName, e);
      }
    }
  }

  private NoSuchTableException dropped() {
    return new NoSuchTableException("Cannot commit to table %s: it was dropped", identifier);
  }

  private StaleMetadataException stale(String currentLocation, String baseLocation) {
    return new StaleMetadataException(
        "Cannot commit %s: metadata location %s has changed from %s",
        identifier, currentLocation, baseLocation);
  }

  /** The version of the file after {@code base}'s, as Iceberg numbers metadata files. */
  private int nextVersion(TableMetadata base) {
    return base == null ? 0 : metadataVersion(base.metadataFileLocation()) + 1;
  }

  /** The version a metadata file's name starts with ({@code 00012-<uuid>.metadata.json}), or -1. */
  private static int metadataVersion(String location) {
    String name = location.substring(location.lastIndexOf('/') + 1);
    int dash = name.indexOf('-');
    try {
      return dash < 0 ? -1 : Integer.parseInt(name.substring(0, dash));
    } catch (NumberFormatException e) {
      return -1; // not named by Iceberg's scheme: numbering starts again
    }
  }

  /** Writes {@code metadata} as the next metadata file of this table, for a multi-table commit. */
  String writeMetadata(TableMetadata metadata) {
    return writeNewMetadataIfRequired(false, metadata);
  }

  String tableKey() {
    return tableKey;
  }

  static List<Long> addedSnapshots(TableMetadata metadata) {
    return metadata.changes().stream()
        .filter(MetadataUpdate.AddSnapshot.class::isInstance)
        .map(update -> ((MetadataUpdate.AddSnapshot) update).snapshot().snapshotId())
        .toList();
  }

  static long currentSnapshotId(TableMetadata metadata) {
    return metadata.currentSnapshot() == null
        ? TablePointer.NO_SNAPSHOT
        : metadata.currentSnapshot().snapshotId();
  }

  @Override
  public FileIO io() {
    return catalog.io();
  }

  @Override
  protected String tableName() {
    return fullName;
  }
}
