package io.skade.maintenance;

import static io.skade.maintenance.KeyValue.SCHEMA;
import static io.skade.maintenance.KeyValue.env;
import static io.skade.maintenance.KeyValue.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CommitEvent;
import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.sink.OrphanFileRemoval;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Orphan cleanup by Iceberg's own Flink operators ({@link OrphanFileRemoval}) deletes exactly the
 * files nothing can read any more, on a table where every file is old enough to be taken: a file
 * written for a commit that never came, a stray manifest, and the metadata files of commits whose
 * snapshots are expired. It keeps every file of every live snapshot, a file of a commit still in
 * flight, and the metadata file of every logged commit a lagging changelog reader may still plan
 * from, although Iceberg's metadata log (here 2 long) has forgotten it.
 */
class OrphanFileRemovalTest {
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "aged");
  private static final int COMMITS = 10;
  private static final int EXPIRED = 3;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void deletesWhatNothingReadsAndKeepsWhatLiveSnapshotsInFlightCommitsAndTheLogReference()
      throws Exception {
    Table table =
        catalog
            .get()
            .createTable(
                TABLE, SCHEMA, null, Map.of(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "2"));
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < COMMITS; commit++) {
      writer.upsert(List.of(row(commit % 4, "v" + commit), row(100 + commit, "new")));
    }
    table.refresh();
    List<Snapshot> history = new ArrayList<>();
    table.snapshots().forEach(history::add);
    table
        .expireSnapshots()
        .expireOlderThan(history.get(EXPIRED).timestampMillis())
        .retainLast(1)
        .commit();
    table.refresh();
    assertThat(table.snapshot(history.get(EXPIRED - 1).snapshotId())).isNull();
    assertThat(table.snapshot(history.get(EXPIRED).snapshotId())).isNotNull();

    List<CommitEvent> log = new ArrayList<>();
    String key = catalog.get().commitTableKey(TABLE);
    catalog
        .get()
        .commitsSince(0)
        .forEach(
            e -> {
              if (e.tableKey().equals(key)) {
                log.add(e);
              }
            });
    // What a reader behind by any live commit reads: each window from its commit's metadata.
    Map<String, List<String>> windowsBefore = windows(table, log);
    Map<Long, Map<Long, String>> snapshotsBefore = new HashMap<>();
    table.snapshots().forEach(s -> snapshotsBefore.put(s.snapshotId(), read(table, s)));

    // Orphans: a file of a commit that never came and a stray manifest, both old...
    DataFile abandoned = writer.writeDataFiles(List.of(row(7, "never committed"))).get(0);
    Path stray = Paths.get(path(table.location())).resolve("metadata/stray-m0.avro");
    Files.write(stray, new byte[] {1, 2, 3});
    Path location = Paths.get(path(table.location()));
    backdate(location, Duration.ofHours(2));
    // ... and a file of a commit in flight, written just now.
    DataFile inFlight = writer.writeDataFiles(List.of(row(8, "in flight"))).get(0);

    Set<String> expected = new TreeSet<>();
    expected.add(path(abandoned.location()));
    expected.add(stray.toString());
    Set<String> logKept = new HashSet<>();
    for (CommitEvent event : log.subList(EXPIRED + 1, log.size())) {
      logKept.add(path(event.metadataLocation())); // from the oldest live snapshot's commit on
    }
    for (CommitEvent event : log.subList(0, EXPIRED + 1)) {
      if (!logKept.contains(path(event.metadataLocation()))) {
        expected.add(path(event.metadataLocation())); // commits of expired snapshots only
      }
    }
    assertThat(expected)
        .as("metadata files of expired commits are among the orphans")
        .hasSizeGreaterThan(2);
    Set<String> filesBefore = files(location);

    OrphanFileRemoval.Result dry =
        OrphanFileRemoval.run(env(), catalog.properties(), TABLE, Duration.ofHours(1), true);
    assertThat(dry.orphans())
        .extracting(OrphanFileRemovalTest::path)
        .containsExactlyInAnyOrderElementsOf(expected);
    assertThat(files(location)).as("a dry run deletes nothing").isEqualTo(filesBefore);

    OrphanFileRemoval.Result removed =
        OrphanFileRemoval.run(env(), catalog.properties(), TABLE, Duration.ofHours(1), false);

    assertThat(removed.orphans())
        .extracting(OrphanFileRemovalTest::path)
        .containsExactlyInAnyOrderElementsOf(expected);
    Set<String> left = new TreeSet<>(filesBefore);
    left.removeAll(expected);
    assertThat(files(location)).isEqualTo(left);
    assertThat(Files.exists(Paths.get(path(inFlight.location())))).as("in flight").isTrue();
    table.refresh();
    for (Snapshot snapshot : table.snapshots()) {
      assertThat(read(table, snapshot))
          .as("snapshot %s", snapshot.snapshotId())
          .isEqualTo(snapshotsBefore.get(snapshot.snapshotId()));
    }
    assertThat(windows(table, log))
        .as("every window a lagging reader plans still reads")
        .isEqualTo(windowsBefore);
  }

  @Test
  void aMinimumAgeBelowAnHourIsRefusedBeforeAnyIo() {
    assertThatThrownBy(
            () ->
                OrphanFileRemoval.run(
                    env(), catalog.properties(), TABLE, Duration.ofMinutes(10), false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minimum age")
        .hasMessageContaining("at least 60 min")
        .hasMessageContaining("in flight");
  }

  /**
   * The changes of each live logged commit, read as a changelog reader reads a window ending there:
   * from the metadata file the log gives for it, read afresh.
   */
  private static Map<String, List<String>> windows(Table table, List<CommitEvent> log) {
    Map<String, List<String>> windows = new HashMap<>();
    for (CommitEvent event : log) {
      Snapshot added =
          event.snapshotId().isEmpty() ? null : table.snapshot(event.snapshotId().getAsLong());
      if (added == null || added.parentId() == null || table.snapshot(added.parentId()) == null) {
        continue; // not a live commit with a live one before it
      }
      Table at =
          new BaseTable(
              new StaticTableOperations(event.metadataLocation(), table.io()), TABLE.toString());
      List<String> changes = new ArrayList<>();
      for (ChangeRow change :
          new ChangelogReader(at, ChangelogOptions.defaults())
              .read(added.parentId(), added.snapshotId())) {
        changes.add(change.type() + " " + change.row());
      }
      windows.put(event.metadataLocation(), changes);
    }
    assertThat(windows).hasSizeGreaterThan(3);
    return windows;
  }

  private static Map<Long, String> read(Table table, Snapshot snapshot) {
    Map<Long, String> rows = new HashMap<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshot.snapshotId()).build()) {
      records.forEach(r -> rows.put(r.get(0, Long.class), r.get(1, String.class)));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    return rows;
  }

  /** The table's files as Iceberg lists them (hidden ones, such as checksums, left out). */
  private static Set<String> files(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      return paths
          .filter(Files::isRegularFile)
          .filter(p -> !p.getFileName().toString().startsWith("."))
          .map(Path::toString)
          .collect(TreeSet::new, Set::add, Set::addAll);
    }
  }

  private static void backdate(Path root, Duration age) throws IOException {
    FileTime then = FileTime.from(Instant.now().minus(age));
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path file : paths.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(file, then);
      }
    }
  }

  /** The local path of a location, with or without a {@code file:} scheme. */
  private static String path(String location) {
    return location.startsWith("file:")
        ? Paths.get(URI.create(location)).toString()
        : Paths.get(location).toString();
  }
}
