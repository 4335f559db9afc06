package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.ParquetFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The program of issue 18 as an Iceberg user writes it: the catalog opened the standard Iceberg way
 * ({@code CatalogUtil.loadCatalog}), a table created and written with Iceberg's own API, then, in
 * the same JVM, Flink SQL on the same warehouse (a {@code 'connector' = 'skade'} table, a {@code
 * skade} catalog, a lookup join, an {@code INSERT}), without the program knowing of any sharing
 * API; and the catalogs closed in every order, the store left consistent.
 */
@Timeout(240)
class IcebergProgramWithFlinkSqlTest {
  private static final String IMPL = "io.skade.catalog.SkadeCatalog";
  private static final TableIdentifier PEOPLE = TableIdentifier.of("shop", "people");
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "city", Types.StringType.get())),
          java.util.Set.of(1));
  private static final Duration WAIT = Duration.ofSeconds(90);

  @TempDir Path dir;

  @Test
  void aProgramThatOpensTheCatalogTheIcebergWayRunsFlinkSqlOnTheSameWarehouse() throws Exception {
    // A warehouse whose name needs quoting in a URI, on every path below.
    String warehouse = dir.resolve("a b%c#d+é").resolve("lake").toString();
    Catalog lake =
        CatalogUtil.loadCatalog(IMPL, "lake", Map.of("warehouse", warehouse), new Configuration());
    ((SupportsNamespaces) lake).createNamespace(Namespace.of("shop"));
    Table people = lake.buildTable(PEOPLE, SCHEMA).withProperty("format-version", "2").create();
    appendWithIceberg(people, row(1, "ada", "oslo"), row(2, "bo", "bergen"));

    TableEnvironment streaming = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
    streaming.executeSql(
        "CREATE TABLE people (id BIGINT, name STRING, city STRING,"
            + " PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'skade', 'warehouse' = "
            + sql(warehouse)
            + ", 'database' = 'shop', 'table' = 'people')");
    streaming.executeSql(
        "CREATE CATALOG skade WITH ('type' = 'skade', 'warehouse' = " + sql(warehouse) + ")");
    TableResult viaConnector = streaming.executeSql("SELECT * FROM people");
    TableResult viaCatalog = streaming.executeSql("SELECT * FROM skade.shop.people");
    List<Row> connectorRows = Collections.synchronizedList(new ArrayList<>());
    List<Row> catalogRows = Collections.synchronizedList(new ArrayList<>());
    Thread connectorCollector = SqlTestBase.collectInBackground(viaConnector, connectorRows);
    Thread catalogCollector = SqlTestBase.collectInBackground(viaCatalog, catalogRows);
    TableEnvironment batch = TableEnvironment.create(EnvironmentSettings.inBatchMode());
    SkadeCatalog second = null;
    try {
      awaitRows(connectorRows, 2);
      awaitRows(catalogRows, 2);

      // A commit through the user's catalog reaches both running jobs.
      appendWithIceberg(lake.loadTable(PEOPLE), row(3, "cy", "tromso"));
      awaitRows(connectorRows, 3);
      awaitRows(catalogRows, 3);

      // An INSERT through Flink SQL (an upsert of 1, a new 4), read back with Iceberg's reader.
      batch.executeSql(
          "CREATE CATALOG skade WITH ('type' = 'skade', 'warehouse' = " + sql(warehouse) + ")");
      batch
          .executeSql(
              "INSERT INTO skade.shop.people VALUES (1, 'ada', 'bergen')," + " (4, 'di', 'bodo')")
          .await();
      assertThat(icebergRows(lake.loadTable(PEOPLE)))
          .containsExactly("1 ada bergen", "2 bo bergen", "3 cy tromso", "4 di bodo");
      awaitRows(connectorRows, 6);
      awaitRows(catalogRows, 6);

      // A lookup join against the table, as of each probe's processing time.
      streaming.executeSql(
          "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS pt"
              + " FROM (VALUES (CAST(1 AS BIGINT)), (3), (4), (9)) AS t(k)");
      List<String> joined = new ArrayList<>();
      try (CloseableIterator<Row> rows =
          streaming
              .executeSql(
                  "SELECT p.k, d.name, d.city"
                      + " FROM probes AS p LEFT JOIN people FOR SYSTEM_TIME AS OF p.pt AS d"
                      + " ON p.k = d.id")
              .collect()) {
        rows.forEachRemaining(row -> joined.add(row.toString()));
      }
      assertThat(joined)
          .containsExactlyInAnyOrder(
              "+I[1, ada, bergen]", "+I[3, cy, tromso]", "+I[4, di, bodo]", "+I[9, null, null]");

      // The catalog that opened the store closes; the jobs and a catalog opened otherwise go on.
      ((SkadeCatalog) lake).close();
      second = new SkadeCatalog();
      second.initialize("second", Map.of("warehouse", warehouse));
      appendWithIceberg(second.loadTable(PEOPLE), row(5, "eve", "oslo"));
      awaitRows(connectorRows, 7);
      awaitRows(catalogRows, 7);
    } finally {
      for (TableResult job : List.of(viaConnector, viaCatalog)) {
        job.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
      }
      connectorCollector.join(30_000);
      catalogCollector.join(30_000);
    }

    List<String> expected = icebergRows(second.loadTable(PEOPLE));
    assertThat(expected)
        .containsExactly("1 ada bergen", "2 bo bergen", "3 cy tromso", "4 di bodo", "5 eve oslo");
    for (List<Row> changes : List.of(connectorRows, catalogRows)) {
      assertThat(changes.stream().map(Row::toString))
          .containsExactlyInAnyOrder(
              "+I[1, ada, oslo]",
              "+I[2, bo, bergen]",
              "+I[3, cy, tromso]",
              "-U[1, ada, oslo]",
              "+U[1, ada, bergen]",
              "+I[4, di, bodo]",
              "+I[5, eve, oslo]");
      assertThat(applied(changes))
          .as("the changelog applied in order, against Iceberg's read")
          .containsExactlyElementsOf(expected);
    }

    streaming.executeSql("DROP CATALOG skade");
    batch.executeSql("DROP CATALOG skade");
    second.close();
    // The jobs' sources and lookups close their catalogs shortly after the jobs end.
    Map<String, String> props = Map.of("warehouse", warehouse);
    await().atMost(WAIT).until(() -> SharedCatalogs.holds(props) == 0);
    try (SkadeCatalog again = new SkadeCatalog()) {
      again.initialize("again", props);
      assertThat(icebergRows(again.loadTable(PEOPLE))).containsExactlyElementsOf(expected);
      assertGapless(again);
    }
  }

  /**
   * A user's catalog opened with {@code CatalogUtil.loadCatalog}, one with {@code new
   * SkadeCatalog()} and a Flink {@code skade} catalog, each committing, closed in each of the six
   * orders: the others keep committing and seeing every commit, and once all are closed the store
   * opens again with every commit in a gapless log.
   */
  @Test
  void closingTheProgramsCatalogsInEveryOrderLeavesTheStoreConsistentAndReopenable()
      throws Exception {
    List<List<Integer>> orders =
        List.of(
            List.of(0, 1, 2),
            List.of(0, 2, 1),
            List.of(1, 0, 2),
            List.of(1, 2, 0),
            List.of(2, 0, 1),
            List.of(2, 1, 0));
    for (List<Integer> order : orders) {
      String context =
          "closing order "
              + order
              + " (0: loadCatalog, 1: new SkadeCatalog,"
              + " 2: Flink catalog)";
      String warehouse = dir.resolve("wh" + order.get(0) + order.get(1) + order.get(2)).toString();
      Map<String, String> props = Map.of("warehouse", warehouse);
      SkadeCatalog loaded = (SkadeCatalog) CatalogUtil.loadCatalog(IMPL, "loaded", props, null);
      SkadeCatalog constructed = new SkadeCatalog();
      constructed.initialize("constructed", props);
      TableEnvironment flink = TableEnvironment.create(EnvironmentSettings.inBatchMode());
      flink.executeSql(
          "CREATE CATALOG skade WITH ('type' = 'skade', 'warehouse' = " + sql(warehouse) + ")");
      loaded.createNamespace(Namespace.of("shop"));
      loaded.buildTable(PEOPLE, SCHEMA).create();
      Map<Integer, Boolean> open = new HashMap<>(Map.of(0, true, 1, true, 2, true));
      int appends = 0;
      List<String> flinkTables = new ArrayList<>();
      for (int step = 0; step <= order.size(); step++) {
        // Every open catalog commits, and every open one sees all of it.
        for (int c : List.of(0, 1, 2)) {
          if (!open.get(c)) {
            continue;
          }
          if (c == 2) {
            String name = "t" + step; // DDL: a commit through the Flink catalog, no job
            flink.executeSql("CREATE TABLE skade.shop." + name + " (x BIGINT)");
            flinkTables.add(name);
          } else {
            SkadeCatalog catalog = c == 0 ? loaded : constructed;
            appendWithIceberg(catalog.loadTable(PEOPLE), row(100 * step + c, "n", "c"));
            appends++;
          }
        }
        for (int c : List.of(0, 1)) {
          if (open.get(c)) {
            SkadeCatalog catalog = c == 0 ? loaded : constructed;
            assertThat(icebergRows(catalog.loadTable(PEOPLE))).as(context).hasSize(appends);
            assertThat(catalog.listTables(Namespace.of("shop")))
                .as(context)
                .hasSize(1 + flinkTables.size());
          }
        }
        if (open.get(2)) {
          assertThat(flinkRows(flink, "SHOW TABLES IN skade.shop"))
              .as(context)
              .hasSize(1 + flinkTables.size());
        }
        if (step == order.size()) {
          break;
        }
        int closing = order.get(step);
        switch (closing) {
          case 0 -> loaded.close();
          case 1 -> constructed.close();
          default -> flink.executeSql("DROP CATALOG skade");
        }
        open.put(closing, false);
        assertThat(SharedCatalogs.holds(props)).as(context).isEqualTo(2 - step);
      }
      try (SkadeCatalog again = new SkadeCatalog()) {
        again.initialize("again", props);
        assertThat(icebergRows(again.loadTable(PEOPLE))).as(context).hasSize(appends);
        assertThat(again.listTables(Namespace.of("shop")))
            .as(context)
            .hasSize(1 + flinkTables.size());
        assertGapless(again);
        // The table, one commit per append, one per table Flink created.
        assertThat(again.commitSeq()).as(context).isEqualTo(1 + appends + flinkTables.size());
      }
    }
  }

  private static Record row(long id, String name, String city) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("name", name);
    record.setField("city", city);
    return record;
  }

  /** Writes {@code rows} to one Parquet file with Iceberg's own writers and appends it. */
  private static void appendWithIceberg(Table table, Record... rows) throws IOException {
    ParquetFiles.append(table, List.of(rows));
  }

  /** The table's rows by Iceberg's own reader, as "id name city", by id. */
  private static List<String> icebergRows(Table table) throws IOException {
    TreeMap<Long, String> rows = new TreeMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record r : records) {
        rows.put(
            (Long) r.getField("id"),
            r.getField("id") + " " + r.getField("name") + " " + r.getField("city"));
      }
    }
    return new ArrayList<>(rows.values());
  }

  /** The rows a changelog leaves, applied in order: a retraction must meet its row. */
  private static List<String> applied(List<Row> changes) {
    TreeMap<Long, String> rows = new TreeMap<>();
    synchronized (changes) {
      for (Row change : changes) {
        long id = (Long) change.getField(0);
        String row = id + " " + change.getField(1) + " " + change.getField(2);
        if (change.getKind() == RowKind.INSERT || change.getKind() == RowKind.UPDATE_AFTER) {
          assertThat(rows.put(id, row)).as("an insert meets no row: %s", change).isNull();
        } else {
          assertThat(rows.remove(id)).as("a retraction meets its row: %s", change).isEqualTo(row);
        }
      }
    }
    return new ArrayList<>(rows.values());
  }

  private static void assertGapless(SkadeCatalog catalog) {
    List<Long> seqs = new ArrayList<>();
    for (CommitEvent event : catalog.commitsSince(0)) {
      seqs.add(event.commitSeq());
    }
    assertThat(seqs)
        .as("the commit log")
        .isEqualTo(LongStream.rangeClosed(1, catalog.commitSeq()).boxed().toList());
  }

  private static void awaitRows(List<Row> rows, int count) {
    await().atMost(WAIT).until(() -> rows.size() >= count);
  }

  private static List<Row> flinkRows(TableEnvironment env, String statement) throws Exception {
    List<Row> rows = new ArrayList<>();
    try (CloseableIterator<Row> it = env.executeSql(statement).collect()) {
      it.forEachRemaining(rows::add);
    }
    return rows;
  }

  /** {@code value} as a SQL string literal. */
  private static String sql(String value) {
    return "'" + value.replace("'", "''") + "'";
  }
}
