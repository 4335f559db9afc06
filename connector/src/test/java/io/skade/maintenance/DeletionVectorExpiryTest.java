package io.skade.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.relocated.com.google.common.collect.Iterables;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot expiry on format v3, where one Puffin file holds the deletion vectors of several data
 * files. A commit that replaces one of those vectors (a new delete merged into it, or a rewrite of
 * its data file) removes only that vector's entry; the others in the file stay live. When the
 * snapshot of that removal expires, Iceberg's incremental cleanup deletes every file a removed
 * entry names, by path, so the Puffin file goes while a live snapshot still reads vectors in it. A
 * {@link MaintainedTable}'s expiry keeps such a file, and still deletes it once no live vector is
 * left in it.
 *
 * <p>Each history: data files A and B; one commit deletes a row of each, so one Puffin file holds
 * both vectors; A's vector is replaced; one more append; then every snapshot but the current one
 * expires.
 */
class DeletionVectorExpiryTest {
  @TempDir Path warehouse;

  private Table table;
  private TableWriter writer;
  private DataFile a;
  private DataFile b;
  private String shared;

  @BeforeEach
  void sharedPuffinFile() {
    table =
        new HadoopTables(new Configuration())
            .create(
                KeyValue.SCHEMA,
                PartitionSpec.unpartitioned(),
                Map.of("format-version", "3"),
                warehouse.resolve("t").toString());
    writer = new TableWriter(table);
    a = Iterables.getOnlyElement(writer.append(rows(1, 2, 3)).addedDataFiles(table.io()));
    b = Iterables.getOnlyElement(writer.append(rows(4, 5, 6)).addedDataFiles(table.io()));
    Map<String, List<Long>> positions = new LinkedHashMap<>();
    positions.put(a.location(), List.of(0L)); // row 1
    positions.put(b.location(), List.of(0L)); // row 4
    List<DeleteFile> vectors = new ArrayList<>();
    writer.deletePositions(positions).addedDeleteFiles(table.io()).forEach(vectors::add);
    assertThat(vectors).as("one vector per data file").hasSize(2);
    assertThat(vectors)
        .extracting(DeleteFile::location)
        .as("in one Puffin file")
        .containsOnly(vectors.get(0).location());
    shared = vectors.get(0).location();
  }

  @Test
  void aPuffinFileOneOfWhoseVectorsWasMergedIntoANewOneStaysWhileItsOtherVectorIsLive()
      throws IOException {
    writer.deletePositions(Map.of(a.location(), List.of(1L))); // row 2; A's vector is replaced
    writer.append(rows(7));

    expireAllButCurrent(MaintainedTable.of(table, List::of));

    assertThat(Files.exists(Path.of(shared))).as("Puffin file holding B's live vector").isTrue();
    assertThat(liveVectorFiles()).contains(shared);
    assertThat(ids()).containsExactlyInAnyOrder(3L, 5L, 6L, 7L);
  }

  @Test
  void aPuffinFileOneOfWhoseVectorsARewriteRemovedStaysWhileItsOtherVectorIsLive()
      throws IOException {
    // A rewrite of A (as a compaction commits it) drops A's vector with A.
    Snapshot start = table.currentSnapshot();
    DataFile rewritten = Iterables.getOnlyElement(writer.writeDataFiles(rows(2, 3)));
    MaintainedTable.of(table, List::of)
        .newRewrite()
        .validateFromSnapshot(start.snapshotId())
        .rewriteFiles(Set.of(a), Set.of(rewritten), start.sequenceNumber())
        .commit();
    assertThat(table.currentSnapshot().removedDeleteFiles(table.io()))
        .extracting(DeleteFile::location)
        .containsExactly(shared);
    writer.append(rows(7));

    // Through a caller's delete function too (Iceberg's Flink expiry passes its own).
    List<String> deleted = new ArrayList<>();
    MaintainedTable.of(table, List::of)
        .expireSnapshots()
        .expireOlderThan(Long.MAX_VALUE)
        .retainLast(1)
        .deleteWith(
            path -> {
              deleted.add(path);
              table.io().deleteFile(path);
            })
        .commit();
    table.refresh();

    assertThat(deleted)
        .as("the rewritten data file goes")
        .contains(a.location())
        .doesNotContain(shared);
    assertThat(Files.exists(Path.of(shared))).as("Puffin file holding B's live vector").isTrue();
    assertThat(ids()).containsExactlyInAnyOrder(2L, 3L, 5L, 6L, 7L);
  }

  @Test
  void aPuffinFileWithNoLiveVectorLeftIsDeletedByTheNextExpiry() throws IOException {
    writer.deletePositions(Map.of(a.location(), List.of(1L)));
    writer.append(rows(7));
    expireAllButCurrent(MaintainedTable.of(table, List::of));
    writer.deletePositions(Map.of(b.location(), List.of(1L))); // row 5; B's vector replaced
    writer.append(rows(8));

    expireAllButCurrent(MaintainedTable.of(table, List::of));

    assertThat(liveVectorFiles()).doesNotContain(shared);
    assertThat(Files.exists(Path.of(shared))).isFalse();
    assertThat(ids()).containsExactlyInAnyOrder(3L, 6L, 7L, 8L);
  }

  /**
   * Iceberg's own expiry of the same history deletes the Puffin file (its {@code
   * IncrementalFileCleanup}); should this start failing after an Iceberg upgrade, the upstream
   * cleanup keeps shared Puffin files and {@link MaintainedTable}'s guard may be dropped.
   */
  @Test
  void icebergsOwnExpiryDeletesAPuffinFileAVectorOfALiveSnapshotIsIn() throws IOException {
    writer.deletePositions(Map.of(a.location(), List.of(1L)));
    writer.append(rows(7));

    expireAllButCurrent(table);

    assertThat(liveVectorFiles()).contains(shared);
    assertThat(Files.exists(Path.of(shared))).isFalse();
    assertThatThrownBy(this::ids)
        .isInstanceOf(NotFoundException.class)
        .hasMessageContaining(shared);
  }

  private void expireAllButCurrent(Table expiring) {
    expiring.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit();
    table.refresh();
    assertThat(table.snapshots()).hasSize(1);
  }

  /** The files of the deletes the current snapshot applies. */
  private List<String> liveVectorFiles() throws IOException {
    List<String> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> task.deletes().forEach(delete -> files.add(delete.location())));
    }
    return files;
  }

  private List<Long> ids() throws IOException {
    List<Long> ids = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(record -> ids.add((Long) record.getField("id")));
    }
    return ids;
  }

  private static List<Record> rows(long... ids) {
    List<Record> rows = new ArrayList<>();
    for (long id : ids) {
      rows.add(KeyValue.row(id, "v" + id));
    }
    return rows;
  }
}
