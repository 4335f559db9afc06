package io.skade.table;

import static io.skade.table.SqlTestBase.batch;
import static io.skade.table.SqlTestBase.collect;
import static io.skade.table.SqlTestBase.collectInBackground;
import static io.skade.table.SqlTestBase.run;
import static io.skade.table.SqlTestBase.streaming;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.ConsumerCursor;
import io.skade.server.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink SQL on a catalog a skade server owns (a child JVM), with only its {@code uri}: {@code
 * CREATE CATALOG ... WITH ('type' = 'skade', 'uri' = ...)} creates a database and a table and
 * writes, updates and deletes rows; a {@code 'connector' = 'skade'} table with {@code uri} reads
 * the changelog as a streaming job that only the server's commit feed wakes (its poll interval is
 * longer than the test); a lookup join sees the table as committed. Iceberg's REST client, reading
 * the table independently, agrees, and this JVM creates no catalog of its own. The consumer
 * procedures reset and drop a consumer the server stores.
 */
class SqlRemoteCatalogTest {
  @TempDir Path root;

  @Test
  @Timeout(300)
  void sqlThroughTheServerWritesReadsTheChangelogAndJoins() throws Exception {
    try (ServerProcess server = new ServerProcess(root)) {
      String connection = "'uri' = '" + server.uri() + "', 'token' = '" + ServerProcess.TOKEN + "'";
      TableEnvironment writer = batch();
      writer.executeSql("CREATE CATALOG lake WITH ('type' = 'skade', " + connection + ")");
      writer.executeSql("CREATE DATABASE lake.shop");
      writer.executeSql(
          "CREATE TABLE lake.shop.customers (id INT NOT NULL, name STRING,"
              + " city STRING, PRIMARY KEY (id) NOT ENFORCED)");
      run(
          writer,
          "INSERT INTO lake.shop.customers VALUES (1, 'Ada', 'Oslo'),"
              + " (2, 'Bo', 'Bergen'), (3, 'Cy', 'Oslo')");

      TableEnvironment reader = streaming();
      reader.executeSql(
          "CREATE TABLE customers_cdc (id INT NOT NULL, name STRING, city STRING,"
              + " PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'skade', "
              + connection
              + ", 'database' = 'shop', 'table' = 'customers', 'scan.poll-interval' = '30 min')");
      List<Row> changes = Collections.synchronizedList(new ArrayList<>());
      TableResult cdc = reader.executeSql("SELECT * FROM customers_cdc");
      Thread collector = collectInBackground(cdc, changes);
      await().atMost(Duration.ofSeconds(60)).until(() -> changes.size() >= 3);

      run(writer, "INSERT INTO lake.shop.customers VALUES (2, 'Bo', 'Tromsø')");
      run(writer, "DELETE FROM lake.shop.customers WHERE id = 1");
      run(writer, "INSERT INTO lake.shop.customers VALUES (4, 'Di', 'Oslo')");

      Map<Integer, String> expected = Map.of(2, "Bo Tromsø", 3, "Cy Oslo", 4, "Di Oslo");
      try (RESTCatalog rest = new RESTCatalog()) {
        rest.initialize(
            "check", new HashMap<>(Map.of("uri", server.uri(), "token", ServerProcess.TOKEN)));
        assertThat(icebergRows(rest))
            .as("the table as Iceberg's REST client reads it")
            .isEqualTo(expected);
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> applied(changes).equals(expected));
      assertThat(kinds(changes))
          .as("the changelog's kinds")
          .containsExactlyInAnyOrder("+I", "+I", "+I", "-U", "+U", "-D", "+I");
      cdc.getJobClient().orElseThrow().cancel().get();
      collector.join(30_000);

      TableEnvironment join = streaming();
      join.executeSql("CREATE CATALOG lake WITH ('type' = 'skade', " + connection + ")");
      join.executeSql(
          "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS pt"
              + " FROM (VALUES (1), (2), (3), (4)) AS t(k)");
      List<Row> joined =
          collect(
              join,
              "SELECT p.k, c.name, c.city FROM probes AS p"
                  + " LEFT JOIN lake.shop.customers FOR SYSTEM_TIME AS OF p.pt AS c ON p.k = c.id");
      Map<Integer, String> byKey = new TreeMap<>();
      joined.forEach(
          row ->
              byKey.put(
                  (Integer) row.getField(0),
                  row.getField(1) == null ? null : row.getField(1) + " " + row.getField(2)));
      Map<Integer, String> expectedJoin = new TreeMap<>(expected);
      expectedJoin.put(1, null);
      assertThat(byKey).as("the lookup join, key by key").isEqualTo(expectedJoin);
    }
    try (Stream<Path> files = Files.list(root)) {
      assertThat(files.map(path -> path.getFileName().toString()))
          .as("the server's token file, warehouse and log, and nothing else")
          .containsExactlyInAnyOrder("tokens", "warehouse", "server.log");
    }
  }

