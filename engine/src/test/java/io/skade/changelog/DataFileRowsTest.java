package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogPartitionFilterTest.CountingFileIO;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * skade reads local data files past Hadoop only under its default file IO: a file IO a user
 * configured, even one extending Hadoop's ({@link CountingFileIO}), sees every data file a
 * changelog window reads.
 */
class DataFileRowsTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;

  @TempDir Path warehouse;

  @Test
  void aFileIoOfTheUsersOwnOpensEveryDataFileAWindowReads() throws Exception {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize(
        "counting",
        Map.of("warehouse", warehouse.toString(), "io-impl", CountingFileIO.class.getName()));
    try (catalog) {
      catalog.createNamespace(Namespace.of("db"));
      Table table = catalog.createTable(TableIdentifier.of("db", "t"), SCHEMA);
      TableWriter writer = new TableWriter(table);
      writer.append(List.of(row(1, "a"), row(2, "b")));
      writer.append(List.of(row(3, "c")));
      writer.upsert(List.of(row(2, "b2")));
      table.refresh();
      Set<String> dataFiles;
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        dataFiles =
            StreamSupport.stream(tasks.spliterator(), false)
                .map(FileScanTask::file)
                .map(DataFile::location)
                .collect(Collectors.toSet());
      }
      assertThat(dataFiles).hasSize(3);

      CountingFileIO.OPENED.clear();
      List<ChangeRow> changes =
          new ChangelogReader(table, ChangelogOptions.defaults())
              .read(null, table.currentSnapshot().snapshotId());

      assertThat(changes)
          .extracting(
              change ->
                  change.type()
                      + " "
                      + change.row().getField("id")
                      + " "
                      + change.row().getField("name"))
          .containsExactly(
              "INSERT 1 a", "INSERT 2 b", "INSERT 3 c", "UPDATE_BEFORE 2 b", "UPDATE_AFTER 2 b2");
      assertThat(CountingFileIO.OPENED)
          .as("files opened through the configured file IO")
          .containsAll(dataFiles);
    }
  }
}
