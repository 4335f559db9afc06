package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.RemoteConnection;
import io.skade.server.ServerGroupProcess;
import io.skade.server.ServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.apache.curator.test.TestingServer;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * skade on the layout a user runs: a skade server (its shaded jar), a Flink standalone session
 * cluster of a JobManager and two TaskManagers, each its own JVM with skade's {@code
 * skade-sql-connector} jar in its lib/, and jobs submitted by a SQL client's way ({@code
 * execution.target: remote}) from a JVM of their own. Processes are killed with SIGKILL under load.
 * See docs/cluster.md.
 */
@ExtendWith(ClusterLogs.class)
class SkadeOnFlinkClusterTest {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final TableIdentifier COPY = TableIdentifier.of("shop", "orders_copy");
  private static final TableIdentifier LOOKUPS = TableIdentifier.of("shop", "lookups");

  /** Job (a) writes versions 1..ROWS of KEYS keys: version v to key v % KEYS. */
  private static final long ROWS = 6_000;

  private static final long KEYS = 500;
  private static final String ROWS_PER_SECOND = "100";

  /** The staleness a lookup may show outside the server's outage: the feed's delivery. */
  private static final Duration LOOKUP_STALENESS = Duration.ofSeconds(3);

  /**
   * Jobs (a) upsert into {@code orders} from a generator, (b) mirror {@code orders}' changelog into
   * {@code orders_copy}, (c) look generated probes up in {@code orders}.
   */
  static String jobs(String uri) {
    return String.join(
        "\n",
        "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '" + uri + "',",
        "  'token' = '" + ServerProcess.TOKEN + "', 'server.retry-timeout' = '2 min');",
        "CREATE DATABASE lake.shop;",
        "CREATE TABLE lake.shop.orders (order_id BIGINT, version BIGINT, amount BIGINT,",
        "  PRIMARY KEY (order_id) NOT ENFORCED);",
        "CREATE TABLE lake.shop.orders_copy (order_id BIGINT, version BIGINT, amount BIGINT,",
        "  PRIMARY KEY (order_id) NOT ENFORCED);",
        "CREATE TABLE lake.shop.lookups (probe_id BIGINT, order_id BIGINT, version BIGINT,",
        "  amount BIGINT, sent_at TIMESTAMP_LTZ(3), probed_at TIMESTAMP_LTZ(6));",
        "CREATE TEMPORARY TABLE order_feed (seq BIGINT) WITH ('connector' = 'datagen',",
        "  'rows-per-second' = '" + ROWS_PER_SECOND + "', 'fields.seq.kind' = 'sequence',",
        "  'fields.seq.start' = '1', 'fields.seq.end' = '" + ROWS + "');",
        // sent: when the probe was generated, before its lookup began (a random timestamp at
        // most max-past, by default zero, before now); pt is materialized after the lookup.
        "CREATE TEMPORARY TABLE probe_feed (probe_id BIGINT, k BIGINT, sent TIMESTAMP_LTZ(3),",
        "  pt AS PROCTIME())",
        // Random ids: a datagen sequence holds all of its values in memory.
        "  WITH ('connector' = 'datagen', 'rows-per-second' = '50', 'fields.k.min' = '0',",
        "  'fields.k.max' = '" + (KEYS - 1) + "');",
        "SET 'execution.checkpointing.interval' = '1s';",
        "SET 'parallelism.default' = '2';",
        "-- (a) a streaming upsert",
        "INSERT INTO lake.shop.orders SELECT seq % "
            + KEYS
            + ", seq, seq * 7 % 1000"
            + " FROM order_feed;",
        "SET 'parallelism.default' = '1';",
        "-- (b) its exact changelog into a second table, the cursor stored on the server",
        "INSERT INTO lake.shop.orders_copy SELECT * FROM lake.shop.orders"
            + " /*+ OPTIONS('scan.consumer-id' = 'orders-mirror') */;",
        "-- (c) a lookup join against it",
        "INSERT INTO lake.shop.lookups SELECT p.probe_id, o.order_id, o.version, o.amount,",
        "  p.sent, CAST(p.pt AS TIMESTAMP_LTZ(6)) FROM probe_feed AS p",
        "  JOIN lake.shop.orders FOR SYSTEM_TIME AS OF p.pt AS o ON p.k = o.order_id;",
        "");
  }

