package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.ShopHistory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;

/**
 * A database changelog table ({@code 'scan.tables'}) over a namespace's history ({@link
 * ShopHistory}: upserts, deletes, atomic commits of several tables, a table created midway, a
 * column added, a rollback): Flink's own aggregation of its changes — each row's retraction
 * matching the row it retracts, across the added column — ends equal to Iceberg's read of every
 * table; the metadata columns say each change's commit and atomic commit; bad declarations are
 * named.
 */
class SqlDatabaseChangelogTest extends SqlTestBase {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String COLUMNS = "table_name STRING, data STRING";

  @Test
  void flinksAggregateOfTheChangesEqualsIcebergsReadOfEveryTable() throws Exception {
    SkadeCatalog skade = catalog.catalog();
    ShopHistory history = new ShopHistory(skade, 5);
    while (history.steps() < 70) {
      history.step();
    }
    TableEnvironment env = streaming();
    declare(
        env,
        "changes",
        COLUMNS,
        "scan.tables",
        "shop\\..*",
        "scan.consistency",
        "commit",
        "scan.startup.mode",
        "earliest");
    TableResult result =
        env.executeSql(
            "SELECT table_name, data, COUNT(*) AS n FROM changes GROUP BY table_name, data");
    List<Row> changelog = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, changelog);
    Map<String, Map<Map<String, Object>, Integer>> expected = new TreeMap<>();
    for (TableIdentifier table :
        List.of(ShopHistory.ORDERS, ShopHistory.CUSTOMERS, ShopHistory.AUDIT, ShopHistory.LATE)) {
      expected.put(table.toString(), ShopHistory.rows(skade.loadTable(table)));
    }
    try {
      await()
          .atMost(Duration.ofMinutes(2))
          .untilAsserted(() -> assertThat(materialized(changelog)).isEqualTo(expected));
    } finally {
      result.getJobClient().orElseThrow().cancel().get();
      collector.join();
    }
  }

  @Test
  void metadataColumnsSayEachChangesCommitAndAtomicCommit() throws Exception {
    SkadeCatalog skade = catalog.catalog();
    ShopHistory history = new ShopHistory(skade, 5);
    while (history.steps() < 10) {
      history.step();
    }
    TableEnvironment env = streaming();
    declare(
        env,
        "changes",
        COLUMNS
            + ", commit_seq BIGINT METADATA VIRTUAL, transaction_start BIGINT METADATA VIRTUAL,"
            + " snapshot_id BIGINT METADATA VIRTUAL,"
            + " commit_time TIMESTAMP_LTZ(3) METADATA VIRTUAL",
        "scan.tables",
        "shop\\.(orders|audit)",
        "scan.startup.mode",
        "earliest");
    TableResult result = env.executeSql("SELECT * FROM changes");
    List<Row> rows = new ArrayList<>();
    try (org.apache.flink.util.CloseableIterator<Row> it = result.collect()) {
      while (rows.size() < 4 && it.hasNext()) {
        rows.add(it.next());
      }
      result.getJobClient().orElseThrow().cancel().get();
    }
    List<io.skade.catalog.CommitEvent> log = skade.commitsSince(0, 1000);
    for (Row row : rows) {
      long commitSeq = (Long) row.getField("commit_seq");
      io.skade.catalog.CommitEvent commit = log.get((int) commitSeq - 1);
      assertThat(skade.commitTableIdentifier(commit.tableKey()).toString())
          .isEqualTo(row.getField("table_name"));
      assertThat(row.getField("transaction_start"))
          .isEqualTo(commit.inTransaction() ? commit.transactionSeq() : commitSeq);
      assertThat(commit.addedSnapshotIds()).contains((Long) row.getField("snapshot_id"));
      assertThat(row.getField("commit_time")).isNotNull();
      assertThat(row.getField("table_name")).isIn("shop.orders", "shop.audit");
    }
  }

  @Test
  void badDeclarationsAreNamed() {
    new ShopHistory(catalog.catalog(), 5);
    TableEnvironment env = streaming();
    declare(env, "wrong_columns", "name STRING, data STRING", "scan.tables", "shop\\..*");
    assertThatThrownBy(() -> env.executeSql("SELECT * FROM wrong_columns"))
        .hasStackTraceContaining("whose columns are (table_name STRING, data STRING)");
    declare(env, "bad_mode", COLUMNS, "scan.tables", "shop\\..*", "scan.startup.mode", "full");
    assertThatThrownBy(() -> env.executeSql("SELECT * FROM bad_mode"))
        .hasStackTraceContaining("starts 'latest' (the default), 'earliest' or 'from-commit-seq'");
    declare(env, "bounded", COLUMNS, "scan.tables", "shop\\..*", "scan.bounded", "true");
    assertThatThrownBy(() -> env.executeSql("SELECT * FROM bounded"))
        .hasStackTraceContaining("option 'scan.bounded' of table")
        .hasStackTraceContaining("does not apply to a database changelog table");
    declare(env, "bad_consistency", COLUMNS, "scan.tables", "shop", "scan.consistency", "strict");
    assertThatThrownBy(() -> env.executeSql("SELECT * FROM bad_consistency"))
        .hasStackTraceContaining("unknown skade scan consistency 'strict'");
    declare(env, "bad_pattern", COLUMNS, "scan.tables", "shop.(orders");
    assertThatThrownBy(() -> env.executeSql("SELECT * FROM bad_pattern"))
        .hasStackTraceContaining("table pattern 'shop.(orders' is not a regular expression");
  }

  /** The aggregate's result as its changelog leaves it: per table, each row's count. */
  private static Map<String, Map<Map<String, Object>, Integer>> materialized(List<Row> changelog)
      throws Exception {
    Map<String, Map<Map<String, Object>, Integer>> tables = new TreeMap<>();
    List<Row> copy;
    synchronized (changelog) {
      copy = new ArrayList<>(changelog);
    }
    for (Row row : copy) {
      Map<Map<String, Object>, Integer> rows =
          tables.computeIfAbsent((String) row.getField(0), table -> new HashMap<>());
      Map<String, Object> values = values((String) row.getField(1));
      switch (row.getKind()) {
        case INSERT, UPDATE_AFTER -> rows.put(values, ((Long) row.getField(2)).intValue());
        case DELETE -> rows.remove(values);
        default -> {} // -U: the +U after it holds
      }
    }
    tables.values().removeIf(Map::isEmpty);
    return tables;
  }

  /** A JSON row's values: {@code id} a long, the others strings. */
  private static Map<String, Object> values(String data) throws Exception {
    Map<String, Object> values = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = JSON.readTree(data).fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> field = it.next();
      values.put(
          field.getKey(),
          field.getKey().equals("id") ? field.getValue().asLong() : field.getValue().asText());
    }
    return values;
  }
}
