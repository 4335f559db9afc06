package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeRuntime;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.flink.SkadeJobListenerFactory;
import io.skade.server.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.lineage.LineageGraph;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lineage of Flink SQL jobs in a MiniCluster, with skade's job-status listener registered: a job
 * reading tables a and b and writing c is reported as a run (START, COMPLETE) naming its inputs,
 * and its commit to c names the job and those inputs; expected snapshot ids and commit_seqs come
 * from the catalog.
 */
@Timeout(240)
class SqlLineageTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  @Test
  void aJobReadingAAndBAndWritingCIsReportedWithItsInputs() throws Exception {
    Path events = dir.resolve("lineage.jsonl");
    Map<String, String> catalogProperties =
        Map.of(
            "warehouse",
            dir.resolve("wh").toString(),
            "lineage.sink",
            "openlineage",
            "lineage.openlineage.url",
            "file:" + events);
    TableEnvironment env = lakeWithOpenLineage("file:" + events);
    env.executeSql("CREATE TABLE db.a (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)");
    env.executeSql("CREATE TABLE db.b (id INT, city STRING, PRIMARY KEY (id) NOT ENFORCED)");
    env.executeSql(
        "CREATE TABLE db.c (id INT, name STRING, city STRING," + " PRIMARY KEY (id) NOT ENFORCED)");
    SqlTestBase.run(env, "INSERT INTO db.a VALUES (1, 'ada'), (2, 'bob')");
    SqlTestBase.run(env, "INSERT INTO db.b VALUES (1, 'oslo'), (2, 'rome')");
    TableResult join =
        env.executeSql(
            "INSERT INTO db.c SELECT a.id, a.name, b.city"
                + " FROM db.a AS a JOIN db.b AS b ON a.id = b.id");
    join.await();
    String jobId = join.getJobClient().orElseThrow().getJobID().toHexString();

    Snapshot written;
    long commitSeq;
    List<JsonNode> all;
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire("lake", catalogProperties)) {
      TableIdentifier c = TableIdentifier.of("db", "c");
      written = handle.catalog().loadTable(c).currentSnapshot();
      commitSeq = handle.catalog().commitOf(c, written.snapshotId()).orElseThrow().commitSeq();
      assertThat(
              CatalogLineage.Running.of(handle.catalog())
                  .orElseThrow()
                  .awaitCaughtUp(Duration.ofSeconds(30)))
          .isTrue(); // every commit described
      // The job's end is reported by its JobMaster once the job finished: it may come after
      // await() returned, so the file is read until it holds it.
      all = readUntil(events, jobId, 30_000);
    }
    env.getCatalog("lake").orElseThrow().close();
    List<JsonNode> runs =
        all.stream()
            .filter(
                e ->
                    jobId.equals(
                        e.path("run").path("facets").path("flink_job").path("jobId").asText()))
            .toList();
    assertThat(runs)
        .extracting(e -> e.path("eventType").asText())
        .containsExactly("START", "COMPLETE");
    for (JsonNode run : runs) {
      assertThat(run.path("job").path("name").asText()).startsWith("insert-into_lake.db.c");
      assertThat(symlinkNames(run.path("inputs"))).containsExactlyInAnyOrder("db.a", "db.b");
      assertThat(symlinkNames(run.path("outputs"))).containsExactly("db.c");
    }

    List<JsonNode> commits =
        all.stream()
            .filter(e -> e.path("run").path("facets").has("skade_commit"))
            .filter(e -> symlinkNames(e.path("outputs")).equals(List.of("db.c")))
            .filter(
                e ->
                    !e.path("run")
                        .path("facets")
                        .path("skade_commit")
                        .path("operation")
                        .asText()
                        .equals("CREATE"))
            .toList();
    assertThat(commits).hasSize(1);
    JsonNode commit = commits.get(0);
    // An insert into a keyed table is an upsert: equality deletes and rows in one row delta.
    assertThat(commit.path("run").path("facets").path("skade_commit").path("operation").asText())
        .isEqualTo("OVERWRITE");
    assertThat(commit.path("run").path("facets").path("skade_commit").path("commitSeq").asLong())
        .isEqualTo(commitSeq);
    assertThat(commit.path("job").path("name").asText())
        .startsWith("insert-into_lake.db.c")
        .endsWith("(" + jobId + ")");
    assertThat(symlinkNames(commit.path("inputs"))).containsExactlyInAnyOrder("db.a", "db.b");
    assertThat(
            commit
                .path("outputs")
                .get(0)
                .path("facets")
                .path("version")
                .path("datasetVersion")
                .asText())
        .isEqualTo(Long.toString(written.snapshotId()));
  }

  @Test
  void tablesDeclaredWithTheConnectorAreNamedAsSkadeTables() throws Exception {
    Path events = dir.resolve("lineage.jsonl");
    Map<String, String> catalogProperties =
        Map.of(
            "warehouse",
            dir.resolve("wh").toString(),
            "lineage.sink",
            "openlineage",
            "lineage.openlineage.url",
            "file:" + events);
    Configuration conf = new Configuration();
    // The listener's name before it moved: configurations naming it keep working.
    conf.set(
        DeploymentOptions.JOB_STATUS_CHANGED_LISTENERS,
        List.of("io.skade.table.SkadeJobListenerFactory"));
    TableEnvironment env =
        TableEnvironment.create(
            EnvironmentSettings.newInstance().inBatchMode().withConfiguration(conf).build());
    String with =
        " WITH ('connector' = 'skade', 'warehouse' = '"
            + dir.resolve("wh")
            + "', 'database' = 'db', 'lineage.sink' = 'openlineage', 'lineage.openlineage.url' ="
            + " 'file:"
            + events
            + "')";
    env.executeSql("CREATE TABLE src (id INT, v STRING)" + with);
    env.executeSql("CREATE TABLE dst (id INT, v STRING)" + with);
    // The application holds the catalog open, so its lineage hears of the job's start and end
    // (a table declared with the connector opens it only while a job or planner uses it).
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(catalogProperties)) {
      SqlTestBase.run(env, "INSERT INTO src VALUES (1, 'a')");
      TableResult copy = env.executeSql("INSERT INTO dst SELECT * FROM src");
      copy.await();
      String jobId = copy.getJobClient().orElseThrow().getJobID().toHexString();
      assertThat(
              CatalogLineage.Running.of(handle.catalog())
                  .orElseThrow()
                  .awaitCaughtUp(Duration.ofSeconds(30)))
          .isTrue(); // every commit described
      assertCopyJobRecorded(readUntil(events, jobId, 30_000), jobId);
    }
  }

  /**
   * On a catalog a skade server owns ({@code uri}), the commit lineage runs in the server (here to
   * an OpenLineage file the server writes), and the job listener of the process that submits the
   * job reports its runs there: the server's events name the job's START and COMPLETE, its commit
   * with the job's name and inputs, and each table by one name (the server's warehouse).
   */
  @Test
  void aJobOnAServersCatalogIsReportedToTheLineageTheServerRuns() throws Exception {
    Path events = dir.resolve("server-lineage.jsonl");
    Path serverDir = Files.createDirectories(dir.resolve("server"));
    try (ServerProcess server =
        new ServerProcess(
            serverDir,
            "-P",
            "lineage.sink=openlineage",
            "-P",
            "lineage.openlineage.url=file:" + events)) {
      Configuration conf = new Configuration();
      conf.set(
          DeploymentOptions.JOB_STATUS_CHANGED_LISTENERS,
          List.of(SkadeJobListenerFactory.class.getName()));
      TableEnvironment env =
          TableEnvironment.create(
              EnvironmentSettings.newInstance().inBatchMode().withConfiguration(conf).build());
      env.executeSql(
          "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '"
              + server.uri()
              + "', 'token' = '"
              + ServerProcess.TOKEN
              + "')");
      env.executeSql("CREATE DATABASE lake.db");
      env.executeSql("CREATE TABLE lake.db.src (id INT, v STRING)");
      env.executeSql("CREATE TABLE lake.db.dst (id INT, v STRING)");
      SqlTestBase.run(env, "INSERT INTO lake.db.src VALUES (1, 'a')");
      TableResult copy = env.executeSql("INSERT INTO lake.db.dst SELECT * FROM lake.db.src");
      copy.await();
      String jobId = copy.getJobClient().orElseThrow().getJobID().toHexString();

      assertCopyJobRecorded(readUntil(events, jobId, 60_000), jobId);
    }
  }

  @Test
  void flinksLineageGraphOfASqlJobNamesSkadeTablesInTheirWarehouse() {
    String warehouse = dir.resolve("wh").toString();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    StreamTableEnvironment sql = StreamTableEnvironment.create(env);
    sql.executeSql(
        "CREATE CATALOG lake WITH ('type' = 'skade', 'warehouse' = '" + warehouse + "')");
    sql.executeSql("USE CATALOG lake");
    sql.executeSql("CREATE DATABASE db");
    sql.executeSql("CREATE TABLE db.a (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)");
    sql.executeSql("CREATE TABLE db.c (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)");
    sql.createStatementSet()
        .addInsertSql("INSERT INTO db.c SELECT * FROM db.a")
        .attachAsDataStream();
    LineageGraph graph = env.getStreamGraph(false).getLineageGraph();
    sql.getCatalog("lake").orElseThrow().close();

    // The planner names a table by its Flink identifier and takes the namespace from the
    // connector's own vertex (LineageVertexProvider), else leaves it empty: the warehouse comes
    // from skade's source and sink.
    assertThat(graph.sources())
        .flatExtracting(LineageVertex::datasets)
        .extracting(LineageDataset::namespace, LineageDataset::name)
        .containsExactly(tuple(warehouse, "lake.db.a"));
    assertThat(graph.sinks())
        .flatExtracting(LineageVertex::datasets)
        .extracting(LineageDataset::namespace, LineageDataset::name)
        .containsExactly(tuple(warehouse, "lake.db.c"));
  }

  @Test
  void aFailingJobIsReportedAsFailedWithItsError() throws Exception {
    Path events = dir.resolve("lineage.jsonl");
    TableEnvironment env = lakeWithOpenLineage("file:" + events);
    env.executeSql("CREATE TABLE db.src (id INT)");
    env.executeSql("CREATE TABLE db.dst (id INT)");
    SqlTestBase.run(env, "INSERT INTO db.src VALUES (1)");
    TableResult failing = env.executeSql("INSERT INTO db.dst SELECT id / (id - id) FROM db.src");
    String jobId = failing.getJobClient().orElseThrow().getJobID().toHexString();
    assertThatThrownBy(failing::await).hasRootCauseInstanceOf(ArithmeticException.class);

    List<JsonNode> runs =
        await("the FAIL event of job " + jobId)
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(20))
            .until(
                () ->
                    (Files.exists(events) ? Files.readAllLines(events) : List.<String>of())
                        .stream()
                            .map(SqlLineageTest::json)
                            .filter(
                                e ->
                                    jobId.equals(
                                        e.path("run")
                                            .path("facets")
                                            .path("flink_job")
                                            .path("jobId")
                                            .asText()))
                            .toList(),
                read -> read.stream().anyMatch(e -> e.path("eventType").asText().equals("FAIL")));
    assertThat(runs).extracting(e -> e.path("eventType").asText()).containsExactly("START", "FAIL");
    assertThat(runs.get(1).path("run").path("facets").path("errorMessage").path("message").asText())
        .isNotEmpty();
    assertThat(symlinkNames(runs.get(1).path("inputs"))).containsExactly("db.src");
    env.getCatalog("lake").orElseThrow().close();
  }

  /**
   * Closes what the test left open, before its temporary directory is deleted: a finished job's
   * components release their catalogs shortly after the job ends, and the store (RocksDB) must not
   * close while, or after, the directory is deleted.
   */
  @AfterEach
  void closeSkadeRuntime() {
    SkadeRuntime.reset();
  }

  private static JsonNode json(String line) {
    try {
      return JSON.readTree(line);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void theLineageTableIsReadableWithSqlAndStreamableWithSkadesSource() throws Exception {
    String warehouse = dir.resolve("wh").toString();
    TableEnvironment env = SqlTestBase.batch();
    env.executeSql(
        "CREATE CATALOG lake WITH ('type' = 'skade', 'warehouse' = '"
            + warehouse
            + "', 'lineage.sink' = 'table', 'lineage.actor' = 'etl')");
    env.executeSql("USE CATALOG lake");
    env.executeSql("CREATE DATABASE db");
    env.executeSql("CREATE TABLE db.t (id INT, v STRING)");
    SqlTestBase.run(env, "INSERT INTO db.t VALUES (1, 'a')");
    SqlTestBase.run(env, "INSERT INTO db.t VALUES (2, 'b')");
    Map<String, String> properties =
        Map.of("warehouse", warehouse, "lineage.sink", "table", "lineage.actor", "etl");
    List<Long> snapshots = new ArrayList<>();
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire("lake", properties)) {
      handle
          .catalog()
          .loadTable(TableIdentifier.of("db", "t"))
          .snapshots()
          .forEach(snapshot -> snapshots.add(snapshot.snapshotId()));
      assertThat(
              CatalogLineage.Running.of(handle.catalog())
                  .orElseThrow()
                  .awaitCaughtUp(Duration.ofSeconds(30)))
          .isTrue();
    }
    String query =
        "SELECT operation, output_table, output_snapshot_id, inputs, outputs"
            + " FROM skade_system.lineage_events";
    List<String> expected =
        List.of(
            "+I[CREATE, db.t, null, [], [db.t]]",
            "+I[APPEND, db.t, " + snapshots.get(0) + ", [], [db.t]]",
            "+I[APPEND, db.t, " + snapshots.get(1) + ", [], [db.t]]");
    // The sink flushes a burst in one commit: wait for the rows, not for time.
    List<String> rows =
        await()
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(50))
            .until(
                () ->
                    SqlTestBase.collect(env, query + " ORDER BY commit_seq").stream()
                        .map(Object::toString)
                        .toList(),
                read -> read.size() >= 3);
    assertThat(rows).containsExactlyElementsOf(expected);
    // The catalog's actor names what no writer names (the create); a sink's commits name their
    // job (without skade's job listener, by its id).
    assertThat(
            SqlTestBase.collect(
                    env,
                    "SELECT operation, actor FROM"
                        + " skade_system.lineage_events ORDER BY commit_seq")
                .stream()
                .map(Object::toString))
        .satisfiesExactly(
            row -> assertThat(row).isEqualTo("+I[CREATE, etl]"),
            row -> assertThat(row).matches("\\+I\\[APPEND, flink job [0-9a-f]{32}\\]"),
            row -> assertThat(row).matches("\\+I\\[APPEND, flink job [0-9a-f]{32}\\]"));

    TableEnvironment streaming = SqlTestBase.streaming();
    streaming.executeSql(
        "CREATE CATALOG lake WITH ('type' = 'skade', 'warehouse' = '"
            + warehouse
            + "', 'lineage.sink' = 'table', 'lineage.actor' = 'etl')");
    streaming.executeSql("USE CATALOG lake");
    assertThat(
            SqlTestBase.collect(streaming, query + " /*+ OPTIONS('scan.bounded' = 'true') */")
                .stream()
                .map(Object::toString)
                .sorted())
        .containsExactlyElementsOf(expected.stream().sorted().toList());
    streaming.getCatalog("lake").orElseThrow().close();
    env.getCatalog("lake").orElseThrow().close();
  }

  @Test
  void aHangingCollectorHoldsUpNoJob() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger requests =
        new java.util.concurrent.atomic.AtomicInteger();
    com.sun.net.httpserver.HttpServer collector =
        com.sun.net.httpserver.HttpServer.create(
            new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
    collector.createContext(
        "/api/v1/lineage",
        exchange -> {
          requests.incrementAndGet();
          try {
            release.await(60, java.util.concurrent.TimeUnit.SECONDS); // never answers in time
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          exchange.close();
        });
    collector.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    collector.start();
    try {
      TableEnvironment env =
          lakeWithOpenLineage("http://127.0.0.1:" + collector.getAddress().getPort());
      env.executeSql("CREATE TABLE db.t (id INT, v STRING)");
      for (int i = 0; i < 3; i++) {
        SqlTestBase.run(env, "INSERT INTO db.t VALUES (" + i + ", 'x')");
      }
      // Every job finished and committed while the collector held its first request.
      assertThat(SqlTestBase.collect(env, "SELECT COUNT(*) FROM db.t").get(0).getField(0))
          .isEqualTo(3L);
      assertThat(release.getCount()).isEqualTo(1);
      assertThat(requests.get()).isGreaterThanOrEqualTo(1);
      env.getCatalog("lake").orElseThrow().close(); // bounded: gives up on the collector
    } finally {
      release.countDown();
      collector.stop(0);
    }
  }

  /**
   * A batch environment with skade's job listener, in catalog {@code lake} (warehouse {@code wh} of
   * the test's directory, lineage to OpenLineage at {@code url}) and its database db.
   */
  private TableEnvironment lakeWithOpenLineage(String url) {
    Configuration conf = new Configuration();
    conf.set(
        DeploymentOptions.JOB_STATUS_CHANGED_LISTENERS,
        List.of(SkadeJobListenerFactory.class.getName()));
    TableEnvironment env =
        TableEnvironment.create(
            EnvironmentSettings.newInstance().inBatchMode().withConfiguration(conf).build());
    env.executeSql(
        "CREATE CATALOG lake WITH ('type' = 'skade', 'warehouse' = '"
            + dir.resolve("wh")
            + "', 'lineage.sink' = 'openlineage', 'lineage.openlineage.url' = '"
            + url
            + "')");
    env.executeSql("USE CATALOG lake");
    env.executeSql("CREATE DATABASE db");
    return env;
  }

  /**
   * The OpenLineage events of a job {@code jobId} copying {@code db.src} into {@code db.dst}: its
   * START and COMPLETE naming both, and its commit naming the job and its input, each table by the
   * same name in both.
   */
  private static void assertCopyJobRecorded(List<JsonNode> all, String jobId) {
    List<JsonNode> runs =
        all.stream()
            .filter(
                e ->
                    jobId.equals(
                        e.path("run").path("facets").path("flink_job").path("jobId").asText()))
            .toList();
    assertThat(runs)
        .extracting(e -> e.path("eventType").asText())
        .containsExactly("START", "COMPLETE");
    for (JsonNode run : runs) {
      assertThat(symlinkNames(run.path("inputs"))).containsExactly("db.src");
      assertThat(symlinkNames(run.path("outputs"))).containsExactly("db.dst");
    }
    JsonNode commit =
        all.stream()
            .filter(
                e ->
                    e.path("run")
                            .path("facets")
                            .path("skade_commit")
                            .path("operation")
                            .asText()
                            .equals("APPEND")
                        && symlinkNames(e.path("outputs")).equals(List.of("db.dst")))
            .findFirst()
            .orElseThrow();
    assertThat(symlinkNames(commit.path("inputs"))).containsExactly("db.src");
    assertThat(commit.path("job").path("name").asText()).endsWith("(" + jobId + ")");
    assertThat(runs.get(1).path("outputs").get(0).path("namespace").asText())
        .as("the table's name in the job's run and in its commit")
        .isEqualTo(commit.path("outputs").get(0).path("namespace").asText());
  }

  /** The events in {@code file} once it holds the COMPLETE event of job {@code jobId}. */
  private static List<JsonNode> readUntil(Path file, String jobId, long timeoutMillis) {
    return await("the COMPLETE event of job " + jobId)
        .atMost(Duration.ofMillis(timeoutMillis))
        .pollInterval(Duration.ofMillis(20))
        .until(
            () -> {
              List<JsonNode> all = new ArrayList<>();
              if (Files.exists(file)) {
                for (String line : Files.readAllLines(file)) {
                  all.add(JSON.readTree(line));
                }
              }
              return all;
            },
            all ->
                all.stream()
                    .anyMatch(
                        e ->
                            e.path("eventType").asText().equals("COMPLETE")
                                && jobId.equals(
                                    e.path("run")
                                        .path("facets")
                                        .path("flink_job")
                                        .path("jobId")
                                        .asText())));
  }

  private static List<String> symlinkNames(JsonNode datasets) {
    List<String> names = new ArrayList<>();
    datasets.forEach(
        d ->
            names.add(
                d.path("facets")
                    .path("symlinks")
                    .path("identifiers")
                    .get(0)
                    .path("name")
                    .asText()));
    return names;
  }
}