  @Test
  @Timeout(600)
  void threeJobsStayExactThroughATaskManagerAndTheServerKilled() throws Exception {
    Path root =
        ClusterLogs.of(getClass(), "threeJobsStayExactThroughATaskManagerAndTheServerKilled");
    Files.createDirectories(root.resolve("server"));
    try (ServerProcess server = ServerProcess.fromJar(root.resolve("server"), serverJar());
        FlinkCluster cluster =
            FlinkCluster.start(root.resolve("flink"), libWithConnector(), 2, 4, RESTARTS)) {
      threeJobsStayExact(cluster, server, root);
    }
  }

  /**
   * The same three jobs through a server group of three server JVMs on a real ZooKeeper, given
   * every member's address: a TaskManager is killed, then the group's leader ten times (SIGKILL,
   * each time restarted as a standby once another member leads). The upsert (a sink) stays exactly
   * once, the mirror (a CDC source applying the changelog strictly) equals the table, every commit
   * acknowledged before the kills is in the log, and no job restarts for the failovers.
   */
  @Test
  @Timeout(900)
  void threeJobsStayExactThroughATaskManagerAndTheGroupsLeaderKilledTenTimes() throws Exception {
    Path root =
        ClusterLogs.of(
            getClass(), "threeJobsStayExactThroughATaskManagerAndTheGroupsLeaderKilledTenTimes");
    try (TestingServer zookeeper = new TestingServer(true);
        ServerGroupProcess group =
            new ServerGroupProcess(
                root.resolve("group"),
                "cluster",
                zookeeper.getConnectString(),
                3,
                "--zookeeper-session-timeout",
                "PT3S");
        FlinkCluster cluster =
            FlinkCluster.start(root.resolve("flink"), libWithConnector(), 2, 4, RESTARTS)) {
      threeJobsStayExact(
          cluster,
          group.uri(),
          "the group's leader killed ten times",
          () -> {
            for (int kill = 0; kill < 10; kill++) {
              group.killLeaderAndRestart();
            }
          },
          root);
    }
  }

  /** Fixed-delay restarts, many, and the slots spread over the TaskManagers. */
  static final Map<String, String> RESTARTS =
      Map.of(
          "taskmanager.load-balance.mode",
          "SLOTS",
          "restart-strategy.type",
          "fixed-delay",
          "restart-strategy.fixed-delay.attempts",
          "1000",
          "restart-strategy.fixed-delay.delay",
          "1 s");

  /**
   * The three jobs of {@link #jobs} on {@code cluster} (two TaskManagers of four slots) through
   * {@code server}: a TaskManager is killed, then the server; the upsert stays exactly once, the
   * mirror exact, the lookups found committed rows, and the mirror's cursor holds expiry back.
   */
  static void threeJobsStayExact(FlinkCluster cluster, ServerProcess server, Path root)
      throws Exception {
    threeJobsStayExact(
        cluster, server.uri(), "the server killed", () -> server.killAndRestart(3_000), root);
  }

  /** What makes the catalog's server go away for a while, and brings it back. */
  @FunctionalInterface
  interface Outage {
    void run() throws Exception;
  }

