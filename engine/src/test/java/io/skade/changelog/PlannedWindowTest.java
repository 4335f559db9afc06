package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.scan.WindowFiles;
import io.skade.testing.IdRows;
import io.skade.testing.RecordingFileIO;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A window read from its plan gives exactly the changes read from the table's own metadata, opens
 * no metadata file and, for an append, no manifest: only data (and delete) files. The appended
 * files a plan carries are what Iceberg's own API says each snapshot added, and the reader takes
 * them from the plan, still through the read's filter.
 */
class PlannedWindowTest {
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aPlannedAppendWindowOpensOnlyItsDataFiles() {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "appends"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a"), row(2, "b")));
    long from = writer.upsert(List.of(row(2, "b2"))).snapshotId();
    long first = writer.append(List.of(row(10, "x"), row(11, "y"))).snapshotId();
    long to = writer.append(List.of(row(12, "z"))).snapshotId();
    table.refresh();

    PlannedWindow plan =
        roundTrip(
            PlannedWindow.of(table, List.of(from, first, to))
                .withAppended(icebergAppends(table, List.of(first, to))));
    RecordingFileIO io = new RecordingFileIO();
    Table planned = plan.table(io, "appends");
    List<String> changes =
        changes(new ChangelogReader(planned, defaults(), plan.appended()), from, to);

    assertThat(changes)
        .isEqualTo(changes(new ChangelogReader(table, defaults()), from, to))
        .containsExactly("+I 10 x", "+I 11 y", "+I 12 z");
    assertThat(io.opened).isNotEmpty().allMatch(path -> path.endsWith(".parquet"));
    assertThat(planned.snapshots())
        .extracting(Snapshot::snapshotId)
        .containsExactlyInAnyOrder(from, first, to);
  }

  @Test
  void aPlannedWindowOfUpsertsAndDeletesGivesTheChangesOfTheWholeMetadata() {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "mixed"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    List<Long> window = new ArrayList<>();
    window.add(writer.append(List.of(row(1, "a"), row(2, "b"), row(3, "c"))).snapshotId());
    window.add(writer.upsert(List.of(row(2, "b2"), row(4, "d"))).snapshotId());
    window.add(writer.deleteKeys(List.of(row(1, null))).snapshotId());
    window.add(writer.append(List.of(row(5, "e"))).snapshotId());
    table.refresh();
    Map<Long, List<DataFile>> appended = new HashMap<>();
    for (long id : window) {
      List<DataFile> files = WindowFiles.appendedBy(table, table.snapshot(id));
      if (files != null) {
        appended.put(id, files);
      }
    }
    assertThat(appended).containsOnlyKeys(window.get(0), window.get(3));

    PlannedWindow plan = roundTrip(PlannedWindow.of(table, window).withAppended(appended));
    RecordingFileIO io = new RecordingFileIO();
    List<String> changes =
        changes(
            new ChangelogReader(plan.table(io, "mixed"), defaults(), plan.appended()),
            null,
            window.get(3));

    assertThat(changes)
        .isEqualTo(changes(new ChangelogReader(table, defaults()), null, window.get(3)))
        .containsExactly(
            "+I 1 a", "+I 2 b", "+I 3 c", "-U 2 b", "+U 2 b2", "+I 4 d", "-D 1 a", "+I 5 e");
    assertThat(io.opened).noneMatch(path -> path.endsWith(".metadata.json"));
  }

  @Test
  void thePlansAppendedFilesAreWhatIcebergSaysEachAppendAdded() {
    Table table = regional("added");
    TableWriter writer = new TableWriter(table);
    long snapshot =
        writer
            .append(List.of(regional(1, "eu"), regional(2, "us"), regional(3, "eu")))
            .snapshotId();
    table.refresh();
    assertThat(WindowFiles.appendedBy(table, table.snapshot(snapshot)))
        .extracting(DataFile::location)
        .containsExactlyInAnyOrderElementsOf(
            locations(icebergAppends(table, List.of(snapshot)).get(snapshot)));
  }

