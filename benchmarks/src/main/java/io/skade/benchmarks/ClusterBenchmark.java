package io.skade.benchmarks;

import static io.skade.benchmarks.SourceLatencyRun.SCHEMA;
import static io.skade.benchmarks.SourceLatencyRun.commit;
import static io.skade.benchmarks.SourceLatencyRun.ms;
import static io.skade.benchmarks.SourceLatencyRun.pause;

import io.skade.benchmarks.SourceLatencyRun.StageTimes;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.remote.SkadeServerClient;
import io.skade.e2e.ClusterJvm;
import io.skade.e2e.FlinkCluster;
import io.skade.e2e.SubmitSql;
import io.skade.server.ServerProcess;
import io.skade.write.TableWriter;
import java.io.File;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

/**
 * Prints, side by side in one run, skade on a Flink cluster of processes beside the same jobs in
 * one JVM's MiniCluster: commit on the server → row emitted on a TaskManager (p50 / p99 / max), and
 * lookup-join probes per second in one slot. It asserts nothing.
 *
 * <p>The layout is the e2e suite's ({@code SkadeOnFlinkClusterTest}): a skade server from its
 * shaded jar, a Flink 2.1 standalone session cluster of a JobManager and two TaskManagers (four
 * slots each) with skade's {@code skade-sql-connector} jar in lib/, each its own JVM, and the jobs
 * submitted as SQL with {@code execution.target: remote}. The MiniCluster runs the same SQL in a
 * JVM of its own on the same class path. Both reach the catalog through the same server.
 *
 * <p>Latency: this JVM commits one-row appends to a fresh LOG table through the server's REST
 * catalog; a job at parallelism 1 reads the table's changelog ({@code 'scan.startup.mode' =
 * 'latest'}) and prints each row's id with its processing time, taken as the row leaves the source,
 * to the TaskManager's (or MiniCluster JVM's) output, which this JVM reads back. The latency of a
 * row is that time less the server's committer's stamp of its commit (the start of its group
 * commit, before the fsync), both on this machine's wall clock, to the millisecond.
 *
 * <p>Lookups: a bounded {@code datagen} stream of probes at parallelism 1 joined with a primary-key
 * table ({@code FOR SYSTEM_TIME AS OF}) into a {@code blackhole} sink; probes per second over the
 * job's net runtime (its start-up, the lookup's table load among it, included).
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.commits} measured commits per
 * layout [200], {@code skade.bench.warmupCommits} [300, as the other latency benchmarks: the JIT
 * compiles the read path of each JVM over the first hundreds of commits], {@code
 * skade.bench.probes} [300000], {@code skade.bench.dimRows} [100000]; the jars: {@code
 * skade.bench.flinkLib} (a file holding Flink's lib/ as a class path), {@code
 * skade.bench.sqlConnectorJar}, {@code skade.bench.serverJar} (set by this module's pom).
 */
