package io.skade.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeRuntime;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.source.StartupMode;
import io.skade.source.reader.ChangeRecord;
import io.skade.source.reader.ChangelogSplitReader;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitSerializer;
import io.skade.testing.IdRows;
import io.skade.testing.RecordingFileIO;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Splits carry their planned window: a reader in a JVM that holds none of the table's metadata (a
 * TaskManager) reads them to the same changes as from the metadata file they name, without opening
 * that file, and for an append without opening a manifest.
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
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    List<ChangelogSplit> planned =
        planner
            .next(
                planner.start(StartupMode.EARLIEST, null, false, null).cursor(),
                WindowPlanner.UNBOUNDED)
            .splits();
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
