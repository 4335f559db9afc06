package io.skade.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.sink.TableCompaction;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Compaction by Iceberg's own Flink rewrite operators ({@link TableCompaction}) on a folding table
 * ({@link MaintainedTable}): Iceberg's read of the table is the same before and after, the
 * compaction is a {@code replace} snapshot with no changelog rows, the delete files it leaves
 * dangling are gone, and the changelog of later commits stays exact. A commit of deletes that lands
 * while a rewrite is under way still deletes the rows it deletes, from the rewritten files.
 */
class TableCompactionTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "bucket", Types.IntegerType.get()),
              Types.NestedField.optional(3, "v", Types.StringType.get())),
          Set.of(1));
  private static final TableIdentifier KEYED = TableIdentifier.of("db", "keyed");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @ParameterizedTest(name = "partitioned {0}")
  @ValueSource(booleans = {false, true})
  void aCompactionFoldsTheDeletesAndChangesNoRow(boolean partitioned) throws Exception {
    PartitionSpec spec =
        partitioned
            ? PartitionSpec.builderFor(SCHEMA).bucket("id", 4).build()
            : PartitionSpec.unpartitioned();
    Table table = catalog.get().createTable(KEYED, SCHEMA, spec);
    Random random = new Random(partitioned ? 7 : 11);
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < 12; commit++) {
      writer.upsert(rows(random, 25));
      if (commit % 3 == 2) {
        writer.deleteKeys(List.of(row(random.nextInt(60), null)));
      }
    }
    table.refresh();
    Map<Long, String> before = read(table, null);
    Snapshot compacted = table.currentSnapshot();
    assertThat(deleteFiles(table)).isNotEmpty();

    TableCompaction.Result result = TableCompaction.run(env(), catalog.properties(), KEYED);

    table.refresh();
    Snapshot replace = table.currentSnapshot();
    assertThat(replace.operation()).isEqualTo("replace");
    assertThat(result.snapshotId()).isEqualTo(replace.snapshotId());
    assertThat(result.rewrittenDataFiles()).isGreaterThan(result.addedDataFiles());
    assertThat(result.removedDeleteFiles()).isPositive();
    assertThat(read(table, null)).isEqualTo(before);
    assertThat(deleteFiles(table)).as("every delete folded into the rewritten files").isEmpty();
    assertThat(changes(table, compacted.snapshotId(), replace.snapshotId()))
        .as("a replace snapshot changes no row")
        .isEmpty();

    // Later commits: the changelog from the compacted snapshot on is still exact.
    for (int commit = 0; commit < 4; commit++) {
      writer.upsert(rows(random, 10));
    }
    table.refresh();
    Map<Long, String> applied = new HashMap<>(before);
    for (ChangeRow change :
        changes(table, replace.snapshotId(), table.currentSnapshot().snapshotId())) {
      apply(change, applied);
    }
    assertThat(applied).isEqualTo(read(table, null));
  }

  @Test
  void deletesCommittedWhileARewriteRunsStillApplyToTheRewrittenFiles() throws Exception {
    Table table = catalog.get().createTable(KEYED, SCHEMA);
    TableWriter writer = new TableWriter(table);
    Random random = new Random(3);
    for (int commit = 0; commit < 6; commit++) {
      writer.upsert(rows(random, 20));
    }
    table.refresh();
    Snapshot start = table.currentSnapshot();
    // The rewrite reads the table at its start and writes its rows anew...
    List<Record> live = new ArrayList<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(start.snapshotId()).build()) {
      records.forEach(r -> live.add(r.copy()));
    }
    List<DataFile> rewritten = writer.writeDataFiles(live);
    Set<DataFile> old = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> old.add(task.file()));
    }
    // ... while a job commits upserts and deletes of keys the rewrite carries.
    long key = live.get(0).get(0, Long.class);
    long other = live.get(1).get(0, Long.class);
    writer.upsert(List.of(row(key, "after the rewrite began")));
    writer.deleteKeys(List.of(row(other, null)));
    table.refresh();
    Map<Long, String> expected = read(table, null);
    Set<String> deletesSinceStart = new HashSet<>();
    deleteFiles(table).stream()
        .filter(d -> d.dataSequenceNumber() > start.sequenceNumber())
        .forEach(d -> deletesSinceStart.add(d.location()));

    RewriteFiles rewrite =
        MaintainedTable.of(table, List::of)
            .newRewrite()
            .validateFromSnapshot(start.snapshotId())
            .dataSequenceNumber(start.sequenceNumber());
    old.forEach(rewrite::deleteFile);
    rewritten.forEach(rewrite::addFile);
    rewrite.commit();

    table.refresh();
    assertThat(read(table, null)).isEqualTo(expected);
    assertThat(deleteFiles(table))
        .extracting(DeleteFile::location)
        .as("the deletes from before the rewrite are folded, the later ones kept")
        .containsExactlyInAnyOrderElementsOf(deletesSinceStart);
  }

  private static StreamExecutionEnvironment env() {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    return env;
  }

  private static List<Record> rows(Random random, int count) {
    Map<Long, Record> rows = new HashMap<>();
    for (int i = 0; i < count; i++) {
      long id = random.nextInt(60);
      rows.put(id, row(id, "v" + random.nextInt(1000)));
    }
    return new ArrayList<>(rows.values());
  }

  private static Record row(long id, String v) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, (int) (id % 4));
    row.set(2, v);
    return row;
  }

  private static Map<Long, String> read(Table table, Long snapshotId) throws IOException {
    Map<Long, String> rows = new HashMap<>();
    IcebergGenerics.ScanBuilder scan = IcebergGenerics.read(table);
    if (snapshotId != null) {
      scan = scan.useSnapshot(snapshotId);
    }
    try (CloseableIterable<Record> records = scan.build()) {
      for (Record r : records) {
        assertThat(rows.put(r.get(0, Long.class), r.get(2, String.class))).isNull();
      }
    }
    return rows;
  }

  /** The live delete files of the table's current snapshot, whether they apply or not. */
  private static List<DeleteFile> deleteFiles(Table table) {
    List<DeleteFile> files = new ArrayList<>();
    Snapshot current = table.currentSnapshot();
    current
        .deleteManifests(table.io())
        .forEach(
            manifest -> {
              try (ManifestReader<DeleteFile> reader =
                  ManifestFiles.readDeleteManifest(manifest, table.io(), table.specs())) {
                reader.forEach(file -> files.add(file.copyWithoutStats()));
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    return files;
  }

  private static List<ChangeRow> changes(Table table, long from, long to) {
    return new ChangelogReader(table, ChangelogOptions.defaults()).read(from, to);
  }

  private static void apply(ChangeRow change, Map<Long, String> rows) {
    Record row = change.row();
    long id = row.get(0, Long.class);
    if (change.type().removes()) {
      assertThat(rows.remove(id)).as("%s retracts a row there", change).isNotNull();
    } else {
      assertThat(rows.put(id, row.get(2, String.class))).as("%s meets no row", change).isNull();
    }
  }
}
