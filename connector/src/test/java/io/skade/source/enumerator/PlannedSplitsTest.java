package io.skade.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeRuntime;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.scan.MetadataCache;
import io.skade.source.SplitsRestoredEvent;
import io.skade.source.StartupMode;
import io.skade.source.reader.ChangeRecord;
import io.skade.source.reader.ChangelogSplitReader;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitSerializer;
import io.skade.testing.IdRows;
import io.skade.testing.RecordingFileIO;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Splits carry their planned window: a reader in a JVM that holds none of the table's metadata (a
 * TaskManager) reads them to the same changes as from the metadata file they name, without opening
 * that file, and for an append without opening a manifest. A reader that shares the planner's
 * metadata cache gets the appended files alone, and reads them right wherever it runs.
 */
class PlannedSplitsTest {
  private static final TableIdentifier T = TableIdentifier.of("db", "t");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aReaderElsewhereReadsPlannedSplitsFromTheirPlansAlone() throws Exception {
    Table table = catalog.get().createTable(T, IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(IdRows.row(1, "a"), IdRows.row(2, "b")));
    writer.upsert(List.of(IdRows.row(2, "b2")));
    writer.deleteKeys(List.of(IdRows.row(1, null)));
    writer.append(List.of(IdRows.row(3, "c")));
    writer.append(List.of(IdRows.row(4, "d")));
    List<ChangelogSplit> planned = planFromEarliest(true);
    assertThat(planned).hasSize(5).allMatch(split -> split.plan() != null);
    // As a TaskManager gets them: through the checkpointed layout.
    ChangelogSplitSerializer serializer = new ChangelogSplitSerializer();
    List<ChangelogSplit> shipped = new ArrayList<>();
    for (ChangelogSplit split : planned) {
      shipped.add(serializer.deserialize(serializer.getVersion(), serializer.serialize(split)));
    }
    assertThat(shipped).isEqualTo(planned);
    List<String> fromMetadataFiles =
        read(planned.stream().map(s -> s.withPlan(null)).toList(), new RecordingFileIO());

    SkadeRuntime.reset(); // another JVM: no metadata, manifest or committed metadata held
    List<RecordingFileIO> ios = new ArrayList<>();
    List<String> fromPlans = new ArrayList<>();
    for (ChangelogSplit split : shipped) {
      RecordingFileIO io = new RecordingFileIO();
      fromPlans.addAll(read(List.of(split), io));
      ios.add(io);
    }

    assertThat(fromPlans)
        .isEqualTo(fromMetadataFiles)
        .containsExactly("+I 1 a", "+I 2 b", "-U 2 b", "+U 2 b2", "-D 1 a", "+I 3 c", "+I 4 d");
    for (RecordingFileIO io : ios) {
      assertThat(io.opened).noneMatch(path -> path.endsWith(".metadata.json"));
    }
    for (int append : List.of(0, 3, 4)) {
      assertThat(ios.get(append).opened)
          .as("the append of window %d", append)
          .isNotEmpty()
          .allMatch(path -> path.endsWith(".parquet"));
    }
  }

  @Test
  void aReaderOfThePlannersJvmGetsPlansOfAppendedFilesAloneAndReadsThemAnywhere() throws Exception {
    Table table = catalog.get().createTable(T, IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(IdRows.row(1, "a"), IdRows.row(2, "b")));
    writer.upsert(List.of(IdRows.row(2, "b2")));
    writer.append(List.of(IdRows.row(3, "c")));
    List<ChangelogSplit> planned = planFromEarliest(false);
    assertThat(planned).hasSize(3);
    for (ChangelogSplit split : planned) {
      assertThat(split.plannedWindow().table(new RecordingFileIO(), "t")).isNull();
    }
    assertThat(planned.get(0).plannedWindow().appended()).isNotEmpty();
    assertThat(planned.get(2).plannedWindow().appended()).isNotEmpty();
    List<String> expected = List.of("+I 1 a", "+I 2 b", "-U 2 b", "+U 2 b2", "+I 3 c");

    // Here, the planner's cache holds the metadata and the manifests it read.
    RecordingFileIO here = new RecordingFileIO();
    assertThat(read(planned, here)).isEqualTo(expected);
    assertThat(here.opened).noneMatch(path -> path.endsWith(".metadata.json"));

    // Once the cache let them go (another JVM, in the extreme), the metadata file is read, and an
    // append's manifests still not.
    List<String> fromMetadataFiles = new ArrayList<>();
    for (ChangelogSplit split : planned) {
      SkadeRuntime.reset();
      RecordingFileIO io = new RecordingFileIO();
      fromMetadataFiles.addAll(read(List.of(split), io));
      assertThat(io.opened).contains(split.metadataLocation());
      if (split != planned.get(1)) {
        assertThat(io.opened)
            .allMatch(path -> path.endsWith(".parquet") || path.equals(split.metadataLocation()));
      }
    }
    assertThat(fromMetadataFiles).isEqualTo(expected);
  }

