package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An append of a skade table hands its commit's readers the data files it added exactly as the
 * snapshot's manifests list them (Iceberg's own {@code addedDataFiles} is the reference), including
 * the sequence number of an attempt that won after a lost one; and hands over nothing whenever the
 * files it was given are not provably all the snapshot added.
 */
class KnownAppendTest {
  @TempDir Path warehouse;

  /** Per snapshot a listener was handed files of, those files. */
  private final Map<Long, List<DataFile>> handedOver = new HashMap<>();

  @BeforeEach
  void listen() {
    SkadeRuntime.reset(); // the listener below lives as long as the runtime
    CommittedMetadata.listen(
        (tableKey, metadata, io, added, appendedFiles) -> {
          synchronized (handedOver) {
            handedOver.putAll(appendedFiles);
          }
        });
  }

  @AfterEach
  void forget() {
    SkadeRuntime.reset();
  }

  @Test
  void mergedAndFastAppendsHandOverTheirFilesAsTheManifestsListThem() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      table.newAppend().appendFile(Catalogs.dataFile("a")).commit();
      long merged = table.currentSnapshot().snapshotId();
      DataFile twice = Catalogs.dataFile("c");
      table
          .newFastAppend()
          .appendFile(Catalogs.dataFile("b"))
          .appendFile(twice)
          .appendFile(twice)
          .commit();
      long fast = table.currentSnapshot().snapshotId();

      assertThat(handedOver).containsOnlyKeys(merged, fast);
      assertThat(listed(handedOver.get(merged))).isEqualTo(icebergAdded(table, merged));
      assertThat(listed(handedOver.get(fast))).isEqualTo(icebergAdded(table, fast)).hasSize(2);
    }
  }

  @Test
  void anAppendThatLostToAnotherCommitHandsOverTheSequenceNumberOfTheAttemptThatWon()
      throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "first");
      AtomicBoolean interfered = new AtomicBoolean();
      // Between the append's first attempt writing its file and the swap, another writer wins.
      CommittedMetadata.listen(
          (tableKey, metadata, io, added, appendedFiles) -> {
            if (!appendedFiles.isEmpty() && interfered.compareAndSet(false, true)) {
              Table other = catalog.loadTable(TableIdentifier.of(Catalogs.DB, "t"));
              CompletableFuture.runAsync(() -> Catalogs.append(other, "other")).join();
            }
          });
      table.newAppend().appendFile(Catalogs.dataFile("mine")).commit();
      long mine = table.currentSnapshot().snapshotId();

      assertThat(interfered).isTrue();
      assertThat(table.currentSnapshot().sequenceNumber())
          .isEqualTo(3); // retried after the other append (2)
      assertThat(listed(handedOver.get(mine))).isEqualTo(icebergAdded(table, mine));
    }
  }

  @Test
  void nothingIsHandedOverForFilesNotProvablyAllTheSnapshotAdded() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      List<Long> snapshots = new ArrayList<>();

      table
          .newAppend()
          .appendFile(Catalogs.dataFile("a"))
          .appendManifest(manifest(table, "in-manifest"))
          .commit();
      snapshots.add(table.currentSnapshot().snapshotId());
      var transaction = table.newTransaction();
      transaction.newAppend().appendFile(Catalogs.dataFile("b")).commit();
      transaction.commitTransaction();
      snapshots.add(table.currentSnapshot().snapshotId());
      table.newRowDelta().addRows(Catalogs.dataFile("c")).commit();
      snapshots.add(table.currentSnapshot().snapshotId());
      Table v3 =
          catalog
              .buildTable(TableIdentifier.of(Catalogs.DB, "v3"), Catalogs.SCHEMA)
              .withProperty(TableProperties.FORMAT_VERSION, "3")
              .create();
      v3.newAppend().appendFile(Catalogs.dataFile("d")).commit();
      snapshots.add(v3.currentSnapshot().snapshotId());

      assertThat(icebergAdded(table, snapshots.get(0))).hasSize(2);
      assertThat(handedOver).doesNotContainKeys(snapshots.toArray(Long[]::new));
    }
  }

  private static ManifestFile manifest(Table table, String fileName) throws Exception {
    ManifestWriter<DataFile> writer =
        ManifestFiles.write(
            PartitionSpec.unpartitioned(),
            table.io().newOutputFile(table.location() + "/metadata/" + fileName + "-m0.avro"));
    try (writer) {
      writer.add(Catalogs.dataFile(fileName));
    }
    return writer.toManifestFile();
  }

  /** Per file Iceberg's manifests say {@code snapshotId} added, what a reader relies on. */
  private static List<String> icebergAdded(Table table, long snapshotId) {
    List<DataFile> added = new ArrayList<>();
    table.snapshot(snapshotId).addedDataFiles(table.io()).forEach(added::add);
    return listed(added);
  }

  private static List<String> listed(List<DataFile> files) {
    return files.stream()
        .map(
            f ->
                f.location()
                    + " spec "
                    + f.specId()
                    + " records "
                    + f.recordCount()
                    + " bytes "
                    + f.fileSizeInBytes()
                    + " data seq "
                    + f.dataSequenceNumber()
                    + " file seq "
                    + f.fileSequenceNumber()
                    + " content "
                    + f.content())
        .sorted()
        .toList();
  }
}