  /**
   * A chain's runs of appends are read from the manifests of each run's last snapshot, whether the
   * table merges manifests on nearly every commit or never: each plain append's files are still
   * exactly what Iceberg says it added, and no other snapshot gets any.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aChainsAppendsAreWhatIcebergSaysEachAdded(boolean merging) {
    Table table =
        catalog.get().createTable(TableIdentifier.of("db", "chain_" + merging), IdRows.SCHEMA);
    table
        .updateProperties()
        .set(TableProperties.MANIFEST_MERGE_ENABLED, Boolean.toString(merging))
        .set(TableProperties.MANIFEST_MIN_MERGE_COUNT, "3")
        .commit();
    TableWriter writer = new TableWriter(table);
    List<Long> chain = new ArrayList<>();
    List<Long> appends = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      long id;
      if (i == 5) {
        id = writer.upsert(List.of(row(1, "changed"))).snapshotId();
      } else if (i == 9) {
        id = writer.deleteKeys(List.of(row(2, null))).snapshotId();
      } else {
        id = writer.append(List.of(row(100 + 2 * i, "x"), row(101 + 2 * i, "y"))).snapshotId();
        appends.add(id);
      }
      chain.add(id);
    }
    table.refresh();
    List<Snapshot> snapshots = chain.stream().map(table::snapshot).toList();
    assertThat(
            snapshots.stream()
                .anyMatch(s -> s.allManifests(table.io()).size() < s.sequenceNumber()))
        .as("some appends merged manifests")
        .isEqualTo(merging);

    Map<Long, List<DataFile>> byChain = WindowFiles.appendedBy(table, snapshots);
    Map<Long, List<DataFile>> byIceberg = icebergAppends(table, appends);

    assertThat(byChain).containsOnlyKeys(appends);
    for (long id : appends) {
      assertThat(locations(byChain.get(id)))
          .as("snapshot %s", id)
          .containsExactlyInAnyOrderElementsOf(locations(byIceberg.get(id)));
    }
    // a chain's later part alone, starting mid-run, gives the same
    Map<Long, List<DataFile>> midRun = WindowFiles.appendedBy(table, snapshots.subList(3, 8));
    assertThat(midRun).containsOnlyKeys(chain.get(3), chain.get(4), chain.get(6), chain.get(7));
    assertThat(locations(midRun.get(chain.get(4))))
        .containsExactlyInAnyOrderElementsOf(locations(byIceberg.get(chain.get(4))));
  }

  @Test
  void theReaderTakesAppendedFilesFromThePlanThroughItsFilter() {
    Table table = regional("filtered");
    TableWriter writer = new TableWriter(table);
    long from = writer.append(List.of(regional(0, "ap"))).snapshotId();
    long to =
        writer
            .append(List.of(regional(1, "eu"), regional(2, "us"), regional(3, "eu")))
            .snapshotId();
    table.refresh();
    List<DataFile> files = icebergAppends(table, List.of(to)).get(to);
    assertThat(files).hasSize(2); // one per region
    DataFile eu =
        files.stream().filter(f -> f.location().contains("region=eu")).findFirst().orElseThrow();
    PlannedWindow plan = PlannedWindow.of(table, List.of(from, to));

    // Only the file the plan names is read: the manifests are not asked.
    Table planned = plan.table(table.io(), "filtered");
    assertThat(changes(new ChangelogReader(planned, defaults(), Map.of(to, List.of(eu))), from, to))
        .containsExactly("+I 1 a1", "+I 3 a3");
    // The read's filter still rules out the plan's files of other partitions.
    assertThat(
            changes(
                new ChangelogReader(
                    planned,
                    defaults().withFilter(Expressions.equal("region", "us")),
                    Map.of(to, files)),
                from,
                to))
        .containsExactly("+I 2 a2");
  }

  @Test
  void aPlanKeepsItsSnapshotsAndTheTablesPropertiesAndLittleElse() {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "cut"), IdRows.SCHEMA);
    table.updateProperties().set("owner", "someone").commit();
    TableWriter writer = new TableWriter(table);
    List<Long> snapshots = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      snapshots.add(writer.append(List.of(row(i, "v" + i))).snapshotId());
    }
    table.refresh();
    TableMetadata full = ((HasTableOperations) table).operations().current();

    Table planned = PlannedWindow.of(table, snapshots.subList(10, 12)).table(table.io(), "cut");
    TableMetadata cut = ((HasTableOperations) planned).operations().current();
    assertThat(planned.snapshots())
        .extracting(Snapshot::snapshotId)
        .containsExactlyElementsOf(snapshots.subList(10, 12));
    assertThat(cut.previousFiles()).hasSizeLessThanOrEqualTo(1);
    assertThat(full.previousFiles()).hasSizeGreaterThan(10);
    assertThat(planned.properties())
        .containsEntry("owner", "someone")
        .containsAllEntriesOf(
            full.properties().entrySet().stream()
                .filter(e -> !e.getKey().equals(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)));
    assertThat(planned.schema().sameSchema(table.schema())).isTrue();
    assertThat(planned.specs()).isEqualTo(table.specs());
  }

  @Test
  void bytesThisReleaseCannotReadAreNoPlan() throws IOException {
    assertThat(PlannedWindow.fromBytes(new byte[] {1, 2, 3})).isNull();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(99); // a layout of another release
      out.writeInt(2);
      out.writeBytes("{}");
    }
    assertThat(PlannedWindow.fromBytes(bytes.toByteArray())).isNull();
  }

  private static ChangelogOptions defaults() {
    return ChangelogOptions.defaults();
  }

  private static PlannedWindow roundTrip(PlannedWindow plan) {
    PlannedWindow read = PlannedWindow.fromBytes(plan.toBytes());
    assertThat(read).isNotNull();
    return read;
  }

  /** Per snapshot, the data files Iceberg's own API says it added. */
  private static Map<Long, List<DataFile>> icebergAppends(Table table, List<Long> snapshots) {
    Map<Long, List<DataFile>> added = new HashMap<>();
    for (long id : snapshots) {
      List<DataFile> files = new ArrayList<>();
      table.snapshot(id).addedDataFiles(table.io()).forEach(f -> files.add(f.copy()));
      added.put(id, files);
    }
    return added;
  }

  private static List<String> locations(List<DataFile> files) {
    return files.stream().map(DataFile::location).toList();
  }

  /** The window {@code (from, to]}, as "kind id value" lines. */
  private static List<String> changes(ChangelogReader reader, Long from, long to) {
    return reader.read(from, to).stream()
        .map(c -> kind(c.type()) + " " + c.row().getField("id") + " " + c.row().get(1))
        .toList();
  }

  private static String kind(ChangeType type) {
    return switch (type) {
      case INSERT -> "+I";
      case UPDATE_BEFORE -> "-U";
      case UPDATE_AFTER -> "+U";
      case DELETE -> "-D";
    };
  }

  private Table regional(String name) {
    return catalog
        .get()
        .createTable(
            TableIdentifier.of("db", name),
            IdRows.REGIONAL,
            PartitionSpec.builderFor(IdRows.REGIONAL).identity("region").build());
  }

  private static Record regional(long id, String region) {
    GenericRecord row = GenericRecord.create(IdRows.REGIONAL);
    row.setField("id", id);
    row.setField("name", "a" + id);
    row.setField("region", region);
    return row;
  }
}
