package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.scan.FileFetch;
import io.skade.testing.IdRows;
import io.skade.testing.S3Bucket;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * On a warehouse in object storage (a real S3 server), a changelog window reads its data and delete
 * files through the table's file IO, several at once ({@link FileFetch}), and emits exactly what it
 * emits one file at a time: {@link InFlightFileIO} counts the streams open together on data and
 * delete files, and lets none proceed until several are open (or a while passed), so a reader that
 * fetched one file after the other shows at most one.
 */
class ChangelogOnS3Test {
  private static final int COMMITS = 10;

  @RegisterExtension static final S3Bucket s3 = new S3Bucket("changelog");

  @TempDir Path dir;
  private SkadeCatalog catalog;

  @BeforeEach
  void openCatalog() throws Exception {
    Map<String, String> props = s3.catalogProperties(s3.warehouse("wh"), dir.resolve("catalog"));
    props.put("io-impl", InFlightFileIO.class.getName());
    catalog = new SkadeCatalog();
    catalog.initialize("s3", props);
    catalog.createNamespace(Namespace.of("db"));
  }

  @AfterEach
  void closeCatalog() throws Exception {
    catalog.close();
  }

  @Test
  void aWindowOfManyCommitsFetchesTheirFilesTogetherAndEmitsTheSameChangesInOrder()
      throws Exception {
    Table table = catalog.createTable(TableIdentifier.of("db", "appends"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    Snapshot first = writer.append(List.of(row(0, "start")));
    List<String> expected = new ArrayList<>();
    for (int commit = 1; commit <= COMMITS; commit++) {
      writer.append(List.of(row(commit, "v" + commit), row(100 + commit, "w" + commit)));
      expected.add("INSERT " + commit + " v" + commit);
      expected.add("INSERT " + (100 + commit) + " w" + commit);
    }
    table.refresh();
    assertThat(table.location()).startsWith("s3://changelog/");

    InFlightFileIO.reset();
    List<ChangeRow> changes =
        new ChangelogReader(table, ChangelogOptions.defaults().withMode(Mode.PER_SNAPSHOT))
            .read(first.snapshotId(), table.currentSnapshot().snapshotId());

    assertThat(changes).extracting(ChangelogOnS3Test::describe).containsExactlyElementsOf(expected);
    assertThat(InFlightFileIO.maxOpen())
        .as("data files of the window open at once")
        .isGreaterThanOrEqualTo(InFlightFileIO.GATE)
        .isLessThanOrEqualTo(FileFetch.MAX_IN_FLIGHT);
    assertThat(InFlightFileIO.opened()).as("each file fetched once").isEqualTo(COMMITS);
  }

  @Test
  void aWindowOfUpsertsFetchesDataAndDeleteFilesTogetherAndIsExact() throws Exception {
    Table table = catalog.createTable(TableIdentifier.of("db", "upserts"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    Map<Long, String> rows = new HashMap<>();
    for (long id = 0; id < 6; id++) {
      writer.append(List.of(row(id, "a" + id)));
      rows.put(id, "a" + id);
    }
    table.refresh();
    Snapshot from = table.currentSnapshot();
    for (int commit = 0; commit < 4; commit++) {
      List<Record> batch = new ArrayList<>();
      for (long id = commit; id < 6; id += 2) {
        batch.add(row(id, "u" + commit + "-" + id));
      }
      writer.upsert(batch);
    }
    writer.deleteKeys(List.of(row(5, "")));
    table.refresh();
    Map<Long, String> expectedAfter = new HashMap<>(rows);
    for (int commit = 0; commit < 4; commit++) {
      for (long id = commit; id < 6; id += 2) {
        expectedAfter.put(id, "u" + commit + "-" + id);
      }
    }
    expectedAfter.remove(5L);

    for (Mode mode : Mode.values()) {
      InFlightFileIO.reset();
      List<ChangeRow> changes =
          new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode))
              .read(from.snapshotId(), table.currentSnapshot().snapshotId());
      Map<Long, String> applied = new HashMap<>(rows);
      for (ChangeRow change : changes) {
        long id = (Long) change.row().getField("id");
        String name = (String) change.row().getField("name");
        if (change.type().removes()) {
          assertThat(applied.remove(id))
              .as("%s: %s removes its old row", mode, change)
              .isEqualTo(name);
        } else {
          assertThat(applied.put(id, name)).as("%s: %s of a new key", mode, change).isNull();
        }
      }
      assertThat(applied)
          .as(mode + ": the window's changes give the rows at its end")
          .isEqualTo(expectedAfter);
      // The fetches in flight, and the reader's own read of a file it wanted before its fetch
      // began.
      assertThat(InFlightFileIO.maxOpen())
          .as("%s: files of the window open at once", mode)
          .isGreaterThanOrEqualTo(InFlightFileIO.GATE)
          .isLessThanOrEqualTo(FileFetch.MAX_IN_FLIGHT + 1);
    }
  }

  @Test
  void aLimitedReadOfASnapshotReadsOnlyTheFilesItsRowsNeed() throws Exception {
    Table table = catalog.createTable(TableIdentifier.of("db", "limited"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    for (int file = 0; file < COMMITS; file++) {
      List<Record> rows = new ArrayList<>();
      for (int n = 0; n < 100; n++) {
        rows.add(row(file * 100L + n, "r" + file));
      }
      writer.append(rows);
    }
    table.refresh();
    long at = table.currentSnapshot().snapshotId();

    // 5 rows are in the first file read, 150 in the first two; unlimited, every file is read.
    for (long limit : new long[] {5, 150, Long.MAX_VALUE}) {
      InFlightFileIO.resetUngated();
      ChangelogReader reader = new ChangelogReader(table, ChangelogOptions.defaults());
      List<ChangeRow> rows = new ArrayList<>();
      try (var changes = reader.snapshotChanges(at, limit)) {
        changes.forEachRemaining(rows::add);
      }
      long expectedRows = Math.min(limit, COMMITS * 100L);
      long expectedFiles = (expectedRows + 99) / 100;
      assertThat(rows).as("limit %s", limit).hasSize((int) expectedRows);
      assertThat(rows).extracting(ChangeRow::type).containsOnly(ChangeType.INSERT);
      assertThat(rows)
          .extracting(change -> (Long) change.row().getField("id"))
          .doesNotHaveDuplicates();
      assertThat(reader.dataFilesRead())
          .as("limit %s: data files read", limit)
          .isEqualTo(expectedFiles);
      assertThat(InFlightFileIO.opened())
          .as("limit %s: data files opened on the store", limit)
          .isEqualTo((int) expectedFiles);
    }

    // Under a filter the record counts overstate the rows: files past them are read in place.
    InFlightFileIO.resetUngated();
    ChangelogReader filtered =
        new ChangelogReader(
            table,
            ChangelogOptions.defaults().withFilter(Expressions.equal("name", "r" + (COMMITS - 1))));
    List<ChangeRow> rows = new ArrayList<>();
    try (var changes = filtered.snapshotChanges(at, 5)) {
      changes.forEachRemaining(rows::add);
    }
    assertThat(rows)
        .extracting(change -> change.row().getField("name"))
        .containsOnly("r" + (COMMITS - 1))
        .hasSize(5);
  }

  private static String describe(ChangeRow change) {
    return change.type() + " " + change.row().getField("id") + " " + change.row().getField("name");
  }
}
