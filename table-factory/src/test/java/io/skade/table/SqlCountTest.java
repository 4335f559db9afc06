package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code COUNT(*)} at parallelism 2, differential against Iceberg's own read of the same table:
 * answered from the manifests (the aggregate pushed into the source, as {@code EXPLAIN} shows) on a
 * table no delete file applies to; left to Flink over a scan on tables with equality deletes,
 * position deletes and deletion vectors; and exact when deletes are committed between planning and
 * running a pushed count.
 */
class SqlCountTest extends SqlTestBase {
  private static final String PUSHED =
      "aggregates=[grouping=[], aggFunctions=[Count1AggFunction()]]";

  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get())),
          Set.of(1));

  private StreamTableEnvironment env;

  @BeforeEach
  void environment() {
    env = batch(new Configuration(), 2);
    catalog.catalog().createNamespace(Namespace.of("default_database"));
  }

  @Test
  void aCountIsAnsweredFromManifestsWhereNoDeleteAppliesAndEqualsIcebergsReadEverywhere()
      throws Exception {
    check("appends", "2", (table, writer) -> {}, true);
    check(
        "equality_deletes",
        "2",
        (table, writer) ->
            writer.deleteKeys(List.of(record(table, 5L, null), record(table, 150L, null))),
        false);
    check(
        "upserts",
        "2",
        (table, writer) ->
            writer.upsert(List.of(record(table, 7L, "again"), record(table, 1000L, "new"))),
        false);
    check("position_deletes", "2", SqlCountTest::deletePositions, false);
    check("deletion_vectors", "3", SqlCountTest::deletePositions, false);
  }

  @Test
  void aCountPushedBeforeDeletesAreCommittedIsStillExact() throws Exception {
    Table table = table("late_deletes", "3");
    declare(env, "late_deletes", "id BIGINT NOT NULL, name STRING");
    assertThat(env.explainSql("SELECT COUNT(*) FROM late_deletes")).contains(PUSHED);
    DataStream<Row> counted = env.toDataStream(env.sqlQuery("SELECT COUNT(*) FROM late_deletes"));
    deletePositions(table, new TableWriter(table)); // after planning, before the job runs
    List<Row> rows = counted.executeAndCollect(10);
    assertThat(rows)
        .extracting(row -> row.getField(0))
        .containsExactly((long) icebergRows("late_deletes").size());
    assertThat(icebergRows("late_deletes")).hasSize(300 - 4);
  }

  /**
   * Makes table {@code name} (3 files of 100 rows), applies {@code deletes}, and checks that {@code
   * COUNT(*)} through skade equals Iceberg's own read, pushed into the source or not as expected.
   */
  private void check(
      String name, String formatVersion, BiConsumer<Table, TableWriter> deletes, boolean pushed)
      throws Exception {
    Table table = table(name, formatVersion);
    deletes.accept(table, new TableWriter(table));
    declare(env, name, "id BIGINT NOT NULL, name STRING");
    String query = "SELECT COUNT(*) FROM " + name;
    String plan = env.explainSql(query);
    if (pushed) {
      assertThat(plan).as(name).contains(PUSHED);
    } else {
      assertThat(plan).as(name).doesNotContain("aggFunctions=");
    }
    long expected = icebergRows(name).size();
    assertThat(collect(env, query))
        .as(name)
        .extracting(row -> row.getField(0))
        .containsExactly(expected);
  }

  private Table table(String name, String formatVersion) {
    Table table =
        catalog
            .catalog()
            .buildTable(TableIdentifier.of("default_database", name), SCHEMA)
            .withProperty("format-version", formatVersion)
            .create();
    TableWriter writer = new TableWriter(table);
    for (int file = 0; file < 3; file++) {
      List<Record> rows = new ArrayList<>();
      for (int n = 0; n < 100; n++) {
        rows.add(record(table, file * 100L + n, "r" + file));
      }
      writer.append(rows);
    }
    return table;
  }

  /** Deletes two rows of each of two data files by position. */
  private static void deletePositions(Table table, TableWriter writer) {
    List<String> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> files.add(task.file().location()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    writer.deletePositions(Map.of(files.get(0), List.of(0L, 3L), files.get(1), List.of(1L, 99L)));
  }
}
