package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.testing.LocalCluster;
import io.skade.testing.ThreadStacks;
import io.skade.write.TableWriter;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.ErrorInfo;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.functions.ScalarFunction;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Flink's delta join of two skade tables while both receive appends: each arriving row probes the
 * other table, so a row must be visible to lookups of its table once its source emitted it (in the
 * JVM that owns the catalog, the next probe after a commit sees it). Its output, through an upsert
 * sink, is compared with Flink's regular join of the final tables, through a task failure (restored
 * from a checkpoint) and a stop with a savepoint resumed at another parallelism; and its
 * checkpointed state with the regular join's.
 */
class SqlDeltaJoinTest extends SqlTestBase {
  private static final String HINT =
      "/*+ OPTIONS(" + SqlDeltaJoinPlanTest.DELTA_JOIN_OPTIONS + ") */";
  private static final String[] CARRIERS = {"post", "bring", "dhl", "ups"};

  /** A session cluster, so the test can read each job's checkpoint statistics. */
  @RegisterExtension static final LocalCluster cluster = new LocalCluster(4);

  /** A streaming environment submitting to the cluster, checkpointing every 300 ms. */
  private static TableEnvironment environment(int parallelism, Map<String, String> options)
      throws Exception {
    URI rest = cluster.restAddress();
    Configuration conf = new Configuration();
    conf.set(DeploymentOptions.TARGET, "remote");
    conf.set(RestOptions.ADDRESS, rest.getHost());
    conf.set(RestOptions.PORT, rest.getPort());
    conf.set(CoreOptions.DEFAULT_PARALLELISM, parallelism);
    conf.setString("execution.checkpointing.interval", "300 ms");
    conf.setString("restart-strategy.type", "fixed-delay");
    conf.setString("restart-strategy.fixed-delay.attempts", "3");
    conf.setString("restart-strategy.fixed-delay.delay", "200 ms");
    options.forEach(conf::setString);
    return TableEnvironment.create(
        EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
  }

  @ParameterizedTest(name = "parallelism {0}")
  @ValueSource(ints = {1, 2})
  @Timeout(300)
  void theDeltaJoinsOutputIsTheJoinOfTheFinalTablesThroughAFailureAndARescale(int parallelism)
      throws Exception {
    TableEnvironment env = environment(parallelism, Map.of());
    createLake(env);
    SqlDeltaJoinPlanTest.createTables(env, "lake.shop");
    Histories histories = new Histories(new Random(20261202L + parallelism), 600);
    histories.seed(); // rows before the job starts: read as its first inserts

    FailOnce.arm(Long.MAX_VALUE); // armed once the job resumed
    String statement =
        SqlDeltaJoinPlanTest.join("lake.shop", HINT).replace("s.carrier", "fail_once(s.carrier)");
    JobID first = submit(env, statement);
    JobID job = first;
    try {
      CompletableFuture<Void> writers = histories.writeConcurrently();
      // Halfway, the job stops with a savepoint and resumes from it at the other parallelism;
      // the writers go on meanwhile.
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> histories.commits() >= 8 && cluster.allTasksRunning(first));
      String savepoint = cluster.stopWithSavepoint(job, dir.resolve("savepoints"));
      TableEnvironment resumed =
          environment(3 - parallelism, Map.of("execution.state-recovery.path", savepoint));
      openLake(resumed);
      job = submit(resumed, statement);
      FailOnce.arm(50); // a task of the resumed job fails at its 50th joined row
      writers.join();

      List<String> expected = regularJoinOfTheFinalTables();
      assertThat(expected).hasSize(histories.joinedRows());
      try {
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> enriched("enriched").equals(expected));
      } catch (ConditionTimeoutException e) {
        List<String> actual = enriched("enriched");
        assertThat(actual).as(diagnosis(expected, actual, job)).isEqualTo(expected);
      }
      assertThat(FailOnce.failed).as("the injected failure happened").isTrue();
      assertThat(cluster.status(job)).isEqualTo(JobStatus.RUNNING);
    } finally {
      cluster.cancel(job);
    }
  }

  /** Submits the delta join {@code statement} from {@code env}, checking that it is one. */
  private static JobID submit(TableEnvironment env, String statement) {
    env.createTemporarySystemFunction("fail_once", FailOnce.class);
    assertThat(env.explainSql(statement)).contains("DeltaJoin(");
    return env.executeSql(statement).getJobClient().orElseThrow().getJobID();
  }

  @Test
  @Timeout(300)
  void theDeltaJoinCheckpointsNoRowsWhileTheRegularJoinCheckpointsEveryOne() throws Exception {
    TableEnvironment setup = environment(1, Map.of());
    createLake(setup);
    SqlDeltaJoinPlanTest.createTables(setup, "lake.shop");
    setup.executeSql("CREATE TABLE lake.shop.enriched_regular LIKE lake.shop.enriched");
    Histories histories = new Histories(new Random(7), 0);
    Map<String, String> unchained = Map.of("pipeline.operator-chaining.enabled", "false");
    TableEnvironment deltaEnv = environment(1, unchained);
    openLake(deltaEnv);
    TableEnvironment regularEnv =
        environment(
            1,
            Map.of(
                "pipeline.operator-chaining.enabled", "false",
                "table.optimizer.delta-join.strategy", "NONE"));
    openLake(regularEnv);
    String statement = SqlDeltaJoinPlanTest.join("lake.shop", HINT);
    JobID delta = deltaEnv.executeSql(statement).getJobClient().orElseThrow().getJobID();
    JobID regular =
        regularEnv
            .executeSql(statement.replace("shop.enriched ", "shop.enriched_regular "))
            .getJobClient()
            .orElseThrow()
            .getJobID();
    try {
      List<long[]> sizes = new ArrayList<>(); // per phase: delta join's, regular join's
      for (int phase = 0; phase < 2; phase++) {
        histories.appendOrders(phase * 2_000, 2_000);
        histories.appendShipments(phase * 2_000, 2_000);
        List<String> expected = regularJoinOfTheFinalTables();
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInterval(Duration.ofMillis(200))
            .until(
                () ->
                    enriched("enriched").equals(expected)
                        && enriched("enriched_regular").equals(expected));
        // A checkpoint taken once both joins have every row.
        long[] after = {checkpointCount(delta), checkpointCount(regular)};
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    checkpointCount(delta) > after[0] + 1
                        && checkpointCount(regular) > after[1] + 1);
        sizes.add(new long[] {joinStateBytes(delta, "DeltaJoin"), joinStateBytes(regular, "Join")});
      }

      System.out.printf(
          "join state after 2,000 and 4,000 rows a side: delta join %,d and %,d"
              + " bytes, regular join %,d and %,d bytes%n",
          sizes.get(0)[0], sizes.get(1)[0], sizes.get(0)[1], sizes.get(1)[1]);
      // The delta join holds no rows: what it checkpoints is its empty keyed state backend's
      // frame (key-group offsets, serializers), the same whatever went through.
      assertThat(sizes.get(1)[0])
          .as("the delta join's state, 8,000 rows in")
          .isEqualTo(sizes.get(0)[0])
          .isLessThan(16 * 1024);
      // Both sides' rows, at least the 8 bytes of each id: the regular join keeps every row.
      assertThat(sizes.get(0)[1]).isGreaterThan(4_000L * 8);
      assertThat(sizes.get(1)[1]).isGreaterThan(sizes.get(0)[1] * 3 / 2);
    } finally {
      cluster.cancel(delta);
      cluster.cancel(regular);
    }
  }

  @Test
  @Timeout(120)
  void anAppendOnlyReadFailsAtAnUpdateNamingItsCommit() throws Exception {
    TableEnvironment env = environment(1, Map.of("restart-strategy.type", "none"));
    createLake(env);
    SqlDeltaJoinPlanTest.createTables(env, "lake.shop");
    Table orders = catalog.catalog().loadTable(TableIdentifier.of("shop", "orders"));
    new TableWriter(orders).append(List.of(record(orders, 1L, "ada", 10)));
    JobID job =
        env.executeSql(
                "INSERT INTO lake.shop.enriched SELECT order_id, 0, customer,"
                    + " amount, 'none' FROM lake.shop.orders /*+ OPTIONS('scan.append-only' = 'true') */")
            .getJobClient()
            .orElseThrow()
            .getJobID();
    try {
      new TableWriter(orders).append(List.of(record(orders, 2L, "bo", 20))); // an insert: read
      orders.refresh();
      new TableWriter(orders).upsert(List.of(record(orders, 1L, "ada", 11)));
      long updateSeq = catalog.catalog().commitSeq();

      await().atMost(Duration.ofSeconds(60)).until(() -> cluster.status(job) == JobStatus.FAILED);
      Throwable failure = cluster.failure(job);
      assertThat(failure)
          .rootCause()
          .hasMessageContaining(
              "skade table shop.orders is read"
                  + " append-only ('scan.append-only' = 'true'), but commit_seq "
                  + updateSeq)
          .hasMessageContaining("updates a row");
    } finally {
      cluster.cancel(job);
    }
  }

  private static long checkpointCount(JobID job) throws Exception {
    return cluster
        .executionGraph(job)
        .getCheckpointStatsSnapshot()
        .getCounts()
        .getNumberOfCompletedCheckpoints();
  }

  /** The state of the job's vertex {@code operator} ({@code Join[12]}) in its last checkpoint. */
  private static long joinStateBytes(JobID job, String operator) throws Exception {
    AccessExecutionGraph graph = cluster.executionGraph(job);
    CompletedCheckpointStats latest =
        graph.getCheckpointStatsSnapshot().getHistory().getLatestCompletedCheckpoint();
    for (AccessExecutionJobVertex vertex : graph.getAllVertices().values()) {
      if (vertex.getName().startsWith(operator + "[")) {
        return latest.getTaskStateStats(vertex.getJobVertexId()).getStateSize();
      }
    }
    throw new AssertionError(
        "job "
            + job
            + " has no vertex "
            + operator
            + ": "
            + graph.getAllVertices().values().stream()
                .map(AccessExecutionJobVertex::getName)
                .toList());
  }

  /** Flink's regular join of the tables as they stand, in batch mode: what the delta join owes. */
  private List<String> regularJoinOfTheFinalTables() throws Exception {
    TableEnvironment batch = batch();
    openLake(batch);
    List<String> rows = new ArrayList<>();
    for (Row row :
        collect(
            batch,
            "SELECT o.order_id, s.shipment_id, o.customer, o.amount,"
                + " s.carrier FROM lake.shop.orders AS o JOIN lake.shop.shipments AS s"
                + " ON o.order_id = s.order_id")) {
      rows.add(
          row.getField(0)
              + ","
              + row.getField(1)
              + ","
              + row.getField(2)
              + ","
              + row.getField(3)
              + ","
              + row.getField(4));
    }
    Collections.sort(rows);
    return rows;
  }

  /**
   * Why the sink's rows {@code actual} differ from {@code expected}, most telling first: the rows
   * missing and extra, the job's failures, where this JVM's source, lookup and metadata threads
   * stand (a hang shows), and the sink's history.
   */
  private String diagnosis(List<String> expected, List<String> actual, JobID job) {
    StringBuilder why = new StringBuilder();
    try {
      List<String> missing = new ArrayList<>(expected);
      missing.removeAll(actual);
      List<String> extra = new ArrayList<>(actual);
      extra.removeAll(expected);
      why.append(
          String.format(
              "%d of %d rows missing (first %s), %d extra (first %s)%n",
              missing.size(),
              expected.size(),
              missing.subList(0, Math.min(5, missing.size())),
              extra.size(),
              extra.subList(0, Math.min(5, extra.size()))));
      List<String> twice = new ArrayList<>(new java.util.LinkedHashSet<>(actual));
      twice.removeIf(row -> Collections.frequency(actual, row) < 2);
      if (!twice.isEmpty()) {
        why.append(twice.size())
            .append(" rows more than once, where each copy lives: ")
            .append(copies("enriched", twice.subList(0, Math.min(5, twice.size()))))
            .append('\n');
      }
      why.append("job ")
          .append(job)
          .append(' ')
          .append(cluster.status(job))
          .append(", FailOnce failed: ")
          .append(FailOnce.failed)
          .append(", last failure: ")
          .append(lastFailure(job))
          .append('\n');
    } catch (Exception e) {
      why.append("(diagnosis failed: ").append(e).append(")\n");
    }
    why.append(ThreadStacks.of(SqlDeltaJoinTest::isTelling)).append('\n');
    return why.append("the sink table's history:\n").append(history("enriched")).toString();
  }

  /** The first line of the job's latest failure, if it had one: what it restarted from. */
  private static String lastFailure(JobID job) throws Exception {
    ErrorInfo failure = cluster.executionGraph(job).getFailureInfo();
    return failure == null ? "none" : failure.getExceptionAsString().lines().findFirst().orElse("");
  }

  private static boolean isTelling(String thread) {
    return thread.startsWith("skade-")
        || thread.startsWith("iceberg-worker")
        || thread.startsWith("SourceCoordinator")
        || thread.contains("DeltaJoin")
        || thread.startsWith("Source Data Fetcher");
  }

  /** The sink table's snapshots, one a line: what a failed comparison needs to be explained. */
  private String history(String name) {
    Table table = catalog.catalog().loadTable(TableIdentifier.of("shop", name));
    StringBuilder history = new StringBuilder();
    for (org.apache.iceberg.Snapshot snapshot : table.snapshots()) {
      history
          .append(snapshot.sequenceNumber())
          .append(' ')
          .append(snapshot.snapshotId())
          .append(' ')
          .append(snapshot.operation())
          .append(' ')
          .append(snapshot.summary())
          .append('\n');
    }
    return history.toString();
  }

  /** Each live copy of {@code rows} in the sink table: its data file and position. */
  private List<String> copies(String name, List<String> rows) throws Exception {
    Table table = catalog.catalog().loadTable(TableIdentifier.of("shop", name));
    org.apache.iceberg.Schema located =
        org.apache.iceberg.types.TypeUtil.join(
            table.schema(),
            new org.apache.iceberg.Schema(
                org.apache.iceberg.MetadataColumns.FILE_PATH,
                org.apache.iceberg.MetadataColumns.ROW_POSITION));
    Map<String, String> files = new java.util.HashMap<>(); // data file: its seq, its deletes
    try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = table.newScan().planFiles()) {
      for (org.apache.iceberg.FileScanTask task : tasks) {
        files.put(
            task.file().location(),
            "seq "
                + task.file().dataSequenceNumber()
                + ", deletes "
                + task.deletes().stream()
                    .map(d -> d.content() + " seq " + d.dataSequenceNumber() + " " + d.location())
                    .toList());
      }
    }
    List<String> found = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).project(located).build()) {
      for (Record r : records) {
        if (rows.contains(line(r))) {
          Object file = r.getField("_file");
          found.add(
              line(r) + " in " + file + " at " + r.getField("_pos") + " (" + files.get(file) + ")");
        }
      }
    }
    return found;
  }

  private static String line(Record r) {
    return r.getField("order_id")
        + ","
        + r.getField("shipment_id")
        + ","
        + r.getField("customer")
        + ","
        + r.getField("amount")
        + ","
        + r.getField("carrier");
  }

  /** The sink table's rows, as Iceberg's own reader gives them, in order. */
  private List<String> enriched(String name) throws Exception {
    Table table = catalog.catalog().loadTable(TableIdentifier.of("shop", name));
    List<String> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record r : records) {
        rows.add(line(r));
      }
    }
    Collections.sort(rows);
    return rows;
  }

  /**
   * Orders (ids 0 to {@code orders - 1}) and their shipments (none to two each, a few of orders
   * that never come), appended by two writers at once, each in its own random order of commits: a
   * shipment often commits before its order, often after.
   */
  private final class Histories {
    private final Random random;
    private final int orders;
    private final List<Record> orderRows = new ArrayList<>();
    private final List<Record> shipmentRows = new ArrayList<>();
    private final AtomicInteger commits = new AtomicInteger();
    private int joined;

    Histories(Random random, int orders) {
      this.random = random;
      this.orders = orders;
      Table orderTable = table("orders");
      Table shipmentTable = table("shipments");
      long shipmentId = 0;
      for (long order = 0; order < orders * 11L / 10; order++) {
        if (order < orders) {
          orderRows.add(record(orderTable, order, "c" + random.nextInt(50), random.nextInt(1_000)));
        }
        int shipments = random.nextInt(3);
        for (int i = 0; i < shipments; i++) {
          shipmentRows.add(
              record(
                  shipmentTable, shipmentId++, order, CARRIERS[random.nextInt(CARRIERS.length)]));
          joined += order < orders ? 1 : 0;
        }
      }
      Collections.shuffle(shipmentRows, random);
    }

    private Table table(String name) {
      return catalog.catalog().loadTable(TableIdentifier.of("shop", name));
    }

    int joinedRows() {
      return joined;
    }

    /** The first tenth of each side, committed at once. */
    void seed() {
      new TableWriter(table("orders")).append(orderRows.subList(0, orders / 10));
      new TableWriter(table("shipments")).append(shipmentRows.subList(0, shipmentRows.size() / 10));
    }

    /** The rest of each side in 8 commits, by two writers at once; done when both are. */
    CompletableFuture<Void> writeConcurrently() {
      return CompletableFuture.allOf(
          CompletableFuture.runAsync(
              () -> commitInSteps("orders", orderRows.subList(orders / 10, orderRows.size()), 1)),
          CompletableFuture.runAsync(
              () ->
                  commitInSteps(
                      "shipments",
                      shipmentRows.subList(shipmentRows.size() / 10, shipmentRows.size()),
                      2)));
    }

    /** The commits the writers made so far. */
    int commits() {
      return commits.get();
    }

    private void commitInSteps(String name, List<Record> rows, int seed) {
      Random pause = new Random(seed);
      int steps = 8;
      for (int step = 0; step < steps; step++) {
        List<Record> part =
            rows.subList(rows.size() * step / steps, rows.size() * (step + 1) / steps);
        new TableWriter(table(name)).append(part);
        commits.incrementAndGet();
        try {
          Thread.sleep(pause.nextInt(400));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }

    /** Orders {@code first} to {@code first + count - 1}, in one commit. */
    void appendOrders(int first, int count) {
      Table table = table("orders");
      List<Record> rows = new ArrayList<>();
      for (long id = first; id < first + count; id++) {
        rows.add(record(table, id, "c" + (id % 50), (int) (id % 1_000)));
      }
      new TableWriter(table).append(rows);
    }

    /** One shipment of each of orders {@code first} to {@code first + count - 1}, one commit. */
    void appendShipments(int first, int count) {
      Table table = table("shipments");
      List<Record> rows = new ArrayList<>();
      for (long id = first; id < first + count; id++) {
        rows.add(record(table, id, id, CARRIERS[(int) (id % CARRIERS.length)]));
      }
      new TableWriter(table).append(rows);
    }
  }

  /** The identity on strings that fails its task once, at the row it is armed for. */
  public static final class FailOnce extends ScalarFunction {
    private static final AtomicLong ROWS = new AtomicLong();
    private static volatile long failAt;
    static volatile boolean failed;

    static void arm(long row) {
      ROWS.set(0);
      failAt = row;
      failed = false;
    }

    public String eval(String value) {
      if (ROWS.incrementAndGet() == failAt) {
        failed = true;
        throw new IllegalStateException("failure injected by the test at joined row " + failAt);
      }
      return value;
    }
  }
}