  /**
   * {@link #threeJobsStayExact(FlinkCluster, ServerProcess, Path)} through the server(s) {@code
   * uri} names, whose {@code failure} (one server killed and restarted, or a group's leader killed)
   * the jobs ride through.
   */
  static void threeJobsStayExact(
      FlinkCluster cluster, String uri, String outageName, Outage failure, Path root)
      throws Exception {
    try (RemoteConnection connection =
        RemoteConnection.open(
            uri, Map.of("token", ServerProcess.TOKEN, CatalogConnection.RETRY_TIMEOUT, "2 min"))) {
      Catalog rest = connection.catalog();
      List<String> jobIds = jobIds(submit(cluster, root, jobs(uri), List.of()));
      assertThat(jobIds).hasSize(3);
      String writer = jobIds.get(0);
      String mirror = jobIds.get(1);
      String lookup = jobIds.get(2);
      for (String job : jobIds) {
        await("job " + job + " running")
            .atMost(Duration.ofMinutes(2))
            .pollInterval(Duration.ofMillis(500))
            .until(() -> cluster.allTasksRunning(job));
      }
      await("commits and lookups flowing")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> snapshots(rest, ORDERS) >= 3 && snapshots(rest, LOOKUPS) >= 1);

      // A TaskManager dies: every task it ran restarts on the other one (four slots each).
      int victim = cluster.taskManagersOf(writer).iterator().next();
      cluster.killTaskManager(victim);
      cluster.awaitTaskManagers(1);
      cluster.waitUntil(
          "a job restarted on the other TaskManager",
          Duration.ofMinutes(2),
          () -> total(cluster, jobIds) > 0);
      for (String job : jobIds) {
        cluster.waitUntil(
            "job " + job + " running again",
            Duration.ofMinutes(2),
            () -> cluster.allTasksRunning(job));
      }
      for (String job : jobIds) {
        assertThat(cluster.taskManagersOf(job))
            .as("where job %s runs after the failover", job)
            .doesNotContain(victim);
      }
      long committed = snapshots(rest, ORDERS);
      await("commits after the failover")
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> snapshots(rest, ORDERS) >= committed + 2);

      // The server dies and comes back: the jobs ride through, nothing acknowledged is lost.
      Map<String, Long> restartsBefore = restarts(cluster, jobIds);
      assertThat(cluster.jobState(writer)).as("job (a) at " + outageName).isEqualTo("RUNNING");
      List<CommitEvent> acknowledged = connection.feed().commitsSince(0, 10_000);
      Instant down = Instant.now();
      failure.run();
      Instant up = Instant.now();
      assertThat(connection.feed().commitsSince(0, acknowledged.size()))
          .as("the commits acknowledged before " + outageName)
          .isEqualTo(acknowledged);

      cluster.waitUntil(
          "job (a) finished",
          Duration.ofMinutes(4),
          () -> cluster.jobState(writer).equals("FINISHED"));
      Map<Long, Record> orders =
          MirrorCheck.awaitCaughtUp(rest, ORDERS, COPY, "order_id", Duration.ofMinutes(2));
      Map<String, Long> restartsAfter = restarts(cluster, jobIds);
      for (String job : List.of(mirror, lookup)) {
        cluster.cancel(job);
      }
      assertThat(restartsAfter)
          .as(
              "restarts per job across the server's outage (exceptions: %s)",
              exceptionsOf(cluster, jobIds))
          .isEqualTo(restartsBefore);

      // (a) exactly once: every version written once, and the last per key is the table.
      // When each version was committed: the server's stamp of the commit adding its file.
      Map<Long, Instant> stamps = new HashMap<>();
      for (CommitEvent commit : connection.feed().commitsSince(0, 10_000)) {
        commit
            .snapshotId()
            .ifPresent(
                id -> stamps.put(id, Instant.EPOCH.plus(commit.tsMicros(), ChronoUnit.MICROS)));
      }
      Map<Long, Instant> commitTimes = new HashMap<>();
      List<Long> versions = new ArrayList<>();
      Table table = rest.loadTable(ORDERS);
      for (Snapshot snapshot : table.snapshots()) {
        assertThat(stamps)
            .as("the commit log's entry of each snapshot of orders")
            .containsKey(snapshot.snapshotId());
        for (DataFile file : snapshot.addedDataFiles(table.io())) {
          for (Record row : read(table, file)) {
            long version = (Long) row.getField("version");
            versions.add(version);
            commitTimes.put(version, stamps.get(snapshot.snapshotId()));
          }
        }
      }
      versions.sort(null);
      assertThat(versions)
          .as("the versions in orders' committed data files")
          .isEqualTo(LongStream.rangeClosed(1, ROWS).boxed().toList());
      assertThat(orders).as("orders after job (a)").isEqualTo(expectedOrders(table));
      assertThat(
              SnapshotUtil.isAncestorOf(
                  table, table.currentSnapshot().snapshotId(), lastSnapshotOf(acknowledged, table)))
          .isTrue();

