package io.skade.maintenance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A delete function for Iceberg's snapshot expiry ({@code ExpireSnapshots.deleteWith}) that keeps
 * every file a live delete entry of the table still names. A {@link MaintainedTable}'s expiry
 * deletes through it, and so does the {@code expire_snapshots} procedure.
 *
 * <p>Why: on format v3 one Puffin file holds the deletion vectors of several data files, each a
 * delete entry with the file's path and its own offset. A commit that replaces one of them (a new
 * delete merged into it, a rewrite or overwrite of its data file) removes only that entry. Iceberg
 * 1.11's {@code IncrementalFileCleanup}, which {@code RemoveSnapshots} uses unless snapshot ids are
 * named or snapshots outside main's ancestry are removed or left, deletes the path of every entry
 * an expired snapshot removed ({@code findFilesToDelete}), without asking whether another entry
 * still names it: the Puffin file goes while a live snapshot still reads vectors in it. ({@code
 * ReachableFileCleanup}, used otherwise, subtracts every path a live manifest names, and is safe.)
 *
 * <p>The live delete entries are read once, when the expiry first deletes a file (after its commit,
 * so from the table without the expired snapshots), from the delete manifests of every snapshot
 * left. A snapshot committed later cannot name a file no snapshot named then. A file kept here is
 * deleted by the expiry after the one that removes its last live entry. When the manifests cannot
 * be read, each delete fails and Iceberg stops deleting (it logs and goes on): files are left,
 * never lost. Deletes go one by one through the function, not as a bulk delete.
 */
public final class LiveDeletionVectors implements Consumer<String> {
  private static final Logger LOG = LoggerFactory.getLogger(LiveDeletionVectors.class);

  private final TableOperations operations;
  private final Consumer<String> delete;
  private Set<String> live; // read on the first delete; deletes may run on several threads

  private LiveDeletionVectors(TableOperations operations, Consumer<String> delete) {
    this.operations = operations;
    this.delete = delete;
  }

  /**
   * {@code delete} (null: the table's {@code FileIO}), keeping the files live delete entries of the
   * table name; on format v2 and below, which have no deletion vectors, {@code delete} itself.
   */
  public static Consumer<String> keeping(TableOperations operations, Consumer<String> delete) {
    if (operations.current().formatVersion() < 3) {
      return delete;
    }
    return new LiveDeletionVectors(
        operations, delete != null ? delete : path -> operations.io().deleteFile(path));
  }

  @Override
  public void accept(String path) {
    if (live().contains(path)) {
      LOG.info("Expiry keeps {}: a live snapshot's deletes are in it", path);
      return;
    }
    delete.accept(path);
  }

  private synchronized Set<String> live() {
    if (live == null) {
      live = liveDeleteFiles();
    }
    return live;
  }

  private Set<String> liveDeleteFiles() {
    TableMetadata current = operations.refresh();
    Map<Integer, PartitionSpec> specs = current.specsById();
    Set<String> manifests = new HashSet<>();
    Set<String> files = new HashSet<>();
    for (Snapshot snapshot : current.snapshots()) {
      for (ManifestFile manifest : snapshot.deleteManifests(operations.io())) {
        if (!manifests.add(manifest.path())) {
          continue;
        }
        // Iterating a reader gives the live entries (added or existing) only.
        try (ManifestReader<DeleteFile> reader =
            ManifestFiles.readDeleteManifest(manifest, operations.io(), specs)
                .select(List.of("file_path"))) {
          for (DeleteFile file : reader) {
            files.add(file.location());
          }
        } catch (IOException e) {
          throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
        }
      }
    }
    return files;
  }
}
