package io.skade.maintenance;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.scan.DataFileRows;
import io.skade.sink.SkadeTableLoader;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.actions.SizeBasedFileRewritePlanner;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.flink.maintenance.api.Trigger;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.TypeUtil;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * skade's compaction ({@link CompactionStages}: Iceberg's planner and committer around the {@link
 * SortingRewriteRunner}) writes each file in the table's order (its key when it declares none) with
 * bloom filters on the key, and changes no row: files written in key order by separate commits
 * overlap in key range, so a rewrite that concatenated them, as Iceberg's Flink rewriter does,
 * would leave files out of order.
 */
class SortedCompactionTest {
  private static final TableIdentifier ID = TableIdentifier.of("db", "t");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aGroupLargerThanTheSortBufferIsWrittenInSortedRunsOfOneFileEachKeepingRowIds()
      throws Exception {
    Table table =
        catalog
            .get()
            .buildTable(ID, KeyValue.SCHEMA)
            .withProperty(TableProperties.FORMAT_VERSION, "3")
            .create();
    write(table, new Random(3), 6, 40);
    Map<Long, String> before = rows(table);
    Map<Long, Long> rowIds = rowIds(table);

    // Binary rows of about 40 bytes plus the per-row overhead: runs of a few dozen rows.
    compact(table, 4_096);

    List<DataFile> files = dataFiles(table);
    assertThat(files).as("runs of a few dozen rows, each its own file").hasSizeGreaterThan(2);
    for (DataFile file : files) {
      assertThat(KeyValue.fileKeys(table, file))
          .as("%s is in key order", file.location())
          .isSorted();
    }
    assertThat(rows(table)).isEqualTo(before);
    assertThat(rowIds(table)).as("row lineage carried over").isEqualTo(rowIds);
  }

  @Test
  void aPartitionedTableIsCompactedInItsDeclaredSortOrderWithBloomFiltersOnTheKey()
      throws Exception {
    Table table =
        catalog
            .get()
            .buildTable(ID, KeyValue.SCHEMA)
            .withPartitionSpec(PartitionSpec.builderFor(KeyValue.SCHEMA).bucket("id", 2).build())
            .withSortOrder(SortOrder.builderFor(KeyValue.SCHEMA).desc("v").build())
            .create();
    write(table, new Random(5), 5, 30);
    Map<Long, String> before = rows(table);

    compact(table, SortingRewriteRunner.DEFAULT_SORT_BUFFER_BYTES);

    List<DataFile> files = dataFiles(table);
    assertThat(files).as("one file per bucket").hasSize(2);
    for (DataFile file : files) {
      List<String> values =
          KeyValue.fileRows(table, file).stream().map(r -> r.get(1, String.class)).toList();
      assertThat(values)
          .as("%s is in the declared order, v descending", file.location())
          .isSortedAccordingTo((a, b) -> b.compareTo(a));
      assertThat(keyBloomFilterInEveryRowGroup(table, file)).isTrue();
    }
    assertThat(rows(table)).isEqualTo(before);
  }

  /** {@code commits} appends of up to {@code rows} random keys each (each file in key order). */
  private static void write(Table table, Random random, int commits, int rows) {
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < commits; commit++) {
      Map<Long, Record> batch = new HashMap<>();
      for (int i = 0; i < rows; i++) {
        long id = random.nextInt(1_000);
        batch.put(id, KeyValue.row(id, "c" + commit + "-" + random.nextInt(100)));
      }
      writer.upsert(batch.values());
    }
    table.refresh();
  }

  private void compact(Table table, long sortBufferBytes) throws Exception {
    StreamExecutionEnvironment env = KeyValue.env();
    CompactionStages stages =
        CompactionStages.append(
            env.fromData(TypeInformation.of(Trigger.class), Trigger.create(0, 0)),
            ID.toString(),
            "compact",
            0,
            SkadeTableLoader.forMaintenance(catalog.properties(), ID),
            Map.of(SizeBasedFileRewritePlanner.REWRITE_ALL, "true"),
            sortBufferBytes);
    List<Exception> errors = new ArrayList<>();
    stages.errors().executeAndCollect("compact").forEachRemaining(errors::add);
    assertThat(errors).isEmpty();
    table.refresh();
    assertThat(table.currentSnapshot().operation()).isEqualTo("replace");
  }

  private static Map<Long, String> rows(Table table) throws IOException {
    Map<Long, String> rows = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> rows.put(r.get(0, Long.class), r.get(1, String.class)));
    }
    return rows;
  }

  /**
   * Each live row's {@code _row_id} (format v3 row lineage), by key: read from every data file
   * without deletes, a row is live when its value is the key's live one (each commit writes values
   * of its own).
   */
  private static Map<Long, Long> rowIds(Table table) throws IOException {
    Map<Long, String> live = rows(table);
    Schema withRowIds = TypeUtil.join(KeyValue.SCHEMA, new Schema(MetadataColumns.ROW_ID));
    Map<Long, Long> ids = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        try (CloseableIterable<Record> records =
            DataFileRows.read(table, task, withRowIds, Expressions.alwaysTrue())) {
          for (Record r : records) {
            if (r.get(1, String.class).equals(live.get(r.get(0, Long.class)))) {
              ids.put(r.get(0, Long.class), (Long) r.getField(MetadataColumns.ROW_ID.name()));
            }
          }
        }
      }
    }
    assertThat(ids.keySet()).isEqualTo(live.keySet());
    assertThat(ids.values()).doesNotContainNull();
    return ids;
  }

  private static List<DataFile> dataFiles(Table table) throws IOException {
    List<DataFile> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(
          task -> {
            assertThat(task.deletes()).as("deletes folded").isEmpty();
            files.add(task.file());
          });
    }
    return files;
  }

  private static boolean keyBloomFilterInEveryRowGroup(Table table, DataFile file)
      throws IOException {
    try (ParquetFileReader reader =
        ParquetFileReader.open(
            HadoopInputFile.fromPath(new Path(file.location()), new Configuration()))) {
      for (BlockMetaData group : reader.getFooter().getBlocks()) {
        if (group.getColumns().get(0).getBloomFilterOffset() < 0) {
          return false;
        }
      }
      return true;
    }
  }
}
