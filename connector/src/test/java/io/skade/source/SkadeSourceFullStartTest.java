package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A source started {@code full} on a table whose current snapshot is a compaction (a {@code
 * replace} snapshot: data files rewritten into one, no row changed) emits the table's rows, as
 * Iceberg reads them, as inserts — on a LOG table and on a primary-key table.
 */
class SkadeSourceFullStartTest {
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @ParameterizedTest(name = "primary key: {0}")
  @ValueSource(booleans = {false, true})
  @Timeout(120)
  void aFullStartAtACompactionEmitsTheTablesRows(boolean primaryKey) throws Exception {
    List<Types.NestedField> columns =
        List.of(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "v", Types.StringType.get()));
    Schema schema = primaryKey ? new Schema(columns, Set.of(1)) : new Schema(columns);
    Table table = catalog.get().createTable(TableIdentifier.of("db", "compacted"), schema);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(schema, 1, "a"), row(schema, 2, "b")));
    writer.append(List.of(row(schema, 3, "c")));
    compact(table, writer);
    assertThat(table.currentSnapshot().operation()).isEqualTo(DataOperations.REPLACE);
    List<String> expected = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> expected.add("+I " + r.getField("id") + " " + r.getField("v")));
    }

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    SkadeSource<String> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.compacted")
            .bounded()
            .deserializer(new ChangeLines.Deserializer())
            .build();
    List<String> seen = new ArrayList<>();
    try (CloseableIterator<String> changes =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "compacted").executeAndCollect()) {
      changes.forEachRemaining(seen::add);
    }
    assertThat(seen)
        .as(
            "a full start at snapshot %d (%s)",
            table.currentSnapshot().snapshotId(), table.currentSnapshot().operation())
        .containsExactlyInAnyOrderElementsOf(expected);
  }

  /** Rewrites every data file into one file of the same rows: a {@code replace} snapshot. */
  private static void compact(Table table, TableWriter writer) throws IOException {
    Set<DataFile> old = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> old.add(task.file()));
    }
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(rows::add);
    }
    table
        .newRewrite()
        .validateFromSnapshot(table.currentSnapshot().snapshotId())
        .rewriteFiles(old, Set.of(), new HashSet<>(writer.writeDataFiles(rows)), Set.of())
        .commit();
  }
}
