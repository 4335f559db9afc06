package io.skade.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.server.ServerProcess;
import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import io.skade.write.TableWriter;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark as a second engine on a skade server: one server child JVM, one Spark SQL session in
 * another (local mode, Iceberg's {@code SparkCatalog} of type {@code rest} on the server's {@code
 * uri} and bearer token), and this JVM as skade (Iceberg's REST client, skade's writer, a Flink
 * MiniCluster job).
 */
class SparkThroughServerTest {
  private static final String TOKEN = ServerProcess.TOKEN;
  private static final TableIdentifier WRITTEN_BY_SPARK =
      TableIdentifier.of("db", "written_by_spark");
  private static final TableIdentifier WRITTEN_BY_SKADE =
      TableIdentifier.of("db", "written_by_skade");

  @TempDir static Path root;
  private static ServerProcess server;
  private static RESTCatalog rest;
  private static SparkSqlProcess spark;

  @BeforeAll
  static void startServerAndSpark() throws Exception {
    server = new ServerProcess(root);
    rest = new RESTCatalog();
    rest.initialize("rest", new HashMap<>(Map.of("uri", server.uri(), "token", TOKEN)));
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.master", "local[2]");
    conf.put("spark.app.name", "skade-spark-tests");
    conf.put("spark.ui.enabled", "false");
    conf.put("spark.driver.host", "127.0.0.1");
    conf.put("spark.driver.bindAddress", "127.0.0.1");
    conf.put("spark.sql.shuffle.partitions", "2");
    conf.put("spark.sql.session.timeZone", "UTC");
    conf.put("spark.sql.datetime.java8API.enabled", "true"); // LocalDate, Instant
    // MERGE INTO and ALTER TABLE ... SET IDENTIFIER FIELDS.
    conf.put(
        "spark.sql.extensions",
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions");
    conf.put("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog");
    conf.put("spark.sql.catalog.lake.type", "rest");
    conf.put("spark.sql.catalog.lake.uri", server.uri());
    conf.put("spark.sql.catalog.lake.token", TOKEN);
    // Every statement loads the table afresh, so Spark sees what skade committed meanwhile.
    conf.put("spark.sql.catalog.lake.cache-enabled", "false");
    spark = new SparkSqlProcess(conf);
    spark.sql("CREATE NAMESPACE lake.db");
  }

  @AfterAll
  static void stopSparkAndServer() throws Exception {
    try (ServerProcess stopping = server;
        RESTCatalog closing = rest) {
      if (spark != null) {
        spark.close();
      }
    }
  }

  /**
   * Spark creates a format-v2 table with merge-on-read deletes, updates and merges, makes {@code
   * id} its identifier field, and then inserts, merges, updates and deletes (the last three write
   * position deletes). A {@link SkadeSource} in remote mode (parallelism 2), started before Spark's
   * first write, emits exactly the changes Spark's own reads of the table before and after each
   * statement show: {@code +I} for a new id, {@code -D} for a gone one, the pair {@code -U}/{@code
   * +U} for a changed one. Applied strictly (an insert meets no row, a retraction exactly the row
   * it retracts), they give Spark's final {@code SELECT}.
   */
  @Test
  @Timeout(300)
  void aRemoteSkadeSourceSeesSparksInsertMergeUpdateAndDeleteAsAnExactChangelog() throws Exception {
    spark.sql(
        "CREATE TABLE lake.db.written_by_spark (id BIGINT NOT NULL, name STRING)"
            + " USING iceberg TBLPROPERTIES ('format-version' = '2',"
            + " 'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read',"
            + " 'write.merge.mode' = 'merge-on-read')");
    spark.sql("ALTER TABLE lake.db.written_by_spark SET IDENTIFIER FIELDS id");

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    SkadeSource<RowData> source =
        SkadeSource.builder()
            .catalogProperties(Map.of("uri", server.uri(), "token", TOKEN))
            .table(WRITTEN_BY_SPARK)
            // Every change since the first snapshot, however soon the job is up.
            .startupMode(StartupMode.EARLIEST)
            // Longer than the test: only the server's commit feed wakes the enumerator.
            .pollInterval(Duration.ofMinutes(30))
            .build();
    List<String> seen = new ArrayList<>();
    try (CloseableIterator<RowData> job =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "spark's table")
            .executeAndCollect()) {
      CompletableFuture<Void> reading =
          CompletableFuture.runAsync(
              () ->
                  job.forEachRemaining(
                      row -> {
                        synchronized (seen) {
                          seen.add(change(row));
                        }
                      }));

      List<String> expected = new ArrayList<>();
      sparkWrites(
          "INSERT INTO lake.db.written_by_spark" + " SELECT id, concat('a', id) FROM range(0, 40)",
          expected);
      Snapshot merge =
          sparkWrites(
              "MERGE INTO lake.db.written_by_spark t"
                  + " USING (SELECT id, concat('b', id) AS name FROM range(30, 50)) s ON t.id = s.id"
                  + " WHEN MATCHED AND t.id % 3 = 0 THEN DELETE"
                  + " WHEN MATCHED THEN UPDATE SET t.name = s.name"
                  + " WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
              expected);
      Snapshot update =
          sparkWrites(
              "UPDATE lake.db.written_by_spark" + " SET name = concat(name, '-c') WHERE id % 5 = 1",
              expected);
      Snapshot delete =
          sparkWrites("DELETE FROM lake.db.written_by_spark WHERE id % 4 = 0", expected);
      for (Snapshot rowLevel : List.of(merge, update, delete)) {
        assertThat(rowLevel.summary())
            .as("merge-on-read: position deletes, no data file rewritten (%s)", rowLevel.summary())
            .containsKey("added-position-delete-files")
            .doesNotContainKey("deleted-data-files");
      }
      assertThat(expected)
          .as("the changes of Spark's statements")
          .contains(
              "-U 31 a31",
              "+U 31 b31",
              "-D 33 a33",
              "+I 45 b45",
              "-U 1 a1",
              "+U 1 a1-c",
              "-D 4 a4");

      await()
          .atMost(Duration.ofSeconds(120))
          .pollInterval(Duration.ofMillis(200))
          .until(
              () -> {
                synchronized (seen) {
                  return seen.size() >= expected.size();
                }
              });
      Map<Long, String> sparkRows = sparkRowsOf("lake.db.written_by_spark");
      synchronized (seen) {
        assertThat(seen).as("the changelog").containsExactlyInAnyOrderElementsOf(expected);
        Map<Long, String> applied = new HashMap<>();
        List<String> failures = new ArrayList<>();
        seen.forEach(change -> applyStrictly(change, applied, failures));
        assertThat(failures).as("changes that did not apply strictly").isEmpty();
        assertThat(applied).as("the changelog applied to an empty table").isEqualTo(sparkRows);
      }
      reading.cancel(true);
    }
  }

