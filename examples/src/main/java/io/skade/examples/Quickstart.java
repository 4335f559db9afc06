package io.skade.examples;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.flink.SkadeJobListenerFactory;
import io.skade.source.SkadeSource;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * skade's embedded end-to-end demo on a local warehouse.
 *
 * <p>It opens (or creates) a skade catalog, creates {@code shop.orders}, and lets two writers
 * append real Parquet files to it concurrently while a subscriber prints the commit feed live as
 * each commit becomes durable, then replays the durable commit log and counts the rows. Then it
 * upserts and deletes rows of the primary-key table {@code shop.customers} (merge-on-read) and
 * prints the exact changelog of that window: {@code -U/+U} pairs and {@code -D} with full rows.
 * Last, a Flink DataStream job with skade's source tails {@code shop.customers} while a writer
 * upserts and deletes, printing each {@code +I/-U/+U/-D} row as it happens. Finally the same
 * warehouse through Flink SQL: a {@code skade} catalog, a streaming {@code SELECT} printing the
 * changelog of {@code INSERT}, {@code UPDATE} and {@code DELETE} statements, a batch query.
 *
 * <p>Usage: {@code Quickstart [warehouse-dir]}; without a directory it uses a fresh temporary one.
 */
public final class Quickstart {
  static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  static final Schema ORDERS_SCHEMA =
      new Schema(
          Types.NestedField.required(1, "order_id", Types.LongType.get()),
          Types.NestedField.required(2, "customer", Types.StringType.get()),
          Types.NestedField.required(3, "amount", Types.DoubleType.get()));
  static final TableIdentifier CUSTOMERS = TableIdentifier.of("shop", "customers");
  static final Schema CUSTOMERS_SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "city", Types.StringType.get())),
          Set.of(1));
  static final int WRITERS = 2;
  static final int APPENDS_PER_WRITER = 5;
  static final int ROWS_PER_APPEND = 20;

  private Quickstart() {}

  public static void main(String[] args) throws Exception {
    Path warehouse =
        args.length > 0 && !args[0].isBlank()
            ? Path.of(args[0])
            : Files.createTempDirectory("skade-quickstart-");
    run(warehouse, System.out);
  }

  /** Runs the demo on {@code warehouse}, printing to {@code out}; returns the rows in the table. */
  public static long run(Path warehouse, PrintStream out) throws Exception {
    out.println("skade quickstart — warehouse " + warehouse.toAbsolutePath());
    // Lineage of every commit, as OpenLineage events (JSON lines) in a file of the warehouse.
    Path lineage = warehouse.resolve("openlineage.jsonl");
    long lineageStart = Files.exists(lineage) ? Files.size(lineage) : 0;
    Map<String, String> properties =
        Map.of(
            "warehouse",
            warehouse.toString(),
            "lineage.sink",
            "openlineage",
            "lineage.openlineage.url",
            "file:" + lineage);
    // Opened the Iceberg way; the Flink jobs' sources, sinks and lookups and the SQL catalog
    // of this JVM share its store (one committer, one commit feed) while it is open.
    try (SkadeCatalog catalog =
        (SkadeCatalog)
            CatalogUtil.loadCatalog(SkadeCatalog.class.getName(), "demo", properties, null)) {
      out.printf("catalog open at %s, commit_seq %d%n", catalog.catalogPath(), catalog.commitSeq());

      try (CommitSubscription feed = catalog.subscribeCommits()) {
        long start = feed.startCursor();
        long end =
            start + (catalog.tableExists(ORDERS) ? 0 : 1) + (long) WRITERS * APPENDS_PER_WRITER;
        ExecutorService threads = Executors.newFixedThreadPool(WRITERS + 1);
        Future<?> printer = threads.submit(() -> printFeed(catalog, feed, start, end, out));
        createOrders(catalog);
        List<Future<?>> writers = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
          int writer = w;
          writers.add(threads.submit(() -> write(catalog.loadTable(ORDERS), writer)));
        }
        for (Future<?> writer : writers) {
          writer.get();
        }
        printer.get();
        threads.shutdown();

        long replayed = 0;
        for (CommitEvent ignored : catalog.commitsSince(0)) {
          replayed++;
        }
        long rows = countRows(catalog.loadTable(ORDERS));
        out.printf(
            "commit log replays %d commits (1..%d, gapless); shop.orders holds %d rows in"
                + " %d snapshots%n",
            replayed, catalog.commitSeq(), rows, catalog.loadTable(ORDERS).history().size());
        printCustomerChangelog(catalog, out);
        tailCustomers(catalog, properties, out);
        sql(catalog, warehouse, lineage, out);
        printLineage(catalog, lineage, lineageStart, out);
        return rows;
      }
    }
  }

  /** Upserts and deletes on a primary-key table, then the changelog of exactly that window. */
  private static void printCustomerChangelog(SkadeCatalog catalog, PrintStream out) {
    Table customers =
        catalog.tableExists(CUSTOMERS)
            ? catalog.loadTable(CUSTOMERS)
            : catalog.createTable(CUSTOMERS, CUSTOMERS_SCHEMA);
    TableWriter writer = new TableWriter(customers).describedAs("quickstart-customers", List.of());
    Long before =
        customers.currentSnapshot() == null ? null : customers.currentSnapshot().snapshotId();
    writer.upsert(
        List.of(
            customer(1, "Ada", "Oslo"), customer(2, "Bo", "Bergen"), customer(3, "Cy", "Tromsø")));
    writer.upsert(List.of(customer(2, "Bo", "Oslo"))); // Bo moves: -U/+U
    writer.deleteKeys(List.of(customer(3, null, null))); // Cy leaves: -D
    long after = writer.upsert(List.of(customer(4, "Di", "Bodø"))).snapshotId();
    out.printf(
        "changelog of shop.customers, window (%s, %d], per snapshot:%n",
        before == null ? "start" : before, after);
    for (ChangeRow change :
        new ChangelogReader(customers, ChangelogOptions.defaults()).read(before, after)) {
      Record row = change.row();
      out.printf(
          "  %s %-13s id=%s name=%s city=%s%n",
          change.type().symbol(),
          change.type(),
          row.getField("id"),
          row.getField("name"),
          row.getField("city"));
    }
  }

  /**
   * A Flink job tails {@code shop.customers} from the current commit on, while a writer upserts and
   * deletes; each change is printed the moment the job emits it.
   */
  private static void tailCustomers(
      SkadeCatalog catalog, Map<String, String> properties, PrintStream out) throws Exception {
    SkadeSource<RowData> source =
        SkadeSource.builder()
            .catalogProperties(properties)
            .table(CUSTOMERS)
            .startFromCommitSeq(catalog.commitSeq()) // every commit after this one, none before
            .build();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    out.println("a Flink job tails shop.customers while a writer upserts and deletes:");
    try (CloseableIterator<RowData> changes =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade shop.customers")
            .executeAndCollect("skade quickstart tail")) {
      TableWriter writer =
          new TableWriter(catalog.loadTable(CUSTOMERS))
              .describedAs("quickstart-customers", List.of());
      ExecutorService background = Executors.newSingleThreadExecutor();
      Future<?> writes =
          background.submit(
              () -> {
                writer.upsert(List.of(customer(1, "Ada", "Bergen"))); // Ada moves: -U/+U
                writer.upsert(List.of(customer(5, "Eve", "Oslo"))); // Eve joins: +I
                writer.deleteKeys(
                    List.of(customer(4, null, null), customer(5, null, null))); // -D -D
                return null;
              });
      for (int i = 0; i < 5; i++) {
        RowData row = changes.next();
        out.printf(
            "  job: %s id=%d name=%s city=%s%n",
            row.getRowKind().shortString(), row.getLong(0), row.getString(1), row.getString(2));
      }
      writes.get();
      background.shutdown();
    }
  }

  /**
   * The same warehouse through Flink SQL: a {@code skade} catalog, a table created and reset by
   * SQL, a streaming {@code SELECT} printing the changelog that other statements cause, and a batch
   * query over the table the Java writers filled.
   */
  private static void sql(SkadeCatalog catalog, Path warehouse, Path lineage, PrintStream out)
      throws Exception {
    String createCatalog =
        "CREATE CATALOG demo WITH ('type' = 'skade', 'warehouse' = "
            + sqlString(warehouse.toString())
            + ", 'lineage.sink' = 'openlineage',"
            + " 'lineage.openlineage.url' = "
            + sqlString("file:" + lineage)
            + ")";
    // skade's job listener: the jobs' runs in the lineage, and their commits naming them.
    Configuration listener = new Configuration();
    listener.set(
        DeploymentOptions.JOB_STATUS_CHANGED_LISTENERS,
        List.of(SkadeJobListenerFactory.class.getName()));
    TableEnvironment batch =
        TableEnvironment.create(
            EnvironmentSettings.newInstance().inBatchMode().withConfiguration(listener).build());
    batch.executeSql(createCatalog);
    batch.executeSql("USE CATALOG demo");
    batch.executeSql(
        "CREATE TABLE IF NOT EXISTS shop.products (id BIGINT, name STRING,"
            + " price DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED)");
    batch
        .executeSql(
            "INSERT OVERWRITE shop.products VALUES (1, 'kettle', 25.00),"
                + " (2, 'teapot', 40.00), (3, 'mug', 8.50)")
        .await();
    out.println(
        "Flink SQL: a streaming SELECT on shop.products while other statements change" + " it:");

    TableEnvironment streaming =
        TableEnvironment.create(
            EnvironmentSettings.newInstance()
                .inStreamingMode()
                .withConfiguration(listener)
                .build());
    streaming.executeSql(createCatalog);
    streaming.executeSql("USE CATALOG demo");
    TableResult tail =
        streaming.executeSql(
            "SELECT * FROM shop.products /*+ OPTIONS("
                + "'scan.startup.mode' = 'from-commit-seq', 'scan.startup.commit-seq' = '"
                + catalog.commitSeq()
                + "') */");
    String[] statements = {
      "INSERT INTO shop.products VALUES (1, 'kettle', 22.50), (4, 'tray', 12.00)",
      "UPDATE shop.products SET price = price * 2 WHERE name = 'teapot'",
      "DELETE FROM shop.products WHERE id = 3"
    };
    try (CloseableIterator<Row> changes = tail.collect()) {
      ExecutorService background = Executors.newSingleThreadExecutor();
      Future<?> writes =
          background.submit(
              () -> {
                for (String statement : statements) {
                  batch.executeSql(statement).await();
                }
                return null;
              });
      for (String statement : statements) {
        out.println("  sql> " + statement);
      }
      for (int i = 0; i < 6; i++) { // -U +U +I, -U +U, -D
        out.println("  select: " + changes.next());
      }
      writes.get();
      background.shutdown();
    }
    lookupJoin(streaming, out);
    try (CloseableIterator<Row> totals =
        batch
            .executeSql(
                "SELECT customer, COUNT(*) AS orders,"
                    + " SUM(amount) AS total FROM shop.orders GROUP BY customer ORDER BY customer LIMIT 3")
            .collect()) {
      out.println("Flink SQL batch query over shop.orders (written by the Java writers):");
      totals.forEachRemaining(row -> out.println("  " + row));
    }
  }

  /** {@code value} as a SQL string literal, whatever characters it holds. */
  private static String sqlString(String value) {
    return "'" + value.replace("'", "''") + "'";
  }

  /**
   * A lookup join: order lines (product ids 1 to 5 from Flink's datagen source) joined with
   * shop.products as of their processing time. Each probe reads the table's Parquet files in place;
   * the product deleted above (3) and the one never written (5) join no row.
   */
  private static void lookupJoin(TableEnvironment streaming, PrintStream out) throws Exception {
    streaming.getConfig().set("parallelism.default", "1"); // the lines in order
    streaming.executeSql(
        "CREATE TEMPORARY TABLE default_catalog.default_database.order_lines ("
            + "product_id BIGINT, proc_time AS PROCTIME()) WITH ('connector' = 'datagen',"
            + " 'fields.product_id.kind' = 'sequence', 'fields.product_id.start' = '1',"
            + " 'fields.product_id.end' = '5')");
    String join =
        "SELECT l.product_id, p.name, p.price"
            + " FROM default_catalog.default_database.order_lines AS l"
            + " LEFT JOIN shop.products FOR SYSTEM_TIME AS OF l.proc_time AS p"
            + " ON l.product_id = p.id";
    out.println("Flink SQL lookup join: " + join);
    try (CloseableIterator<Row> rows = streaming.executeSql(join).collect()) {
      rows.forEachRemaining(row -> out.println("  join: " + row));
    }
  }

  /**
   * The lineage of this run: once every commit is described, the OpenLineage events the catalog
   * wrote since {@code from}, one line each.
   */
  private static void printLineage(SkadeCatalog catalog, Path file, long from, PrintStream out)
      throws Exception {
    CatalogLineage.Running lineage = CatalogLineage.Running.of(catalog).orElseThrow();
    if (!lineage.awaitCaughtUp(Duration.ofSeconds(30))) {
      throw new IllegalStateException("lineage did not catch up with the catalog within 30 s");
    }
    out.println("Lineage of this run (OpenLineage events in " + file + "):");
    ObjectMapper json = new ObjectMapper();
    byte[] events = Files.readAllBytes(file); // JSON lines in UTF-8
    String written =
        new String(events, (int) from, events.length - (int) from, StandardCharsets.UTF_8);
    for (String line : written.split("\n")) {
      if (!line.isBlank()) {
        out.println("  " + describeLineage(json.readTree(line)));
      }
    }
  }

  private static String describeLineage(JsonNode event) {
    JsonNode facets = event.path("run").path("facets");
    String outputs = datasets(event.path("outputs"), true);
    String inputs = datasets(event.path("inputs"), false);
    if (facets.has("skade_commit")) {
      return String.format(
          "commit_seq %-3d %-9s %s by %s%s",
          facets.path("skade_commit").path("commitSeq").asLong(),
          facets.path("skade_commit").path("operation").asText(),
          outputs,
          event.path("job").path("name").asText(),
          inputs.isEmpty() ? "" : " from " + inputs);
    }
    return String.format(
        "job %-8s %s reads [%s] writes [%s]",
        event.path("eventType").asText(),
        shortName(event.path("job").path("name").asText()),
        inputs,
        outputs);
  }

  /** A job's name on one line: a SQL query's job is named by its text. */
  private static String shortName(String name) {
    String line = name.replaceAll("\\s+", " ");
    return line.length() <= 50 ? line : line.substring(0, 47) + "...";
  }

  /** The datasets by their table names (with the snapshot, for outputs). */
  private static String datasets(JsonNode datasets, boolean withVersion) {
    List<String> names = new ArrayList<>();
    for (JsonNode dataset : datasets) {
      JsonNode symlink = dataset.path("facets").path("symlinks").path("identifiers").path(0);
      String name =
          symlink.isMissingNode() ? dataset.path("name").asText() : symlink.path("name").asText();
      JsonNode version = dataset.path("facets").path("version").path("datasetVersion");
      names.add(withVersion && !version.isMissingNode() ? name + "@" + version.asText() : name);
    }
    return String.join(", ", names);
  }

  private static Record customer(long id, String name, String city) {
    GenericRecord row = GenericRecord.create(CUSTOMERS_SCHEMA);
    row.setField("id", id);
    row.setField("name", name);
    row.setField("city", city);
    return row;
  }

  private static void createOrders(SkadeCatalog catalog) {
    if (!catalog.namespaceExists(ORDERS.namespace())) {
      catalog.createNamespace(ORDERS.namespace(), Map.of("comment", "skade quickstart"));
    }
    if (catalog.tableExists(ORDERS)) {
      return;
    }
    // Two writers append to one table: Iceberg retries a lost compare-and-swap.
    catalog
        .buildTable(ORDERS, ORDERS_SCHEMA)
        .withProperty(TableProperties.COMMIT_NUM_RETRIES, "20")
        .withProperty(TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "5")
        .create();
  }

  private static Void write(Table table, int writer) {
    TableWriter tableWriter =
        new TableWriter(table).describedAs("quickstart-writer-" + writer, List.of());
    GenericRecord template = GenericRecord.create(ORDERS_SCHEMA);
    for (int batch = 0; batch < APPENDS_PER_WRITER; batch++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < ROWS_PER_APPEND; i++) {
        long id = ((long) writer * APPENDS_PER_WRITER + batch) * ROWS_PER_APPEND + i;
        rows.add(
            template.copy(
                Map.of(
                    "order_id", id, "customer", "customer-" + (id % 7), "amount", 10.0 + id % 13)));
      }
      tableWriter.append(rows);
    }
    return null;
  }

  /**
   * Prints each commit as the feed pushes it, until {@code end}; recovers from the log if lagged.
   */
  private static Void printFeed(
      SkadeCatalog catalog, CommitSubscription feed, long cursor, long end, PrintStream out)
      throws InterruptedException {
    while (cursor < end) {
      CommitEvent event;
      try {
        event = feed.poll(Duration.ofSeconds(30));
      } catch (CommitFeedLaggedException e) {
        for (CommitEvent missed : catalog.commitsSince(cursor)) {
          out.println("  (from the log) " + describe(catalog, missed));
          cursor = missed.commitSeq();
        }
        continue;
      }
      if (event == null) {
        throw new IllegalStateException("no commit arrived within 30 s after commit_seq " + cursor);
      }
      if (event.commitSeq() <= cursor) {
        continue; // already seen: subscriptions may deliver a commit at or below their cursor
      }
      long micros = (System.nanoTime() - feed.lastDurableNanos()) / 1_000;
      out.printf("  %s  (durable → received in %d µs)%n", describe(catalog, event), micros);
      cursor = event.commitSeq();
    }
    return null;
  }

  private static String describe(SkadeCatalog catalog, CommitEvent event) {
    return String.format(
        "commit_seq %-3d %-12s %-7s snapshot %s",
        event.commitSeq(),
        catalog.commitTableIdentifier(event.tableKey()),
        event.operation(),
        event.snapshotId().isPresent() ? event.snapshotId().getAsLong() : "-");
  }

  private static long countRows(Table table) throws IOException {
    long rows = 0;
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record ignored : records) {
        rows++;
      }
    }
    return rows;
  }
}