      // (c): each lookup found a committed row, committed before the probe, and not stale.
      List<Record> lookups = rows(rest, LOOKUPS);
      assertThat(lookups).as("lookup results").hasSizeGreaterThan(100);
      List<String> wrong = new ArrayList<>();
      TreeMap<Long, List<Long>> versionsByKey = new TreeMap<>();
      commitTimes
          .keySet()
          .forEach(v -> versionsByKey.computeIfAbsent(v % KEYS, k -> new ArrayList<>()).add(v));
      versionsByKey.values().forEach(list -> list.sort(null));
      // Per lookup that found a superseded row, ms from the newer commit to the probe's start
      // (its generation, an earlier bound); outside the outage and in it.
      List<Long> staleness = new ArrayList<>();
      List<Long> stalenessInOutage = new ArrayList<>();
      long slowestProbeMs = 0; // from a probe's generation to the end of its lookup
      for (Record lookupRow : lookups) {
        long key = (Long) lookupRow.getField("order_id");
        long version = (Long) lookupRow.getField("version");
        Instant sentAt = ((OffsetDateTime) lookupRow.getField("sent_at")).toInstant();
        Instant probedAt = ((OffsetDateTime) lookupRow.getField("probed_at")).toInstant();
        slowestProbeMs = Math.max(slowestProbeMs, Duration.between(sentAt, probedAt).toMillis());
        Instant committedAt = commitTimes.get(version);
        List<Long> later = versionsByKey.get(key).stream().filter(v -> v > version).toList();
        Instant supersededAt =
            later.stream().map(commitTimes::get).min(Instant::compareTo).orElse(Instant.MAX);
        boolean outage =
            sentAt.isAfter(down.minusSeconds(1)) && sentAt.isBefore(up.plusSeconds(10));
        if (supersededAt.isBefore(sentAt)) {
          (outage ? stalenessInOutage : staleness)
              .add(Duration.between(supersededAt, sentAt).toMillis());
        }
        // A probe sees what was committed before it began, and may see what was committed
        // before it ended.
        if (version % KEYS != key
            || !lookupRow.getField("amount").equals(version * 7 % 1000)
            || committedAt == null
            || committedAt.isAfter(probedAt)
            || !outage && supersededAt.isBefore(sentAt.minus(LOOKUP_STALENESS))) {
          wrong.add(lookupRow + " committed " + committedAt + " superseded " + supersededAt);
        }
      }
      System.out.printf(
          "cluster: restarts per job after the TaskManager's death %s; %d lookups, the slowest"
              + " %d ms from its probe's generation; outside the server's outage %d found a row"
              + " a newer commit had superseded before the probe, by at most %d ms; in it %d, by"
              + " at most %d ms%n",
          restartsBefore,
          lookups.size(),
          slowestProbeMs,
          staleness.size(),
          staleness.stream().mapToLong(Long::longValue).max().orElse(0),
          stalenessInOutage.size(),
          stalenessInOutage.stream().mapToLong(Long::longValue).max().orElse(0));
      assertThat(wrong)
          .as(
              "lookups that found no row of the table as of a commit before the"
                  + " probe ended, or one superseded more than %s before it began",
              LOOKUP_STALENESS)
          .isEmpty();