  @Test
  @Timeout(180)
  void aConsumerIsResetAndDroppedThroughTheServer() throws Exception {
    try (ServerProcess server = new ServerProcess(root)) {
      String connection = "'uri' = '" + server.uri() + "', 'token' = '" + ServerProcess.TOKEN + "'";
      TableEnvironment sql = batch();
      sql.executeSql("CREATE CATALOG lake WITH ('type' = 'skade', " + connection + ")");
      sql.executeSql("CREATE DATABASE lake.shop");
      sql.executeSql(
          "CREATE TABLE lake.shop.orders (id INT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED)");
      run(sql, "INSERT INTO lake.shop.orders VALUES (1, 'a')");
      run(sql, "INSERT INTO lake.shop.orders VALUES (2, 'b')");
      TableIdentifier orders = TableIdentifier.of("shop", "orders");
      try (CatalogConnection remote =
          CatalogConnection.open(Map.of("uri", server.uri(), "token", ServerProcess.TOKEN))) {
        Table table = remote.catalog().loadTable(orders);
        long last = table.currentSnapshot().snapshotId();
        long first = table.currentSnapshot().parentId();
        remote
            .consumers()
            .storeConsumer(
                "billing",
                new ConsumerCursor(
                    orders, table.uuid().toString(), last, remote.feed().commitSeq()));
        long firstSeq = remote.commitOf(orders, first).orElseThrow().commitSeq();

        assertThat(
                collect(
                    sql,
                    "CALL lake.sys.reset_consumer(`table` => 'shop.orders', consumer => 'billing',"
                        + " snapshot_id => "
                        + first
                        + ", force => true)"))
            .containsExactly(Row.of("billing", first, firstSeq));
        assertThat(remote.consumers().consumer("billing").orElseThrow().cursor())
            .isEqualTo(new ConsumerCursor(orders, table.uuid().toString(), first, firstSeq));
        assertThat(collect(sql, "CALL lake.sys.drop_consumer('shop.orders', 'billing', true)"))
            .containsExactly(Row.of("billing", first, firstSeq));
        assertThat(remote.consumers().consumer("billing")).isEmpty();
      }
    }
  }

  private static Map<Integer, String> icebergRows(RESTCatalog rest) throws Exception {
    Map<Integer, String> rows = new TreeMap<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(rest.loadTable(TableIdentifier.of("shop", "customers"))).build()) {
      records.forEach(
          r -> rows.put((Integer) r.getField("id"), r.getField("name") + " " + r.getField("city")));
    }
    return rows;
  }

  /** The changelog applied to an empty table; a change that does not apply strictly fails. */
  private static Map<Integer, String> applied(List<Row> changes) {
    Map<Integer, String> rows = new TreeMap<>();
    synchronized (changes) {
      for (Row change : changes) {
        Integer id = (Integer) change.getField(0);
        String value = change.getField(1) + " " + change.getField(2);
        switch (change.getKind()) {
          case INSERT, UPDATE_AFTER ->
              assertThat(rows.put(id, value)).as("the row an insert of %s met", change).isNull();
          default ->
              assertThat(rows.remove(id)).as("the row %s retracted", change).isEqualTo(value);
        }
      }
    }
    return rows;
  }

  private static List<String> kinds(List<Row> changes) {
    synchronized (changes) {
      return changes.stream().map(row -> row.getKind().shortString()).toList();
    }
  }
}