  /**
   * skade writes a table through the server (bucketed by its key): appends, an upsert (equality
   * deletes), key deletes (equality deletes) and an overwrite by filter (position deletes). Spark
   * reads every column of every row skade wrote, after the upsert and after the deletes.
   */
  @Test
  @Timeout(300)
  void sparkReadsWhatSkadeWroteThroughTheServerEqualityAndPositionDeletesApplied()
      throws Exception {
    Schema schema =
        new Schema(
            List.of(
                Types.NestedField.required(1, "id", Types.LongType.get()),
                Types.NestedField.optional(2, "name", Types.StringType.get()),
                Types.NestedField.optional(3, "qty", Types.IntegerType.get()),
                Types.NestedField.optional(4, "price", Types.DecimalType.of(10, 2)),
                Types.NestedField.optional(5, "day", Types.DateType.get()),
                Types.NestedField.optional(6, "at", Types.TimestampType.withZone())),
            Set.of(1));
    Table table =
        rest.createTable(
            WRITTEN_BY_SKADE,
            schema,
            PartitionSpec.builderFor(schema).bucket("id", 4).build(),
            Map.of("format-version", "2"));
    TableWriter writer = new TableWriter(table);
    Map<Long, List<String>> wrote = new TreeMap<>();

    List<Record> first = new ArrayList<>();
    for (long id = 0; id < 30; id++) {
      first.add(skadeRow(schema, id, 0));
    }
    writer.append(first);
    first.forEach(row -> wrote.put((Long) row.getField("id"), rendered(row)));
    List<Record> upserted = new ArrayList<>();
    for (long id = 5; id < 35; id += 2) {
      upserted.add(skadeRow(schema, id, 1));
    }
    writer.upsert(upserted);
    upserted.forEach(row -> wrote.put((Long) row.getField("id"), rendered(row)));
    assertThat(sparkRead()).as("Spark's read after the append and the upsert").isEqualTo(wrote);

    Snapshot keyDeletes =
        writer.deleteKeys(
            List.of(skadeRow(schema, 0, 0), skadeRow(schema, 7, 0), skadeRow(schema, 12, 0)));
    List.of(0L, 7L, 12L).forEach(wrote::remove);
    Snapshot overwrite = writer.overwrite(Expressions.greaterThanOrEqual("qty", 20), List.of());
    wrote.values().removeIf(row -> row.get(2) != null && Integer.parseInt(row.get(2)) >= 20);
    assertThat(keyDeletes.summary()).containsKey("added-equality-delete-files");
    assertThat(overwrite.summary()).containsKey("added-position-delete-files");
    assertThat(wrote).as("rows left").hasSizeBetween(10, 25);
    assertThat(sparkRead())
        .as("Spark's read after the key deletes and the overwrite")
        .isEqualTo(wrote);
  }

