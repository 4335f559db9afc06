package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.server.ServerProcess;
import io.skade.write.TableWriter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * Flink's regular streaming join of two skade tables beside its delta join, the same query in one
 * run ({@code orders JOIN shipments ON order_id}, into an upsert sink): {@code orders} holds
 * 1,000,000 rows (keyed by {@code order_id}), {@code shipments} 100,000 (a log table bucketed by
 * {@code order_id}); once the job has joined them, 200,000 rows are appended to each side by two
 * writers at once, in commits of 2,000 every 100 ms (half the new shipments belong to new orders,
 * committed about when they are, half to old ones).
 *
 * <p>Per join: catch-up throughput (the tables' 1,100,000 rows over the time until the sources
 * emitted them all and every initial pair was joined), latency from the later of a joined row's two
 * commits to its arrival (p50, p99), the join operator's and the whole job's state in the last
 * checkpoint, and the heap the job holds once everything is joined (after a full GC, less the heap
 * before it started). Each join runs in a JVM of its own, on tables loaded alike. System
 * properties: {@code skade.bench.delta.orders} (1,000,000), {@code skade.bench.delta.shipments}
 * (100,000), {@code skade.bench.delta.appended} (200,000), {@code skade.bench.delta.parallelism}
 * (2), {@code skade.bench.delta.remote} (false: the catalog embedded in this JVM; true: a skade
 * server in a child JVM, reached by its uri).
 */
public final class DeltaJoinBenchmark {
  private static final long ORDERS = Long.getLong("skade.bench.delta.orders", 1_000_000);
  private static final long SHIPMENTS = Long.getLong("skade.bench.delta.shipments", 100_000);
  private static final long APPENDED = Long.getLong("skade.bench.delta.appended", 200_000);
  private static final int PARALLELISM = Integer.getInteger("skade.bench.delta.parallelism", 2);
  private static final boolean REMOTE = Boolean.getBoolean("skade.bench.delta.remote");
  private static final int COMMIT_ROWS = 2_000;
  private static final long COMMIT_EVERY_MILLIS = 100;
  private static final String[] CARRIERS = {"post", "bring", "dhl", "ups"};
  private static final String OPTIONS =
      "/*+ OPTIONS('scan.append-only' = 'true', 'lookup.async' = 'true'"
          + System.getProperty("skade.bench.delta.options", "")
          + ") */";

  private DeltaJoinBenchmark() {}

  private record Figures(
      String join,
      double catchUpSeconds,
      double rowsPerSecond,
      double streamSeconds,
      double p50Millis,
      double p99Millis,
      long duplicates,
      long joinStateBytes,
      long checkpointBytes,
      long heapBytes) {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs();
    if (args.length == 1) { // a child: one join, its figures on a line of their own
      Figures f = runAlone(args[0]);
      System.out.println(
          "FIGURES "
              + f.join()
              + " "
              + f.catchUpSeconds()
              + " "
              + f.rowsPerSecond()
              + " "
              + f.streamSeconds()
              + " "
              + f.p50Millis()
              + " "
              + f.p99Millis()
              + " "
              + f.duplicates()
              + " "
              + f.joinStateBytes()
              + " "
              + f.checkpointBytes()
              + " "
              + f.heapBytes());
      System.out.flush();
      System.exit(0); // Flink leaves non-daemon threads behind
    }
    System.out.printf(
        "delta join vs regular join: orders %,d rows (key order_id), shipments %,d"
            + " (log table, bucket(order_id, 4)); then %,d appended to each side in commits of %,d"
            + " every %d ms; parallelism %d, checkpoints every 2 s, heap state backend; each join"
            + " in a JVM of its own; catalog %s%n",
        ORDERS,
        SHIPMENTS,
        APPENDED,
        COMMIT_ROWS,
        COMMIT_EVERY_MILLIS,
        PARALLELISM,
        REMOTE ? "through a skade server (a child JVM)" : "embedded");
    List<Figures> figures = new ArrayList<>();
    for (String join : List.of("regular", "delta")) {
      figures.add(inChildJvm(join));
    }
    System.out.printf(
        "%-8s %10s %10s %9s %8s %8s %10s %12s %12s %9s%n",
        "join",
        "catchUp_s",
        "rows/s",
        "stream_s",
        "p50_ms",
        "p99_ms",
        "duplicates",
        "joinStateKB",
        "checkpointKB",
        "heapMB");
    for (Figures f : figures) {
      System.out.printf(
          "%-8s %10.2f %10.0f %9.2f %8.1f %8.1f %10d %12.1f %12.1f %9.1f%n",
          f.join(),
          f.catchUpSeconds(),
          f.rowsPerSecond(),
          f.streamSeconds(),
          f.p50Millis(),
          f.p99Millis(),
          f.duplicates(),
          f.joinStateBytes() / 1024.0,
          f.checkpointBytes() / 1024.0,
          f.heapBytes() / 1048576.0);
    }
    Figures regular = figures.get(0);
    Figures delta = figures.get(1);
    System.out.printf(
        "delta/regular: throughput %.2fx, latency p50 %.2fx, p99 %.2fx; join state"
            + " %.0fx smaller, checkpoint %.0fx smaller, heap %.2fx%n",
        delta.rowsPerSecond() / regular.rowsPerSecond(),
        delta.p50Millis() / regular.p50Millis(),
        delta.p99Millis() / regular.p99Millis(),
        (double) regular.joinStateBytes() / delta.joinStateBytes(),
        (double) regular.checkpointBytes() / delta.checkpointBytes(),
        (double) delta.heapBytes() / regular.heapBytes());
  }

