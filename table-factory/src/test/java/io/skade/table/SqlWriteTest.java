package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** SQL writes into skade tables, checked with Iceberg's own reader. */
@Timeout(180)
class SqlWriteTest extends SqlTestBase {

  @Test
  void aSinkCreatesAMissingTableFromItsDdl() throws Exception {
    TableEnvironment env = batch();
    declare(
        env,
        "events",
        "id BIGINT, region STRING, note STRING,"
            + " PRIMARY KEY (id, region) NOT ENFORCED) PARTITIONED BY (region");
    run(env, "INSERT INTO events VALUES (1, 'eu', 'a'), (2, 'us', 'b')");

    Table table = icebergTable("events");
    assertThat(table.schema().identifierFieldNames()).containsExactlyInAnyOrder("id", "region");
    assertThat(table.spec().fields()).extracting(f -> f.name()).containsExactly("region");
    assertThat(
            ((org.apache.iceberg.HasTableOperations) table).operations().current().formatVersion())
        .isEqualTo(2);
    assertThat(table.properties())
        .containsEntry("write.parquet.bloom-filter-enabled.column.id", "true")
        .containsEntry("write.parquet.bloom-filter-enabled.column.region", "true");
    assertThat(rows("events")).containsExactlyInAnyOrder("1|eu|a", "2|us|b");
  }

  @Test
  void aPrimaryKeyTableTakesUpsertsAsEqualityDeletes() throws Exception {
    TableEnvironment env = batch();
    declare(env, "t", "id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED");
    run(env, "INSERT INTO t VALUES (1, 'a'), (2, 'b')");
    run(env, "INSERT INTO t VALUES (2, 'B'), (3, 'c')");

    assertThat(rows("t")).containsExactlyInAnyOrder("1|a", "2|B", "3|c");
    assertThat(icebergTable("t").currentSnapshot().summary())
        .containsKey(SnapshotSummary.ADD_EQ_DELETE_FILES_PROP);
  }

  @Test
  void aTableWithoutKeyTakesInsertsOnly() throws Exception {
    TableEnvironment env = batch();
    declare(env, "log", "id INT, v STRING");
    run(env, "INSERT INTO log VALUES (1, 'a'), (1, 'a')");
    assertThat(rows("log")).containsExactly("1|a", "1|a");

    // An updating query cannot feed an insert-only table: the planner says so.
    TableEnvironment streaming = streaming();
    declare(streaming, "log", "id INT, v STRING");
    declare(streaming, "src", "id INT, v STRING", "table", "log");
    assertThatThrownBy(
            () -> streaming.executeSql("INSERT INTO log SELECT id, MAX(v) FROM src GROUP BY id"))
        .hasMessageContaining("doesn't support consuming update");
  }

  @Test
  void insertOverwriteReplacesThePartitionsWritten() throws Exception {
    TableEnvironment env = batch();
    declare(
        env,
        "p",
        "id INT, region STRING, PRIMARY KEY (id, region) NOT ENFORCED)"
            + " PARTITIONED BY (region");
    run(env, "INSERT INTO p VALUES (1, 'eu'), (2, 'eu'), (3, 'us')");
    run(env, "INSERT OVERWRITE p VALUES (4, 'eu')");
    assertThat(rows("p")).containsExactlyInAnyOrder("4|eu", "3|us");

    run(env, "INSERT OVERWRITE p PARTITION (region = 'us') SELECT 5");
    assertThat(rows("p")).containsExactlyInAnyOrder("4|eu", "5|us");

    TableEnvironment streaming = streaming();
    declare(
        streaming,
        "p",
        "id INT, region STRING, PRIMARY KEY (id, region) NOT ENFORCED)"
            + " PARTITIONED BY (region");
    assertThatThrownBy(() -> streaming.executeSql("INSERT OVERWRITE p VALUES (6, 'eu')"))
        .hasMessageContaining("OVERWRITE");
  }

  @Test
  void anExactDeleteRunsWithoutAJobAndDropsOrDeletesByPosition() throws Exception {
    TableEnvironment env = batch();
    declare(env, "log", "id INT, v STRING"); // no key: only pushdown can delete
    run(env, "INSERT INTO log VALUES (1, 'a'), (2, CAST(NULL AS STRING)), (3, 'c')");
    run(env, "INSERT INTO log VALUES (4, 'd')");

    // NOT (v = 'a') is UNKNOWN for the NULL row: SQL keeps it.
    var result = env.executeSql("DELETE FROM log WHERE NOT (v = 'a')");
    assertThat(result.getJobClient()).isEmpty(); // pushed down: no Flink job ran
    assertThat(rows("log")).containsExactlyInAnyOrder("1|a", "2|null");
    Snapshot snapshot = icebergTable("log").currentSnapshot();
    assertThat(snapshot.summary())
        .containsEntry(SnapshotSummary.DELETED_FILES_PROP, "1")
        .containsEntry(SnapshotSummary.ADDED_POS_DELETES_PROP, "1");

    run(env, "DELETE FROM log");
    assertThat(rows("log")).isEmpty();
  }

  @Test
  void deleteAndUpdateWithConditionsSkadeCannotPushWorkByKey() throws Exception {
    TableEnvironment env = batch();
    declare(env, "t", "id INT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED");
    run(env, "INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)");

    run(env, "DELETE FROM t WHERE UPPER(v) = 'B'");
    assertThat(icebergTable("t").currentSnapshot().summary())
        .containsKey(SnapshotSummary.ADD_EQ_DELETE_FILES_PROP);
    run(env, "UPDATE t SET n = n * 10, v = 'x' WHERE UPPER(v) = 'C' OR id = 1");
    assertThat(rows("t")).containsExactlyInAnyOrder("1|x|10", "3|x|30");

    assertThatThrownBy(() -> env.executeSql("UPDATE t SET id = 9 WHERE id = 1"))
        .hasMessageContaining("primary key column(s) [id]");

    declare(env, "log", "id INT, v STRING");
    run(env, "INSERT INTO log VALUES (1, 'a')");
    assertThatThrownBy(() -> env.executeSql("DELETE FROM log WHERE UPPER(v) = 'A'"))
        .hasMessageContaining("has no primary key");
    assertThatThrownBy(() -> env.executeSql("UPDATE log SET v = 'b'"))
        .hasMessageContaining("needs a primary key");
    assertThat(rows("log")).containsExactly("1|a"); // nothing lost by the refused statements
  }

  @Test
  void sinkParallelismSetsTheWriters() throws Exception {
    TableEnvironment env = batch();
    declare(env, "t", "id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED", "sink.parallelism", "1");
    String plan =
        env.explainSql(
            "INSERT INTO t VALUES (1, 'a')",
            org.apache.flink.table.api.ExplainDetail.JSON_EXECUTION_PLAN);
    assertThat(plan).contains("\"parallelism\" : 1");
    run(env, "INSERT INTO t VALUES (1, 'a')");
    assertThat(rows("t")).containsExactly("1|a");
  }

  /** The table's rows by Iceberg's reader, as {@code a|b|c}. */
  private List<String> rows(String table) throws Exception {
    List<String> columns =
        icebergTable(table).schema().columns().stream().map(column -> column.name()).toList();
    return icebergRows(table).stream()
        .map(
            row ->
                columns.stream()
                    .map(column -> String.valueOf(row.getField(column)))
                    .collect(java.util.stream.Collectors.joining("|")))
        .toList();
  }
}
