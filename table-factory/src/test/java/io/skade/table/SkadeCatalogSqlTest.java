package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.SkadeCatalog;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The {@code skade} Flink catalog, driven by SQL only. */
@Timeout(240)
class SkadeCatalogSqlTest {
  @TempDir Path dir;

  private TableEnvironment withCatalog(TableEnvironment env) {
    env.executeSql(
        "CREATE CATALOG c WITH ('type' = 'skade', 'warehouse' = '"
            + dir.resolve("warehouse")
            + "')");
    env.executeSql("USE CATALOG c");
    return env;
  }

  @Test
  void ddlAndDataSurviveClosingAndReopeningTheTableEnvironment() throws Exception {
    TableEnvironment first = withCatalog(SqlTestBase.batch());
    first.executeSql("CREATE DATABASE shop");
    first.executeSql(
        "CREATE TABLE shop.customers (id INT, name STRING," + " PRIMARY KEY (id) NOT ENFORCED)");
    SqlTestBase.run(first, "INSERT INTO shop.customers VALUES (1, 'ada'), (2, 'bob')");
    first.executeSql("ALTER TABLE shop.customers ADD city STRING");
    SqlTestBase.run(first, "INSERT INTO shop.customers VALUES (2, 'bob', 'oslo')");
    first.executeSql("CREATE TABLE shop.scratch (x INT)");
    first.executeSql("DROP TABLE shop.scratch");

    assertThat(values(first, "SHOW DATABASES")).contains("default", "shop");
    assertThat(values(first, "SHOW TABLES IN shop")).containsExactly("customers");
    List<Row> described = SqlTestBase.collect(first, "DESCRIBE shop.customers");
    assertThat(described)
        .extracting(row -> row.getField(0) + " " + row.getField(1) + " " + row.getField(3))
        .containsExactly("id INT PRI(id)", "name STRING null", "city STRING null");
    first.getCatalog("c").orElseThrow().close();

    // The catalog's RocksDB store is closed now: a plain catalog can open it and sees it all.
    SkadeCatalog plain = new SkadeCatalog();
    plain.initialize("check", Map.of("warehouse", dir.resolve("warehouse").toString()));
    try (plain) {
      Table table = plain.loadTable(TableIdentifier.of("shop", "customers"));
      assertThat(table.schema().identifierFieldNames()).containsExactly("id");
      assertThat(plain.listTables(Namespace.of("shop")))
          .containsExactly(TableIdentifier.of("shop", "customers"));
    }

    TableEnvironment second = withCatalog(SqlTestBase.batch());
    assertThat(
            SqlTestBase.collect(second, "SELECT * FROM shop.customers").stream()
                .map(Row::toString)
                .sorted())
        .containsExactly("+I[1, ada, null]", "+I[2, bob, oslo]");
    assertThat(
            SqlTestBase.collect(second, "SHOW CREATE TABLE shop.customers")
                .get(0)
                .getField(0)
                .toString())
        .contains("PRIMARY KEY (`id`) NOT ENFORCED");
    second.executeSql("DROP TABLE shop.customers");
    second.executeSql("DROP DATABASE shop");
    assertThat(values(second, "SHOW DATABASES")).containsExactly("default");
    second.getCatalog("c").orElseThrow().close();
  }

  @Test
  void catalogTablesStreamTheirChangelogAndCheckTheirOptions() throws Exception {
    TableEnvironment writer = withCatalog(SqlTestBase.batch());
    writer.executeSql("CREATE TABLE t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)");
    SqlTestBase.run(writer, "INSERT INTO t VALUES (1, 'a')");
    SqlTestBase.run(writer, "INSERT INTO t VALUES (1, 'b')");

    TableEnvironment reader = withCatalog(SqlTestBase.streaming());
    List<String> changes =
        SqlTestBase.collect(
                reader,
                "SELECT * FROM t /*+ OPTIONS("
                    + "'scan.startup.mode' = 'earliest', 'scan.bounded' = 'true') */")
            .stream()
            .map(Row::toString)
            .toList();
    assertThat(changes).containsExactly("+I[1, a]", "-U[1, a]", "+U[1, b]");

    assertThatThrownBy(
            () ->
                reader.executeSql("SELECT * FROM t /*+ OPTIONS('scan.startup.mod' = 'latest') */"))
        .rootCause()
        .hasMessageContaining("scan.startup.mod");
    assertThatThrownBy(
            () -> reader.executeSql("SELECT * FROM t /*+ OPTIONS('warehouse' = '/elsewhere') */"))
        .rootCause()
        .hasMessageContaining("warehouse");
    writer.getCatalog("c").orElseThrow().close();
    reader.getCatalog("c").orElseThrow().close();
  }

  private static List<String> values(TableEnvironment env, String statement) throws Exception {
    return SqlTestBase.collect(env, statement).stream()
        .map(row -> (String) row.getField(0))
        .toList();
  }
}