      // Job (b)'s cursor lives on the server: stopped, the job resumes from it, so expiring
      // through the server the snapshots after it is refused.
      assertThat(connection.consumers().consumers(ORDERS))
          .extracting(StoredConsumer::consumerId)
          .contains("orders-mirror");
      rest.loadTable(ORDERS).newAppend().commit(); // a snapshot job (b) has not read
      long now = System.currentTimeMillis() + 1;
      assertThatThrownBy(
              () ->
                  rest.loadTable(ORDERS)
                      .expireSnapshots()
                      .expireOlderThan(now)
                      .retainLast(1)
                      .commit())
          .as("expiring through the server the snapshots job (b) still has to read")
          .isInstanceOf(BadRequestException.class)
          .hasMessageContaining("orders-mirror");
    }
  }

  /**
   * The connector shipped with each job ({@code pipeline.jars}) instead of lib/: two jobs on one
   * TaskManager, each with skade in its own class loader, one writing a table and one mirroring it
   * through the same catalog, both at once.
   */
  @Test
  @Timeout(300)
  void twoJobsShippingTheConnectorJarShareOneTaskManagerAndCatalog() throws Exception {
    Path root =
        ClusterLogs.of(getClass(), "twoJobsShippingTheConnectorJarShareOneTaskManagerAndCatalog");
    Files.createDirectories(root.resolve("server"));
    String jar = ShadedConnectorJarTest.sqlConnectorJar().toUri().toString();
    try (ServerProcess server = ServerProcess.fromJar(root.resolve("server"), serverJar());
        FlinkCluster cluster =
            FlinkCluster.start(
                root.resolve("flink"), ShadedConnectorSqlTest.flinkLib(), 1, 2, Map.of());
        RESTCatalog rest = rest(server)) {
      String script =
          String.join(
              "\n",
              "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '" + server.uri() + "',",
              "  'token' = '" + ServerProcess.TOKEN + "');",
              "CREATE DATABASE lake.shop;",
              "CREATE TABLE lake.shop.events (id BIGINT, name STRING,",
              "  PRIMARY KEY (id) NOT ENFORCED);",
              "CREATE TABLE lake.shop.events_copy (id BIGINT, name STRING,",
              "  PRIMARY KEY (id) NOT ENFORCED);",
              "CREATE TEMPORARY TABLE feed (id BIGINT, name STRING) WITH ('connector' = 'datagen',",
              "  'rows-per-second' = '100', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',",
              "  'fields.id.end' = '400', 'fields.name.length' = '8');",
              "SET 'execution.checkpointing.interval' = '1s';",
              "INSERT INTO lake.shop.events SELECT * FROM feed;",
              "INSERT INTO lake.shop.events_copy SELECT * FROM lake.shop.events;",
              "");
      List<String> jobIds = jobIds(submit(cluster, root, script, List.of("pipeline.jars=" + jar)));
      assertThat(jobIds).hasSize(2);
      await("the writing job finished")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofSeconds(1))
          .until(() -> cluster.jobState(jobIds.get(0)).equals("FINISHED"));
      List<Record> events = rows(rest, TableIdentifier.of("shop", "events"));
      assertThat(events)
          .extracting(row -> (Long) row.getField("id"))
          .containsExactlyInAnyOrderElementsOf(LongStream.rangeClosed(1, 400).boxed().toList());
      await("the mirroring job caught up")
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofSeconds(1))
          .untilAsserted(
              () ->
                  assertThat(rows(rest, TableIdentifier.of("shop", "events_copy")))
                      .containsExactlyInAnyOrderElementsOf(events));
      assertThat(cluster.jobState(jobIds.get(1))).isEqualTo("RUNNING");
      cluster.cancel(jobIds.get(1));
    }
  }

  static Path serverJar() {
    Path jar = Path.of(System.getProperty("skade.serverJar")).toAbsolutePath().normalize();
    assertThat(jar).as("the server's shaded jar; built by server's package phase").isRegularFile();
    return jar;
  }

  /** Flink's lib/ with skade's SQL connector jar dropped into it. */
  static List<String> libWithConnector() throws Exception {
    List<String> lib = new ArrayList<>(ShadedConnectorSqlTest.flinkLib());
    lib.add(ShadedConnectorJarTest.sqlConnectorJar().toString());
    return lib;
  }

  static RESTCatalog rest(ServerProcess server) {
    RESTCatalog rest = new RESTCatalog();
    rest.initialize(
        "check", new HashMap<>(Map.of("uri", server.uri(), "token", ServerProcess.TOKEN)));
    return rest;
  }

  /**
   * Runs {@code script} through {@link SubmitSql} against {@code cluster}, on the client class path
   * of Flink's lib/ and the connector jar (as a SQL client has it), with {@code options}; the lines
   * it printed.
   */
  static List<String> submit(FlinkCluster cluster, Path root, String script, List<String> options)
      throws Exception {
    Path file = Files.writeString(Files.createTempFile(root, "script", ".sql"), script);
    List<String> classpath = new ArrayList<>(cluster.lib());
    String connector = ShadedConnectorJarTest.sqlConnectorJar().toString();
    if (!classpath.contains(connector)) {
      classpath.add(connector);
    }
    classpath.add(
        Path.of(SubmitSql.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString());
    List<String> args =
        new ArrayList<>(
            List.of(
                file.toString(),
                "execution.target=remote",
                "rest.address=" + cluster.restAddress(),
                "rest.port=" + cluster.restPort()));
    args.addAll(options);
    Path log = Files.createTempFile(root, "client", ".log");
    List<String> jvm = new ArrayList<>(cluster.javaOptions());
    jvm.addAll(List.of("-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
    ClusterJvm client =
        ClusterJvm.start("sql-client", classpath, jvm, SubmitSql.class.getName(), args, log);
    int exit = client.waitFor(180);
    String output = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(exit).as("the SQL client's exit; its output:\n%s", output).isZero();
    return output.lines().toList();
  }

  /** The ids of the jobs {@link SubmitSql} printed it submitted, in order. */
  static List<String> jobIds(List<String> output) {
    return output.stream()
        .filter(line -> line.startsWith("JOB "))
        .map(line -> line.substring(4))
        .toList();
  }

  static long snapshots(Catalog rest, TableIdentifier table) {
    Table loaded = rest.loadTable(table);
    long count = 0;
    for (Snapshot ignored : loaded.snapshots()) {
      count++;
    }
    return count;
  }

  private static long total(FlinkCluster cluster, List<String> jobs) throws Exception {
    return restarts(cluster, jobs).values().stream().mapToLong(Long::longValue).sum();
  }

  static Map<String, Long> restarts(FlinkCluster cluster, List<String> jobs) throws Exception {
    Map<String, Long> restarts = new TreeMap<>();
    for (String job : jobs) {
      restarts.put(job, cluster.restarts(job));
    }
    return restarts;
  }

  static String exceptionsOf(FlinkCluster cluster, List<String> jobs) throws Exception {
    StringBuilder text = new StringBuilder();
    for (String job : jobs) {
      text.append(job).append(": ").append(cluster.exceptions(job)).append('\n');
    }
    return text.toString();
  }

  /**
   * The table's rows, as its own columns: Iceberg's generic reader adds the row position ({@code
   * _pos}) to the rows of a data file that position deletes apply to, which would make equal rows
   * of two tables compare unequal.
   */
  static List<Record> rows(Catalog rest, TableIdentifier id) throws Exception {
    Table table = rest.loadTable(id);
    List<Types.NestedField> columns = table.schema().columns();
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> read = IcebergGenerics.read(table).build()) {
      for (Record row : read) {
        Record own = GenericRecord.create(table.schema());
        columns.forEach(column -> own.setField(column.name(), row.getField(column.name())));
        rows.add(own);
      }
    }
    return rows;
  }

  private static Map<Long, Record> expectedOrders(Table table) {
    Map<Long, Record> expected = new HashMap<>();
    for (long version = ROWS - KEYS + 1; version <= ROWS; version++) {
      Record row = GenericRecord.create(table.schema());
      row.setField("order_id", version % KEYS);
      row.setField("version", version);
      row.setField("amount", version * 7 % 1000);
      expected.put(version % KEYS, row);
    }
    return expected;
  }

  /** The newest snapshot of {@code table} among {@code commits}. */
  private static long lastSnapshotOf(List<CommitEvent> commits, Table table) {
    long last = -1;
    for (CommitEvent commit : commits) {
      if (commit.metadataLocation().startsWith(table.location() + "/")
          && commit.snapshotId().isPresent()) {
        last = commit.snapshotId().getAsLong();
      }
    }
    assertThat(last)
        .as("a commit of orders acknowledged before the server was killed")
        .isNotEqualTo(-1);
    return last;
  }

  static List<Record> read(Table table, DataFile file) throws Exception {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> read =
        Parquet.read(table.io().newInputFile(file.location()))
            .project(table.schema())
            .createReaderFunc(schema -> GenericParquetReaders.buildReader(table.schema(), schema))
            .build()) {
      read.forEach(row -> rows.add(row.copy()));
    }
    return rows;
  }
}