  /**
   * Runs one write in Spark and adds to {@code changes} what Spark reads as its difference (rows by
   * id before and after); returns the snapshot it committed.
   */
  private static Snapshot sparkWrites(String statement, List<String> changes) throws Exception {
    Map<Long, String> before = sparkRowsOf("lake.db.written_by_spark");
    long snapshotsBefore = snapshotCount(rest.loadTable(WRITTEN_BY_SPARK));
    spark.sql(statement);
    Map<Long, String> after = sparkRowsOf("lake.db.written_by_spark");
    before.forEach(
        (id, name) -> {
          String now = after.get(id);
          if (now == null) {
            changes.add("-D " + id + " " + name);
          } else if (!now.equals(name)) {
            changes.add("-U " + id + " " + name);
            changes.add("+U " + id + " " + now);
          }
        });
    after.forEach(
        (id, name) -> {
          if (!before.containsKey(id)) {
            changes.add("+I " + id + " " + name);
          }
        });
    Table table = rest.loadTable(WRITTEN_BY_SPARK);
    assertThat(snapshotCount(table))
        .as("snapshots after %s", statement)
        .isEqualTo(snapshotsBefore + 1);
    return table.currentSnapshot();
  }

  private static long snapshotCount(Table table) {
    long count = 0;
    for (Snapshot ignored : table.snapshots()) {
      count++;
    }
    return count;
  }

  /** Spark's rows of an {@code (id, name)} table, by id. */
  private static Map<Long, String> sparkRowsOf(String table) throws Exception {
    Map<Long, String> rows = new HashMap<>();
    for (List<String> row : spark.sql("SELECT id, name FROM " + table)) {
      assertThat(rows.put(Long.parseLong(row.get(0)), row.get(1)))
          .as("rows with id %s", row)
          .isNull();
    }
    return rows;
  }

  /** Spark's rows of skade's table, by id. */
  private static Map<Long, List<String>> sparkRead() throws Exception {
    Map<Long, List<String>> rows = new TreeMap<>();
    for (List<String> row :
        spark.sql("SELECT id, name, qty, price, day, at FROM lake.db.written_by_skade")) {
      assertThat(rows.put(Long.parseLong(row.get(0)), row)).as("rows with id %s", row).isNull();
    }
    return rows;
  }

  /** Version {@code version} of row {@code id}; some values are null, some names not ASCII. */
  private static Record skadeRow(Schema schema, long id, int version) {
    GenericRecord row = GenericRecord.create(schema);
    row.setField("id", id);
    row.setField("name", id % 6 == 0 ? null : "nø" + id + "v" + version);
    row.setField("qty", id % 9 == 4 ? null : (int) ((id * 7 + version * 11) % 31));
    row.setField("price", BigDecimal.valueOf(id * 125 + version, 2));
    row.setField("day", LocalDate.of(2024, 2, 27).plusDays(id + version));
    row.setField(
        "at",
        OffsetDateTime.of(2024, 3, 1, 12, 0, 0, 0, ZoneOffset.UTC)
            .plusSeconds(id * 3601 + version)
            .plusNanos(id * 1_000L));
    return row;
  }

  /** A row as Spark's Java values render: Long, String, Integer, BigDecimal, LocalDate, Instant. */
  private static List<String> rendered(Record row) {
    OffsetDateTime at = (OffsetDateTime) row.getField("at");
    return Arrays.asList(
        String.valueOf(row.getField("id")),
        (String) row.getField("name"),
        row.getField("qty") == null ? null : String.valueOf(row.getField("qty")),
        String.valueOf(row.getField("price")),
        String.valueOf(row.getField("day")),
        at.toInstant().toString());
  }

  /** A change of an {@code (id, name)} row, e.g. {@code "+U 2 b2"}. */
  private static String change(RowData row) {
    return row.getRowKind().shortString()
        + " "
        + row.getLong(0)
        + " "
        + (row.isNullAt(1) ? "null" : row.getString(1).toString());
  }

  private static void applyStrictly(String change, Map<Long, String> rows, List<String> failures) {
    String[] parts = change.split(" ", 3);
    long id = Long.parseLong(parts[1]);
    boolean inserts = parts[0].equals("+I") || parts[0].equals("+U");
    String there = rows.get(id);
    if (inserts ? there != null : !parts[2].equals(there)) {
      failures.add(change + " (the row there: " + there + ")");
    }
    if (inserts) {
      rows.put(id, parts[2]);
    } else {
      rows.remove(id);
    }
  }
}