  /** Runs {@code join} in a JVM like this one, so neither join's heap counts in the other's. */
  private static Figures inChildJvm(String join) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String argument : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      command.add(Harness.forChild(argument, join));
    }
    command.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            DeltaJoinBenchmark.class.getName(),
            join));
    Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
    Figures figures = null;
    try (BufferedReader lines = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
      for (String line = lines.readLine(); line != null; line = lines.readLine()) {
        if (line.startsWith("FIGURES ")) {
          String[] v = line.split(" ");
          figures =
              new Figures(
                  v[1],
                  Double.parseDouble(v[2]),
                  Double.parseDouble(v[3]),
                  Double.parseDouble(v[4]),
                  Double.parseDouble(v[5]),
                  Double.parseDouble(v[6]),
                  Long.parseLong(v[7]),
                  Long.parseLong(v[8]),
                  Long.parseLong(v[9]),
                  Long.parseLong(v[10]));
        } else if (!line.contains(" WARN ") && !line.startsWith("\tat ")) {
          System.out.println("  [" + join + "] " + line);
        }
      }
    }
    if (child.waitFor() != 0 || figures == null) {
      throw new IllegalStateException(
          "the " + join + " join's JVM failed (exit code " + child.exitValue() + ")");
    }
    return figures;
  }

  /**
   * One join on a cluster of its own, in a warehouse of its own: owned by this JVM, or with {@code
   * skade.bench.delta.remote} by a skade server in a child JVM that the job and the writers reach
   * by its {@code uri}.
   */
  private static Figures runAlone(String join) throws Exception {
    Path warehouse = Files.createTempDirectory("skade-delta-join-bench");
    Configuration clusterConf = new Configuration();
    SourceRowsReporter.register(clusterConf);
    MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setConfiguration(clusterConf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(4)
                .build());
    try {
      cluster.start();
      if (REMOTE) {
        // The writers' files go through skade's local file system, as the embedded run's do:
        // Hadoop's own starts two chmod processes per file, in the joins' JVMs.
        try (ServerProcess server = new ServerProcess(warehouse);
            RESTCatalog rest = ServerClients.committer("bench", server)) {
          return run(
              cluster,
              rest,
              "'uri' = '" + server.uri() + "', 'token' = '" + ServerProcess.TOKEN + "'",
              warehouse,
              join);
        }
      }
      try (SharedCatalogs.Handle catalog =
          SharedCatalogs.acquire(Map.of("warehouse", warehouse.toString()))) {
        return run(
            cluster, catalog.catalog(), "'warehouse' = '" + warehouse + "'", warehouse, join);
      }
    } finally {
      cluster.close();
      Harness.deleteTree(warehouse);
    }
  }

  /**
   * {@code join} of tables of {@code catalog}, which the job's {@code skade} catalog reaches with
   * {@code catalogOptions}.
   */
  private static Figures run(
      MiniCluster cluster, Catalog catalog, String catalogOptions, Path warehouse, String join)
      throws Exception {
    TableEnvironment env =
        environment(
            cluster, join.equals("regular") ? "NONE" : "AUTO", warehouse.resolve("_checkpoints"));
    env.executeSql("CREATE CATALOG lake WITH ('type' = 'skade', " + catalogOptions + ")");
    env.executeSql("CREATE DATABASE IF NOT EXISTS lake." + join);
    env.executeSql(
        "CREATE TABLE lake."
            + join
            + ".orders (order_id BIGINT, customer STRING,"
            + " amount INT, ts BIGINT, PRIMARY KEY (order_id) NOT ENFORCED) WITH ('bucket' = '4')");
    env.executeSql(
        "CREATE TABLE lake."
            + join
            + ".shipments (shipment_id BIGINT,"
            + " order_id BIGINT, carrier STRING, ts BIGINT) WITH ('bucket' = '4',"
            + " 'bucket-key' = 'order_id')");
    Table orders = catalog.loadTable(TableIdentifier.of(join, "orders"));
    Table shipments = catalog.loadTable(TableIdentifier.of(join, "shipments"));
    for (long first = 0; first < ORDERS; first += 100_000) {
      append(orders, orders(orders, first, Math.min(100_000, ORDERS - first), 0));
    }
    append(shipments, shipments(shipments, 0, SHIPMENTS, 0));
    env.executeSql(
        "CREATE TEMPORARY TABLE joined (order_id BIGINT, shipment_id BIGINT,"
            + " customer STRING, amount INT, carrier STRING, o_ts BIGINT, s_ts BIGINT,"
            + " PRIMARY KEY (order_id, shipment_id) NOT ENFORCED) WITH ("
            + " 'connector' = 'bench-joined', 'run' = '"
            + join
            + "')");
    // Every column of both tables: Flink 2.1 plans no delta join over a pushed projection.
    String statement =
        "INSERT INTO joined SELECT o.order_id, s.shipment_id, o.customer,"
            + " o.amount, s.carrier, o.ts, s.ts FROM"
            + " lake."
            + join
            + ".orders "
            + OPTIONS
            + " AS o JOIN lake."
            + join
            + ".shipments "
            + OPTIONS
            + " AS s ON o.order_id = s.order_id";
    boolean planned = env.explainSql(statement).contains("DeltaJoin(");
    if (planned != join.equals("delta")) {
      throw new IllegalStateException(
          "the " + join + " join was planned " + (planned ? "as" : "without") + " a DeltaJoin");
    }
    JoinedRowsSinkFactory.Measurement sink = JoinedRowsSinkFactory.measurement(join);
    long heapBefore = liveHeap();
    long start = System.nanoTime();
    JobID job = env.executeSql(statement).getJobClient().orElseThrow().getJobID();
    try {
      long initial = SHIPMENTS;
      waitUntil(() -> sink.distinct() >= initial, "the initial " + initial + " joined rows");
      // An order without shipments joins nothing: caught up once the sources emitted every row.
      waitUntil(
          () -> SourceRowsReporter.emitted() >= ORDERS + SHIPMENTS,
          "the sources to emit the tables' rows");
      double catchUp = (System.nanoTime() - start) / 1e9;

      long streamStart = System.nanoTime();
      CompletableFuture<Void> orderWriter =
          CompletableFuture.runAsync(() -> appendInSteps(orders, true));
      CompletableFuture<Void> shipmentWriter =
          CompletableFuture.runAsync(() -> appendInSteps(shipments, false));
      orderWriter.join();
      shipmentWriter.join();
      long total = SHIPMENTS + APPENDED;
      waitUntil(() -> sink.distinct() >= total, "all " + total + " joined rows");
      double stream = (System.nanoTime() - streamStart) / 1e9;

      long completed = completedCheckpoints(cluster, job);
      waitUntil(() -> completedCheckpoints(cluster, job) >= completed + 2, "two checkpoints");
      AccessExecutionGraph graph = cluster.getExecutionGraph(job).get();
      CompletedCheckpointStats checkpoint =
          graph.getCheckpointStatsSnapshot().getHistory().getLatestCompletedCheckpoint();
      long joinState = 0;
      for (AccessExecutionJobVertex vertex : graph.getAllVertices().values()) {
        if (vertex.getName().contains("Join")) {
          joinState += checkpoint.getTaskStateStats(vertex.getJobVertexId()).getStateSize();
        }
      }
      long heap = liveHeap() - heapBefore;
      long[] latencies = sink.latencies();
      return new Figures(
          join,
          catchUp,
          (ORDERS + SHIPMENTS) / catchUp,
          stream,
          percentile(latencies, 0.50),
          percentile(latencies, 0.99),
          sink.rows() - sink.distinct(),
          joinState,
          checkpoint.getStateSize(),
          heap);
    } finally {
      cluster.cancelJob(job).get(60, TimeUnit.SECONDS);
      cluster.requestJobResult(job).get(60, TimeUnit.SECONDS);
    }
  }

  /** An environment submitting to the cluster; the delta join strategy as given. */
  private static TableEnvironment environment(
      MiniCluster cluster, String deltaJoinStrategy, Path checkpoints) throws Exception {
    URI rest = cluster.getRestAddress().get();
    Configuration conf = new Configuration();
    conf.set(DeploymentOptions.TARGET, "remote");
    conf.set(RestOptions.ADDRESS, rest.getHost());
    conf.set(RestOptions.PORT, rest.getPort());
    conf.set(CoreOptions.DEFAULT_PARALLELISM, PARALLELISM);
    conf.setString("execution.checkpointing.interval", "2 s");
    // On disk: the regular join's state outgrows the job manager's memory (5 MB at most).
    conf.setString("execution.checkpointing.storage", "filesystem");
    conf.setString("execution.checkpointing.dir", checkpoints.toUri().toString());
    // Unchained, so the join's checkpointed state is its own vertex's.
    conf.setString("pipeline.operator-chaining.enabled", "false");
    conf.setString("table.optimizer.delta-join.strategy", deltaJoinStrategy);
    // Further settings, "key=value;key=value" (skade.bench.delta.conf), for experiments.
    for (String setting : System.getProperty("skade.bench.delta.conf", "").split(";")) {
      if (setting.contains("=")) {
        conf.setString(
            setting.substring(0, setting.indexOf('=')).trim(),
            setting.substring(setting.indexOf('=') + 1).trim());
      }
    }
    return TableEnvironment.create(
        EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
  }

  /**
   * The side's appended rows, {@code COMMIT_ROWS} per commit every {@code COMMIT_EVERY_MILLIS}:
   * orders {@code ORDERS} on; shipments {@code SHIPMENTS} on, the even ones of the order appended
   * in the same step, the odd ones of an old order.
   */
  private static void appendInSteps(Table table, boolean orders) {
    long next = System.nanoTime();
    for (long done = 0; done < APPENDED; done += COMMIT_ROWS) {
      long rows = Math.min(COMMIT_ROWS, APPENDED - done);
      long ts = System.nanoTime();
      append(
          table,
          orders
              ? orders(table, ORDERS + done, rows, ts)
              : shipments(table, SHIPMENTS + done, rows, ts));
      next += TimeUnit.MILLISECONDS.toNanos(COMMIT_EVERY_MILLIS);
      long wait = next - System.nanoTime();
      if (wait > 0) {
        try {
          TimeUnit.NANOSECONDS.sleep(wait);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private static void append(Table table, List<Record> rows) {
    table.refresh();
    new TableWriter(table).append(rows);
  }

  private static List<Record> orders(Table table, long first, long count, long ts) {
    List<Record> rows = new ArrayList<>((int) count);
    for (long id = first; id < first + count; id++) {
      GenericRecord row = GenericRecord.create(table.schema());
      row.set(0, id);
      row.set(1, "customer-" + (id % 10_000));
      row.set(2, (int) (id % 1_000));
      row.set(3, ts);
      rows.add(row);
    }
    return rows;
  }

  /** Shipments {@code first} on; see {@link #appendInSteps} and the class comment. */
  private static List<Record> shipments(Table table, long first, long count, long ts) {
    List<Record> rows = new ArrayList<>((int) count);
    for (long id = first; id < first + count; id++) {
      long order;
      if (id < SHIPMENTS) {
        order = id * (ORDERS / SHIPMENTS); // the initial ones: spread over the initial orders
      } else {
        long appended = id - SHIPMENTS;
        order = appended % 2 == 0 ? ORDERS + appended : (appended * 7_919) % ORDERS;
      }
      GenericRecord row = GenericRecord.create(table.schema());
      row.set(0, id);
      row.set(1, order);
      row.set(2, CARRIERS[(int) (id % CARRIERS.length)]);
      row.set(3, ts);
      rows.add(row);
    }
    return rows;
  }

  private static long completedCheckpoints(MiniCluster cluster, JobID job) {
    try {
      return cluster
          .getExecutionGraph(job)
          .get()
          .getCheckpointStatsSnapshot()
          .getCounts()
          .getNumberOfCompletedCheckpoints();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static void waitUntil(BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("gave up waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  private static long liveHeap() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(p * sorted.length))] / 1e6;
  }
}