  @Test
  void theEnumeratorLeavesTheMetadataOutOnlyWhileEveryReaderSharesItsCache() throws Exception {
    Table table = catalog.get().createTable(T, IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    TestingSplitEnumeratorContext<ChangelogSplit> context = new TestingSplitEnumeratorContext<>(2);
    context.registerReader(0, "localhost");
    context.registerReader(1, "localhost");
    SkadeSplitEnumerator.Settings settings =
        new SkadeSplitEnumerator.Settings(
            List.of("db", "t"),
            StartupMode.EARLIEST,
            null,
            false,
            null,
            Mode.PER_SNAPSHOT,
            Duration.ofMillis(20),
            "plans",
            false);
    writer.append(List.of(IdRows.row(1, "a"))); // a backlog when the job starts
    try (SkadeSplitEnumerator enumerator =
        new SkadeSplitEnumerator(context, CatalogConnection.of(catalog.get()), settings, null)) {
      enumerator.start();
      context.triggerAllActions(); // started, before any reader was heard: nothing planned yet
      String here = MetadataCache.shared().id();
      enumerator.handleSourceEvent(0, new SplitsRestoredEvent(List.of(), here));
      enumerator.handleSourceEvent(1, new SplitsRestoredEvent(List.of(), here));

      ChangelogSplit shared = assigned(context, 1).get(0);
      assertThat(shared.plannedWindow().table(new RecordingFileIO(), "t")).isNull();
      assertThat(shared.plannedWindow().appended()).isNotEmpty();

      // Reader 1 failed over to a TaskManager of its own cache.
      enumerator.addReader(1);
      enumerator.handleSourceEvent(1, new SplitsRestoredEvent(List.of(), "another JVM"));
      writer.append(List.of(IdRows.row(2, "b")));
      ChangelogSplit elsewhere = assigned(context, 2).get(1);
      assertThat(elsewhere.plannedWindow().table(new RecordingFileIO(), "t")).isNotNull();
    }
  }

  /**
   * The windows of every commit so far, from the earliest; their plans with the metadata or not.
   */
  private List<ChangelogSplit> planFromEarliest(boolean withMetadata) {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    return planner
        .next(
            planner.start(StartupMode.EARLIEST, null, false, null).cursor(),
            WindowPlanner.UNBOUNDED,
            withMetadata)
        .splits();
  }

  /** The splits assigned to any reader, in commit order, once there are {@code count}. */
  private static List<ChangelogSplit> assigned(
      TestingSplitEnumeratorContext<ChangelogSplit> context, int count) {
    List<ChangelogSplit> splits = new ArrayList<>();
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              context.triggerAllActions();
              splits.clear();
              context
                  .getSplitAssignments()
                  .values()
                  .forEach(state -> splits.addAll(state.getAssignedSplits()));
              return splits.size() >= count;
            });
    splits.sort(ChangelogSplit.COMMIT_ORDER);
    return splits;
  }

  /** Every change of {@code splits}, read in order by one reader on {@code io}. */
  private static List<String> read(List<ChangelogSplit> splits, RecordingFileIO io)
      throws Exception {
    List<String> changes = new ArrayList<>();
    try (ChangelogSplitReader reader =
        new ChangelogSplitReader(io, ChangelogOptions.defaults(), 100)) {
      reader.handleSplitsChanges(new SplitsAddition<>(splits));
      int finished = 0;
      while (finished < splits.size()) {
        RecordsWithSplitIds<ChangeRecord> fetched = reader.fetch();
        for (String id = fetched.nextSplit(); id != null; id = fetched.nextSplit()) {
          for (ChangeRecord r = fetched.nextRecordFromSplit();
              r != null;
              r = fetched.nextRecordFromSplit()) {
            changes.add(
                r.row().getRowKind().shortString()
                    + " "
                    + r.row().getLong(0)
                    + " "
                    + r.row().getString(1));
          }
        }
        finished += fetched.finishedSplits().size();
      }
    }
    return changes;
  }
}