public final class ClusterBenchmark {
  private static final Pattern SEEN =
      Pattern.compile("seen[^>]*> \\+I\\[(-?\\d+), ([0-9T:.\\-]+Z)\\]");
  private static final Schema DIM =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "v", Types.StringType.get())),
          Set.of(1));

  private ClusterBenchmark() {}

  /** One layout's figures. */
  private record Figures(
      String layout,
      int commits,
      long[] latencyMicros,
      List<StageTimes> stages,
      double probesPerSecond,
      long lookupRuntimeMillis) {
    double millis(double quantile) {
      return SourceLatencyRun.quantile(latencyMicros, quantile) / 1e3;
    }
  }

  /** One layout's commit → row latencies, microseconds, and their stages. */
  private record Latency(long[] micros, List<StageTimes> stages) {}

  public static void main(String[] args) throws Exception {
    SourceLatencyRun.traceStages();
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int warmup = Integer.getInteger("skade.bench.warmupCommits", 300);
    long probes = Long.getLong("skade.bench.probes", 300_000);
    int dimRows = Integer.getInteger("skade.bench.dimRows", 100_000);
    Harness.printHeader("skade cluster benchmark | load average " + Harness.loadAverage());
    System.out.printf(
        "per layout: %d warm-up then %d measured one-row appends %d-%d ms apart"
            + " through the skade server (a child JVM); %d lookup probes of a %d-row primary-key"
            + " table; jobs at parallelism 1.%n",
        warmup,
        commits,
        SourceLatencyRun.pauseMillis(),
        SourceLatencyRun.pauseMillis() * 5 / 2,
        probes,
        dimRows);

    Path root = Files.createTempDirectory("skade-cluster-bench-");
    List<String> lib =
        new ArrayList<>(
            Arrays.asList(
                Files.readString(Path.of(required("skade.bench.flinkLib")))
                    .trim()
                    .split(File.pathSeparator)));
    lib.add(required("skade.bench.sqlConnectorJar"));
    List<String> client = new ArrayList<>(lib);
    client.add(
        Path.of(SubmitSql.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .toString());
    List<Figures> figures = new ArrayList<>();
    try (ServerProcess server =
            ServerProcess.fromJar(
                Files.createDirectories(root.resolve("server")),
                Path.of(required("skade.bench.serverJar")));
        RESTCatalog committer = ServerClients.committer("committer", server)) {
      SkadeServerClient feed =
          new SkadeServerClient(
              URI.create(server.uri()), ServerProcess.TOKEN, Duration.ofMinutes(1));
      committer.createNamespace(Namespace.of("bench"));
      writeDim(committer, dimRows);
      String catalog =
          "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '"
              + server.uri()
              + "', 'token' = '"
              + ServerProcess.TOKEN
              + "');\n";

      try (FlinkCluster cluster =
          FlinkCluster.start(
              root.resolve("cluster"),
              lib,
              2,
              4,
              Map.of("env.java.opts.all", SourceLatencyRun.stageTraceOption()))) {
        List<String> remote =
            List.of(
                "execution.target=remote",
                "rest.address=" + cluster.restAddress(),
                "rest.port=" + cluster.restPort());
        Path log = root.resolve("cluster-client.log");
        TableWriter events = events(committer, "events_cluster");
        ClusterJvm job = submit(client, catalog + latencyJob("events_cluster"), remote, false, log);
        String jobId = jobId(job, log);
        Latency latency =
            latency(
                events,
                TableIdentifier.of("bench", "events_cluster"),
                feed,
                cluster.logs(),
                warmup,
                commits);
        cluster.cancel(jobId);
        long runtime =
            lookupRuntime(
                client,
                catalog + lookupJob(probes, dimRows),
                remote,
                root.resolve("cluster-lookups.log"));
        figures.add(
            new Figures(
                "cluster: JobManager + 2 TaskManagers",
                commits,
                latency.micros(),
                latency.stages(),
                probes * 1000.0 / runtime,
                runtime));
      }

      Path log = root.resolve("minicluster.log");
      TableWriter events = events(committer, "events_mini");
      ClusterJvm mini = submit(client, catalog + latencyJob("events_mini"), List.of(), true, log);
      try {
        jobId(mini, log);
        Latency latency =
            latency(
                events,
                TableIdentifier.of("bench", "events_mini"),
                feed,
                List.of(log),
                warmup,
                commits);
        mini.kill();
        long runtime =
            lookupRuntime(
                client,
                catalog + lookupJob(probes, dimRows),
                List.of(),
                root.resolve("minicluster-lookups.log"));
        figures.add(
            new Figures(
                "MiniCluster: one JVM",
                commits,
                latency.micros(),
                latency.stages(),
                probes * 1000.0 / runtime,
                runtime));
      } finally {
        mini.kill();
      }
    }
    print(figures);
    System.out.println("load average at the end (1, 5, 15 min): " + Harness.loadAverage());
  }

  private static String required(String property) {
    String value = System.getProperty(property);
    if (value == null) {
      throw new IllegalArgumentException(
          "system property "
              + property
              + " is not set: run"
              + " this benchmark through the benchmarks module's exec:exec (see the README)");
    }
    return value;
  }

  private static void writeDim(RESTCatalog catalog, int rows) {
    Table dim =
        catalog.createTable(
            TableIdentifier.of("bench", "dim"),
            DIM,
            PartitionSpec.unpartitioned(),
            Map.of("format-version", "2"));
    TableWriter writer = new TableWriter(dim);
    List<Record> batch = new ArrayList<>();
    for (long id = 1; id <= rows; id++) {
      GenericRecord row = GenericRecord.create(DIM);
      row.setField("id", id);
      row.setField("v", "value-" + id);
      batch.add(row);
      if (batch.size() == rows / 4 || id == rows) {
        writer.append(batch);
        batch = new ArrayList<>();
      }
    }
  }

  private static String latencyJob(String table) {
    return "CREATE TEMPORARY TABLE seen (id BIGINT, seen_at TIMESTAMP_LTZ(3))"
        + " WITH ('connector' = 'print', 'print-identifier' = 'seen');\n"
        + "SET 'parallelism.default' = '1';\n"
        + "INSERT INTO seen SELECT id, PROCTIME() FROM lake.bench."
        + table
        + " /*+ OPTIONS('scan.startup.mode' = 'latest') */;\n";
  }

  private static String lookupJob(long probes, int dimRows) {
    return "CREATE TEMPORARY TABLE probes (k BIGINT, pt AS PROCTIME()) WITH ("
        + "'connector' = 'datagen', 'number-of-rows' = '"
        + probes
        + "', 'fields.k.min' = '1',"
        + " 'fields.k.max' = '"
        + dimRows
        + "');\n"
        + "CREATE TEMPORARY TABLE joined (k BIGINT, v STRING) WITH ('connector' = 'blackhole');\n"
        + "SET 'parallelism.default' = '1';\n"
        + "INSERT INTO joined SELECT p.k, d.v FROM probes AS p"
        + " JOIN lake.bench.dim FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id;\n";
  }

  /** Starts {@link SubmitSql} on {@code script}; {@code await}: it waits for its jobs. */
  private static ClusterJvm submit(
      List<String> classpath, String script, List<String> options, boolean await, Path log)
      throws Exception {
    Path file = Files.writeString(Files.createTempFile(log.getParent(), "script", ".sql"), script);
    List<String> args = new ArrayList<>(List.of(file.toString()));
    args.addAll(options);
    return ClusterJvm.start(
        "sql-client",
        classpath,
        List.of(
            "-Xmx2g",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dskade.submit.await=" + await,
            SourceLatencyRun.stageTraceOption()),
        SubmitSql.class.getName(),
        args,
        log);
  }

  /** Waits for the {@code JOB <id>} line of {@code client}. */
  private static String jobId(ClusterJvm client, Path log) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (System.nanoTime() < deadline) {
      for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        if (line.startsWith("JOB ")) {
          return line.substring(4);
        }
      }
      Thread.sleep(200);
    }
    throw new IllegalStateException("no job was submitted; see " + log);
  }

  /** Runs the lookup job to its end; its net runtime in milliseconds. */
  private static long lookupRuntime(
      List<String> classpath, String script, List<String> options, Path log) throws Exception {
    ClusterJvm client = submit(classpath, script, options, true, log);
    int exit = client.waitFor(600);
    for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
      if (line.startsWith("DONE ")) {
        return Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    throw new IllegalStateException(
        "the lookup job did not finish (exit " + exit + "); see " + log);
  }

  /** A writer on a fresh LOG table {@code bench.<name>}. */
  private static TableWriter events(RESTCatalog catalog, String name) {
    return new TableWriter(
        catalog.createTable(
            TableIdentifier.of("bench", name),
            SCHEMA,
            PartitionSpec.unpartitioned(),
            Map.of("format-version", "2")));
  }

  /**
   * Commits through {@code writer} until the job prints a row, then {@code warmup} and {@code
   * commits} measured rows; per measured row seen, microseconds from its commit's stamp to the
   * job's time for it, and the stages the source marked.
   */
  private static Latency latency(
      TableWriter writer,
      TableIdentifier id,
      SkadeServerClient feed,
      List<Path> logs,
      int warmup,
      int commits)
      throws Exception {
    String name = id.toString();
    long probe = -1_000_000;
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (seen(logs).isEmpty()) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            name + ": the job printed no row in 2 minutes; see " + logs);
      }
      commit(writer, probe--);
      Thread.sleep(200);
    }
    for (int i = 1; i <= warmup; i++) {
      commit(writer, -i);
      pause();
    }
    SourceLatencyRun.clearStageTrace();
    long[] stamps = new long[commits];
    long[] seqs = new long[commits];
    for (int i = 0; i < commits; i++) {
      long snapshot = commit(writer, i);
      CommitEvent event = feed.commitOf(id, snapshot).orElseThrow();
      stamps[i] = event.tsMicros();
      seqs[i] = event.commitSeq();
      pause();
    }
    Map<Long, Long> seen = Map.of();
    long until = System.nanoTime() + SourceLatencyRun.SEEN_TIMEOUT.toNanos();
    while (System.nanoTime() < until) {
      seen = seen(logs);
      if (seen.containsKey((long) commits - 1)) {
        break;
      }
      Thread.sleep(100);
    }
    long[] latency = new long[commits];
    long[] seenSeqs = new long[commits];
    long[] seenStamps = new long[commits];
    int counted = 0;
    for (int i = 0; i < commits; i++) {
      Long at = seen.get((long) i);
      if (at != null) {
        seenSeqs[counted] = seqs[i];
        seenStamps[counted] = stamps[i];
        latency[counted++] = at - stamps[i];
      }
    }
    if (counted < commits) {
      System.out.printf("%s: %d of %d measured rows not seen%n", name, commits - counted, commits);
    }
    long[] micros = Arrays.copyOf(latency, counted);
    return new Latency(
        micros,
        SourceLatencyRun.stages(
            Arrays.copyOf(seenSeqs, counted),
            Arrays.copyOf(seenStamps, counted),
            null,
            Arrays.stream(micros).map(m -> m * 1_000).toArray()));
  }

  /** Row id → when the job had it, in microseconds since the epoch, from the job's output. */
  private static Map<Long, Long> seen(List<Path> logs) throws Exception {
    Map<Long, Long> seen = new HashMap<>();
    for (Path log : logs) {
      for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        Matcher matcher = SEEN.matcher(line);
        if (matcher.find()) {
          Instant at = Instant.parse(matcher.group(2));
          seen.put(
              Long.parseLong(matcher.group(1)),
              at.getEpochSecond() * 1_000_000L + at.getNano() / 1_000);
        }
      }
    }
    return seen;
  }

  private static void print(List<Figures> figures) {
    Figures mini = figures.get(figures.size() - 1);
    System.out.println();
    String format = "%-38s %7s %7s | %8s %8s %8s %9s %9s | %12s %10s %8s%n";
    System.out.printf(
        format,
        "layout",
        "commits",
        "seen",
        "p50 ms",
        "p99 ms",
        "max ms",
        "p50 ratio",
        "p99 ratio",
        "probes/s",
        "runtime s",
        "ratio");
    System.out.println("-".repeat(140));
    for (Figures f : figures) {
      System.out.printf(
          format,
          f.layout(),
          f.commits(),
          f.latencyMicros().length,
          ms(f.millis(0.50)),
          ms(f.millis(0.99)),
          ms(f.millis(1.0)),
          String.format("%.2fx", f.millis(0.50) / mini.millis(0.50)),
          String.format("%.2fx", f.millis(0.99) / mini.millis(0.99)),
          String.format("%,.0f", f.probesPerSecond()),
          String.format("%.1f", f.lookupRuntimeMillis() / 1e3),
          String.format("%.2fx", f.probesPerSecond() / mini.probesPerSecond()));
    }
    System.out.println(
        "commit -> row: from the server's committer stamping the commit to the"
            + " job's processing time of the row as it left the source (ms resolution); probes/s:"
            + " lookup probes over the lookup job's net runtime, one slot; ratios vs the"
            + " MiniCluster.");
    for (Figures f : figures) {
      SourceLatencyRun.printStages(f.layout(), f.stages());
    }
    Figures cluster = figures.get(0);
    System.out.printf(
        "%ntarget, the cluster: p50 <= 15 ms (%s ms, %s), p99 <= 50 ms (%s ms, %s), p50 within"
            + " 1.5x the MiniCluster's (%.2fx, %s)%n",
        ms(cluster.millis(0.50)),
        cluster.millis(0.50) <= 15 ? "met" : "missed",
        ms(cluster.millis(0.99)),
        cluster.millis(0.99) <= 50 ? "met" : "missed",
        cluster.millis(0.50) / mini.millis(0.50),
        cluster.millis(0.50) <= 1.5 * mini.millis(0.50) ? "met" : "missed");
  }
}
