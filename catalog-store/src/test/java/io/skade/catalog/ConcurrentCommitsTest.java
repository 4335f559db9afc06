package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.OverwriteFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writers that only contend all succeed: a commit made on a base that has moved is refused before
 * any file is written and retried by Iceberg with the catalog's retry defaults; a metadata-only
 * change is re-applied on the moved table when what it depends on still holds. A real conflict
 * still fails, and leaves nothing half-applied.
 */
class ConcurrentCommitsTest {
  @TempDir Path warehouse;

  @Test
  void sixWritersAppendingRoundRobinToFourTablesAllSucceedWithTheCatalogsDefaults()
      throws Exception {
    int writers = 6;
    int tables = 4;
    int appends = 40;
    try (SkadeCatalog catalog =
        (SkadeCatalog)
            CatalogUtil.loadCatalog(
                SkadeCatalog.class.getName(),
                "test",
                Map.of("warehouse", warehouse.toString()),
                null)) {
      catalog.createNamespace(Catalogs.DB);
      List<TableIdentifier> ids = new ArrayList<>();
      for (int t = 0; t < tables; t++) {
        ids.add(TableIdentifier.of(Catalogs.DB, "t" + t));
        catalog.createTable(ids.get(t), Catalogs.SCHEMA); // the catalog's defaults, nothing set
      }
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        int writer = w;
        List<Table> own = ids.stream().map(catalog::loadTable).toList();
        Thread thread =
            new Thread(
                () -> {
                  try {
                    go.await();
                    for (int i = 0; i < appends; i++) {
                      own.get((writer + i) % tables)
                          .newAppend()
                          .appendFile(Catalogs.dataFile("w" + writer + "-" + i))
                          .commit();
                    }
                  } catch (Throwable e) {
                    failures.add(e);
                  }
                },
                "writer-" + w);
        thread.start();
        threads.add(thread);
      }
      go.countDown();
      for (Thread thread : threads) {
        thread.join();
      }

      assertThat(failures).isEmpty();
      for (int t = 0; t < tables; t++) {
        Set<String> expected = new HashSet<>();
        for (int w = 0; w < writers; w++) {
          for (int i = 0; i < appends; i++) {
            if ((w + i) % tables == t) {
              expected.add(Catalogs.dataFile("w" + w + "-" + i).location());
            }
          }
        }
        Table table = catalog.loadTable(ids.get(t));
        List<String> appended = addedFiles(table);
        assertThat(appended).doesNotHaveDuplicates();
        assertThat(appended).containsExactlyInAnyOrderElementsOf(expected);
        assertThat(SnapshotUtil.currentAncestors(table)).hasSize(expected.size());
      }
    }
  }

  @Test
  void aStaleAppendIsRefusedBeforeItsMetadataFileIsWritten() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table mine = Catalogs.createTable(catalog, "t");
      Catalogs.append(mine, "first");
      TableOperations ops = ((HasTableOperations) mine).operations();
      TableMetadata base = ops.refresh();
      Snapshot mineSnapshot = mine.newFastAppend().appendFile(Catalogs.dataFile("mine")).apply();
      Catalogs.append(catalog.loadTable(id("t")), "theirs");
      long files = metadataFiles("t");
      long seq = catalog.commitSeq();

      TableMetadata appended =
          TableMetadata.buildFrom(base)
              .setBranchSnapshot(mineSnapshot, SnapshotRef.MAIN_BRANCH)
              .build();
      assertThatThrownBy(() -> ops.commit(base, appended))
          .isInstanceOf(CommitFailedException.class)
          .hasMessageContaining("has changed from " + base.metadataFileLocation());

      assertThat(metadataFiles("t")).isEqualTo(files);
      assertThat(catalog.commitSeq()).isEqualTo(seq);
      assertThat(addedFiles(catalog.loadTable(id("t"))))
          .containsExactlyInAnyOrder(
              Catalogs.dataFile("first").location(), Catalogs.dataFile("theirs").location());
    }
  }

  @Test
  void metadataChangesMadeOnAMovedTableAreReappliedOnItNotRefused() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table mine = Catalogs.createTable(catalog, "t");
      Catalogs.append(mine, "first");
      TableOperations ops = ((HasTableOperations) mine).operations();
      TableMetadata base = ops.refresh();
      long first = base.currentSnapshot().snapshotId();
      Schema wider =
          new Schema(
              base.schema().columns().get(0),
              Types.NestedField.optional(base.lastColumnId() + 1, "note", Types.StringType.get()));
      TableMetadata changed =
          TableMetadata.buildFrom(base)
              .setProperties(Map.of("owner", "ops"))
              .setCurrentSchema(wider, base.lastColumnId() + 1)
              .setDefaultSortOrder(SortOrder.builderFor(wider).asc("id").build())
              .setRef("release", SnapshotRef.tagBuilder(first).build())
              .build();
      Catalogs.append(catalog.loadTable(id("t")), "theirs"); // moves the pointer under `base`
      long theirs = catalog.loadTable(id("t")).currentSnapshot().snapshotId();

      ops.commit(base, changed);

      Table now = catalog.loadTable(id("t"));
      assertThat(now.currentSnapshot().snapshotId()).isEqualTo(theirs);
      assertThat(now.properties()).containsEntry("owner", "ops");
      assertThat(now.schema().findField("note")).isNotNull();
      assertThat(now.sortOrder().fields()).hasSize(1);
      assertThat(now.refs().get("release").snapshotId()).isEqualTo(first);
      assertThat(addedFiles(now)).hasSize(2);
    }
  }

  @Test
  void aChangeWhoseRequirementNoLongerHoldsIsRefusedAndLeavesTheTableAsItWas() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table mine = Catalogs.createTable(catalog, "t");
      Catalogs.append(mine, "first");
      TableOperations ops = ((HasTableOperations) mine).operations();
      TableMetadata base = ops.refresh();
      long first = base.currentSnapshot().snapshotId();
      Catalogs.append(mine, "second");
      base = ops.refresh();
      // Both are made on `base`: a column added, and main rolled back to the first snapshot.
      TableMetadata addsColumn =
          TableMetadata.buildFrom(base)
              .setCurrentSchema(
                  new Schema(
                      base.schema().columns().get(0),
                      Types.NestedField.optional(
                          base.lastColumnId() + 1, "mine", Types.StringType.get())),
                  base.lastColumnId() + 1)
              .build();
      TableMetadata rollsBack =
          TableMetadata.buildFrom(base)
              .setRef(SnapshotRef.MAIN_BRANCH, SnapshotRef.branchBuilder(first).build())
              .build();
      Table theirs = catalog.loadTable(id("t"));
      theirs.updateSchema().addColumn("theirs", Types.IntegerType.get()).commit();
      Catalogs.append(theirs, "third");
      TableMetadata after = ((HasTableOperations) theirs).operations().refresh();
      long files = metadataFiles("t");
      TableMetadata stale = base;

      assertThatThrownBy(() -> ops.commit(stale, addsColumn))
          .isInstanceOf(CommitFailedException.class)
          .hasMessageContaining("last assigned field id changed");
      assertThatThrownBy(() -> ops.commit(stale, rollsBack))
          .isInstanceOf(CommitFailedException.class)
          .hasMessageContaining("branch main has changed");

      Table now = catalog.loadTable(id("t"));
      assertThat(metadataLocation(now)).isEqualTo(after.metadataFileLocation());
      assertThat(now.schema().findField("mine")).isNull();
      assertThat(metadataFiles("t")).isEqualTo(files);
    }
  }

  @Test
  void propertyAndSchemaUpdatesRacingAppendsSucceedWithoutAnyIcebergRetry() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Catalogs.DB);
      catalog
          .buildTable(id("t"), Catalogs.SCHEMA)
          .withProperty(TableProperties.COMMIT_NUM_RETRIES, "0") // a refusal would surface
          .create();
      AtomicBoolean updating = new AtomicBoolean(true);
      Queue<String> appended = new ConcurrentLinkedQueue<>();
      Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
      List<Thread> appenders = new ArrayList<>();
      for (int a = 0; a < 2; a++) {
        int appender = a;
        Table table = catalog.loadTable(id("t"));
        appenders.add(
            start(
                () -> {
                  for (int i = 0; updating.get(); i++) {
                    DataFile file = Catalogs.dataFile("a" + appender + "-" + i);
                    try {
                      table.newAppend().appendFile(file).commit();
                      appended.add(file.location());
                    } catch (CommitFailedException lost) {
                      // an append lost a race: not what this test is about
                    }
                  }
                },
                failures));
      }
      Table forProperties = catalog.loadTable(id("t"));
      Table forSchema = catalog.loadTable(id("t"));
      Thread properties =
          start(
              () -> {
                for (int i = 0; i < 40; i++) {
                  awaitAppends(appended, i / 2); // spread over the appends, so they race them
                  forProperties.updateProperties().set("p" + i, "v" + i).commit();
                }
              },
              failures);
      Thread columns =
          start(
              () -> {
                for (int i = 0; i < 10; i++) {
                  awaitAppends(appended, 2 * i);
                  forSchema.updateSchema().addColumn("c" + i, Types.IntegerType.get()).commit();
                }
              },
              failures);
      properties.join();
      columns.join();
      updating.set(false);
      for (Thread appender : appenders) {
        appender.join();
      }

      assertThat(failures).isEmpty();
      Table now = catalog.loadTable(id("t"));
      for (int i = 0; i < 40; i++) {
        assertThat(now.properties()).containsEntry("p" + i, "v" + i);
      }
      for (int i = 0; i < 10; i++) {
        assertThat(now.schema().findField("c" + i)).as("column c%d", i).isNotNull();
      }
      assertThat(appended).isNotEmpty();
      assertThat(addedFiles(now)).containsExactlyInAnyOrderElementsOf(appended);
    }
  }

  @Test
  void twoRowLevelDeletesOfTheSameRowStillConflictMergeOnRead() throws Exception {
    assertTheSecondOfTwoConflicts(
        (table, from, data, name) -> rowDelta(table, from, data, name), "conflicting delete files");
  }

  @Test
  void twoCopyOnWriteRewritesOfTheSameFileStillConflict() throws Exception {
    assertTheSecondOfTwoConflicts(
        (table, from, data, name) -> rewrite(table, from, data, name), "conflicting files");
  }

  /** What two writers do to one data file, each from the same snapshot. */
  private interface RowChange {
    SnapshotUpdate<?> on(Table table, long from, DataFile data, String name);
  }

  /**
   * Two writers make {@code change} from the same snapshot: the second is refused with Iceberg's
   * {@link ValidationException}, and the table is as the first left it.
   */
  private void assertTheSecondOfTwoConflicts(RowChange change, String message) throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      DataFile data = Catalogs.dataFile("rows");
      table.newAppend().appendFile(data).commit();
      long from = table.currentSnapshot().snapshotId();
      Table other = catalog.loadTable(id("t"));

      change.on(table, from, data, "mine").commit();
      long winner = table.currentSnapshot().snapshotId();
      long seq = catalog.commitSeq();
      assertThatThrownBy(() -> change.on(other, from, data, "theirs").commit())
          .isInstanceOf(ValidationException.class)
          .hasMessageContaining(message);

      assertNothingHalfApplied(catalog, winner, seq);
    }
  }

  @Test
  void anOverwriteValidatingAgainstAConcurrentAppendStillFails() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "rows");
      long from = table.currentSnapshot().snapshotId();
      Table other = catalog.loadTable(id("t"));

      Catalogs.append(table, "concurrent");
      long winner = table.currentSnapshot().snapshotId();
      long seq = catalog.commitSeq();
      assertThatThrownBy(
              () ->
                  other
                      .newOverwrite()
                      .overwriteByRowFilter(Expressions.equal("id", 1L))
                      .addFile(Catalogs.dataFile("overwrite"))
                      .validateFromSnapshot(from)
                      .conflictDetectionFilter(Expressions.equal("id", 1L))
                      .validateNoConflictingData()
                      .commit())
          .isInstanceOf(ValidationException.class)
          .hasMessageContaining("conflicting files");

      assertNothingHalfApplied(catalog, winner, seq);
    }
  }

  @Test
  void newTablesGetCommitRetryDefaultsThatTheTableOrTheCatalogOverride() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Catalogs.DB);
      Table plain = catalog.createTable(id("plain"), Catalogs.SCHEMA);
      Table own =
          catalog
              .buildTable(id("own"), Catalogs.SCHEMA)
              .withProperty(TableProperties.COMMIT_NUM_RETRIES, "7")
              .create();

      assertThat(plain.properties()).containsAllEntriesOf(SkadeCatalog.TABLE_DEFAULTS);
      assertThat(own.properties())
          .containsEntry(TableProperties.COMMIT_NUM_RETRIES, "7")
          .containsEntry(TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "2000");
    }
    Map<String, String> props = new HashMap<>();
    props.put("table-default." + TableProperties.COMMIT_NUM_RETRIES, "12");
    try (SkadeCatalog catalog = Catalogs.open(warehouse, props)) {
      Table table = catalog.createTable(id("catalogs"), Catalogs.SCHEMA);
      assertThat(table.properties())
          .containsEntry(TableProperties.COMMIT_NUM_RETRIES, "12")
          .containsEntry(TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "50");
    }
  }

  private static RowDelta rowDelta(Table table, long from, DataFile data, String name) {
    DeleteFile delete =
        FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
            .ofPositionDeletes()
            .withPath("/data/" + name + "-deletes.parquet")
            .withFileSizeInBytes(10)
            .withRecordCount(1)
            .withReferencedDataFile(data.location())
            .build();
    return table
        .newRowDelta()
        .addDeletes(delete)
        .validateFromSnapshot(from)
        .validateDataFilesExist(List.of(data.location()))
        .validateNoConflictingDataFiles()
        .validateNoConflictingDeleteFiles();
  }

  private static OverwriteFiles rewrite(Table table, long from, DataFile data, String name) {
    return table
        .newOverwrite()
        .deleteFile(data)
        .addFile(Catalogs.dataFile(name))
        .validateFromSnapshot(from)
        .validateNoConflictingData()
        .validateNoConflictingDeletes();
  }

  /** The winner is the table's state, and the refused commit took no commit_seq. */
  private void assertNothingHalfApplied(SkadeCatalog catalog, long winner, long seq) {
    assertThat(catalog.loadTable(id("t")).currentSnapshot().snapshotId()).isEqualTo(winner);
    assertThat(catalog.commitSeq()).isEqualTo(seq);
  }

  private static void awaitAppends(Queue<String> appended, int count) {
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> appended.size() >= count);
  }

  private static Thread start(Runnable body, Queue<Throwable> failures) {
    Thread thread =
        new Thread(
            () -> {
              try {
                body.run();
              } catch (Throwable e) {
                failures.add(e);
              }
            });
    thread.start();
    return thread;
  }

  /** The data files each snapshot of the table's current history added, in commit order. */
  private static List<String> addedFiles(Table table) {
    List<String> files = new ArrayList<>();
    for (Snapshot snapshot : SnapshotUtil.currentAncestors(table)) {
      snapshot.addedDataFiles(table.io()).forEach(file -> files.add(file.location()));
    }
    return files;
  }

  private long metadataFiles(String table) throws IOException {
    try (Stream<Path> files =
        Files.list(warehouse.resolve("db").resolve(table).resolve("metadata"))) {
      return files.filter(f -> f.toString().endsWith(".metadata.json")).count();
    }
  }

  private static String metadataLocation(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }

  private static TableIdentifier id(String name) {
    return TableIdentifier.of(Catalogs.DB, name);
  }
}
