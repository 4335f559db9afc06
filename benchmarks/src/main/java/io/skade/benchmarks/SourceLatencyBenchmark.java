package io.skade.benchmarks;

import static io.skade.benchmarks.SourceLatencyRun.SEEN_TIMEOUT;
import static io.skade.benchmarks.SourceLatencyRun.fmt;
import static io.skade.benchmarks.SourceLatencyRun.label;
import static io.skade.benchmarks.SourceLatencyRun.ms;
import static io.skade.benchmarks.SourceLatencyRun.printStages;
import static io.skade.benchmarks.SourceLatencyRun.quantile;

import io.skade.benchmarks.SourceLatencyRun.Latency;
import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.sink.SkadeTableLoader;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;

/**
 * Prints, side by side in one run, how soon a committed row reaches a Flink job through skade's
 * {@code SkadeSource} (woken by the catalog's in-process commit feed) and through Iceberg's own
 * {@code IcebergSource} in streaming mode (which polls the table every monitor interval), and how
 * fast each reads a backlog of commits as a bounded job. It asserts nothing.
 *
 * <p>Latency: for each source, a fresh append-only table (no identifier fields) and an unbounded
 * job at parallelism 1 in a local MiniCluster of this JVM. The main thread commits one-row appends
 * through {@code TableWriter}, spaced 20–50 ms apart at random (a one-row append takes some 70 ms
 * of this machine's CPU, so the writer is then nearly always busy); the commit feed stamps the
 * {@code System.nanoTime()} at which each commit became durable (Iceberg's append returns some
 * milliseconds later); the job's map notes when it sees the row. Latency = seen − durable ({@link
 * SourceLatencyRun}). Probe commits (until the job emits a row) and warm-up commits are not
 * counted. Every source reads through the one catalog this JVM holds ({@link SharedCatalogs});
 * Iceberg's through {@link SkadeTableLoader}.
 *
 * <p>Backlog: a fresh table gets the backlog commits first; then a bounded skade job from the
 * earliest snapshot and an {@code IcebergSource} bounded batch read of the same table count the
 * rows, in turns, {@code skade.bench.backlogReads} times each [5] (after {@code
 * skade.bench.backlogWarmupReads} reads [3] of a warm-up table), at parallelism 1 and then 2; the
 * target is held, per parallelism, against the median of the pairs' ratios. Each job is timed by
 * its net runtime and from its submission to the session cluster all reads share ({@link
 * BoundedCount}).
 *
 * <p>Object storage ({@code skade.bench.storage=s3}, see {@link ObjectStorage}): after the local
 * figures, the same code runs on an S3 warehouse at each of {@code skade.bench.s3.delays} (skade
 * and Iceberg's 100 ms monitor interval; the 1 s interval only locally), each source's requests per
 * commit are printed, and skade's p50 is set against its target, the local p50 plus three requests'
 * delay, and beside it the local p50 plus three GETs as they cost there in all ({@link
 * ObjectStorage#measuredGetMillis}: a request takes time even at 0 ms). The backlog is written to
 * S3 once and read at each delay.
 *
 * <p>System properties (defaults in brackets; on S3 where it differs): {@code skade.bench.commits}
 * measured commits per source [200; 100], {@code skade.bench.slowCommits} for Iceberg's 1 s monitor
 * interval, where each row takes about half a second to surface [60], {@code
 * skade.bench.warmupCommits} per source, at the least [300: the JIT compiles a source's read path
 * over the first hundreds of commits; 100], then more until the JIT is quiet, at most {@code
 * skade.bench.maxWarmupCommits} in all [3000: code a commit runs once is compiled by C2 only after
 * thousands of commits, and the compiler's threads meanwhile take the CPU of a 2-core machine],
 * {@code skade.bench.backlogCommits} [1000: a read of 200 took about 0.6 s, its job's start a third
 * of it, and varied by a quarter between runs; 100], {@code skade.bench.backlogRows} rows per
 * backlog commit [5000], {@code skade.bench.pauseMillis} the least gap between commits, the most
 * being 2.5 times it [20].
 */
public final class SourceLatencyBenchmark {
  private static final Schema SCHEMA = SourceLatencyRun.SCHEMA;
  private static final String NAMESPACE = "bench";
  private static final String BACKLOG = NAMESPACE + ".backlog";
  private static final String WARMUP_BACKLOG = NAMESPACE + ".backlog_warmup";

  /** How often each source reads the measured backlog, in turns with the other. */
  private static final int BACKLOG_READS = Integer.getInteger("skade.bench.backlogReads", 5);

  /** How often each source reads the warm-up backlog first, at each parallelism. */
  private static final int BACKLOG_WARMUP_READS =
      Integer.getInteger("skade.bench.backlogWarmupReads", 3);

  /** The parallelisms the backlog is read at, each by both sources. */
  private static final int[] PARALLELISMS = {1, 2};

  /** The in-process targets, commit durable to row emitted. */
  private static final double TARGET_P50_MS = 3;

  private static final double TARGET_P99_MS = 10;

  /**
   * A bounded read: its rows, its seconds from submission (to the session cluster) and its job's
   * own (net runtime).
   */
  private record Throughput(
      String source,
      int parallelism,
      long rows,
      double seconds,
      double jobSeconds,
      String requests) {
    double rowsPerSecond() {
      return rows / jobSeconds;
    }
  }

  /**
   * The storage a group of figures was taken on, its per-request delay and what a small GET costs
   * there in all ({@link ObjectStorage#measuredGetMillis}; 0 on disk).
   */
  private record Storage(String label, long delayMillis, double getMillis) {}

  private SourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    // Every MiniCluster warns of its missing Hadoop config and log file; keep the table readable.
    Harness.quietLogs("org.apache.flink");
    SourceLatencyRun.traceStages();
    boolean s3 = ObjectStorage.s3();
    int commits = Integer.getInteger("skade.bench.commits", s3 ? 100 : 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", s3 ? 100 : 300);
    int backlogCommits = Integer.getInteger("skade.bench.backlogCommits", s3 ? 100 : 1000);
    int backlogRows = Integer.getInteger("skade.bench.backlogRows", 5000);
    Harness.printHeader("skade source latency benchmark | load average " + Harness.loadAverage());
    System.out.printf(
        "latency: per source a fresh LOG table (id bigint, ts_nanos bigint, payload"
            + " string), at least %d warm-up (until the JIT is quiet) then %d measured one-row"
            + " appends %d-%d ms apart (%d for a 1 s monitor interval, on local disk only);"
            + " latency = commit durable (the commit feed's stamp) -> row seen by the job"
            + " (parallelism 1, same JVM).%n",
        warmupCommits,
        commits,
        Long.getLong("skade.bench.pauseMillis", 20),
        Long.getLong("skade.bench.pauseMillis", 20) * 5 / 2,
        slowCommits);
    System.out.printf(
        "backlog: %d commits x %d rows, then bounded jobs of one session cluster count them %d"
            + " times each at parallelism 1 and 2 (after both read a warm-up table of a tenth of"
            + " the commits %d times at each).%n",
        backlogCommits, backlogRows, BACKLOG_READS, BACKLOG_WARMUP_READS);
    if (s3) {
      System.out.println(
          "storage: local disk, then S3 at "
              + ObjectStorage.delays()
              + " ms per request: "
              + ObjectStorage.describe(0).replace(" 0 ms per request,", ""));
    }

    Path root = Files.createTempDirectory("skade-source-latency-bench-");
    Map<Storage, List<Latency>> latencies = new LinkedHashMap<>();
    Map<Storage, List<Throughput>> throughputs = new LinkedHashMap<>();
    try {
      Storage disk = new Storage("local disk", 0, 0);
      Map<String, String> local = Map.of("warehouse", root.resolve("local").toString());
      try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(local)) {
        SkadeCatalog catalog = handle.catalog();
        catalog.createNamespace(Namespace.of(NAMESPACE));
        latencies.put(
            disk, latencies(catalog, local, "", warmupCommits, commits, slowCommits, null));
        writeBacklogs(catalog, backlogCommits, backlogRows);
        throughputs.put(disk, backlog(local, null));
      }
      if (s3) {
        try (ObjectStorage storage = ObjectStorage.start(root.resolve("s3"))) {
          Map<String, String> properties =
              storage.catalogProperties("latency", root.resolve("s3-catalog"));
          try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
            SkadeCatalog catalog = handle.catalog();
            catalog.createNamespace(Namespace.of(NAMESPACE));
            writeBacklogs(catalog, backlogCommits, backlogRows);
            for (long delay : ObjectStorage.delays()) {
              storage.delay(delay);
              Storage on = new Storage("S3 " + delay + " ms", delay, storage.measuredGetMillis());
              System.out.println("measuring on " + storage.describe() + " ...");
              latencies.put(
                  on,
                  latencies(
                      catalog,
                      properties,
                      "_" + delay + "ms",
                      warmupCommits,
                      commits,
                      slowCommits,
                      storage));
              throughputs.put(on, backlog(properties, storage));
            }
          }
        }
      }
    } finally {
      Harness.deleteTree(root);
    }
    print(latencies, throughputs, backlogCommits, backlogRows);
    System.out.println("load average at the end (1, 5, 15 min): " + Harness.loadAverage());
  }

  /**
   * skade's and IcebergSource's latencies on {@code catalog} (of {@code properties}), tables named
   * with {@code suffix}; Iceberg's 1 s monitor interval only on local disk ({@code s3} null). On S3
   * each source's line gets the requests per commit of its run, warm-up included.
   */
  private static List<Latency> latencies(
      SkadeCatalog catalog,
      Map<String, String> properties,
      String suffix,
      int warmupCommits,
      int commits,
      int slowCommits,
      ObjectStorage s3)
      throws Exception {
    List<Latency> out = new ArrayList<>();
    ObjectStorage.Requests before = s3 == null ? null : s3.requests();
    out.add(
        SourceLatencyRun.measureEmbedded(
            "skade (commit feed)",
            catalog,
            NAMESPACE + ".skade_feed" + suffix,
            warmupCommits,
            commits,
            SourceLatencyRun.skadeInProcess(properties)));
    if (s3 != null) {
      System.out.println(
          "  skade: requests "
              + s3.requests().minus(before).per(warmupCommits + commits, "commit"));
    }
    List<Duration> intervals =
        s3 == null
            ? List.of(Duration.ofMillis(100), Duration.ofSeconds(1))
            : List.of(Duration.ofMillis(100));
    for (Duration interval : intervals) {
      before = s3 == null ? null : s3.requests();
      out.add(
          SourceLatencyRun.measureEmbedded(
              "IcebergSource monitor " + label(interval),
              catalog,
              NAMESPACE + ".iceberg_" + interval.toMillis() + "ms" + suffix,
              warmupCommits,
              interval.toMillis() < 1000 ? commits : slowCommits,
              (env, table) -> icebergStream(env, properties, table, interval)));
      if (s3 != null) {
        System.out.println(
            "  IcebergSource "
                + label(interval)
                + ": requests "
                + s3.requests().minus(before).per(warmupCommits + commits, "commit"));
      }
    }
    return out;
  }

  /**
   * The backlogs written beforehand, each read by a bounded skade job, then IcebergSource's, at
   * parallelism 1 and then 2, as jobs of one session cluster: first the warm-up table, then the
   * measured one. Whichever source reads first in a JVM (or at a parallelism) pays the compilation
   * of the code both share (Parquet's and Iceberg's column readers), and the JIT goes on compiling
   * through the next reads of both; the warm-up table's reads have most of it paid before the
   * measured reads, without warming any cache with the measured table.
   */
  private static List<Throughput> backlog(Map<String, String> properties, ObjectStorage s3)
      throws Exception {
    List<Throughput> out = new ArrayList<>();
    try (BoundedCount session = BoundedCount.start()) {
      for (int parallelism : PARALLELISMS) {
        for (int read = 1; read <= BACKLOG_WARMUP_READS; read++) {
          out.addAll(
              readPair(
                  session, properties, s3, WARMUP_BACKLOG, parallelism, " (warm-up " + read + ")"));
        }
        for (int read = 1; read <= BACKLOG_READS; read++) {
          out.addAll(
              readPair(
                  session,
                  properties,
                  s3,
                  BACKLOG,
                  parallelism,
                  BACKLOG_READS > 1 ? " (read " + read + ")" : ""));
        }
      }
    }
    return out;
  }

  /** A bounded skade job's read of {@code table}, then IcebergSource's. */
  private static List<Throughput> readPair(
      BoundedCount session,
      Map<String, String> properties,
      ObjectStorage s3,
      String table,
      int parallelism,
      String suffix)
      throws Exception {
    return List.of(
        count(
            session,
            "skade bounded, earliest" + suffix,
            parallelism,
            s3,
            env -> BoundedCount.skadeFromEarliest(env, properties, TableIdentifier.parse(table))),
        count(
            session,
            "IcebergSource bounded batch" + suffix,
            parallelism,
            s3,
            env -> icebergStream(env, properties, table, null)));
  }

  /**
   * Iceberg's source over {@code table} of the embedded catalog; bounded if {@code interval} is
   * null.
   */
  private static DataStream<RowData> icebergStream(
      StreamExecutionEnvironment env,
      Map<String, String> properties,
      String table,
      Duration interval) {
    return SourceLatencyRun.icebergStream(
        env, new SkadeTableLoader(properties, TableIdentifier.parse(table)), interval);
  }

  /** The measured backlog and the warm-up one, a tenth of its commits. */
  private static void writeBacklogs(SkadeCatalog catalog, int commits, int rows) {
    writeBacklog(catalog, WARMUP_BACKLOG, Math.max(1, commits / 10), rows);
    writeBacklog(catalog, BACKLOG, commits, rows);
  }

  private static void writeBacklog(SkadeCatalog catalog, String table, int commits, int rows) {
    TableWriter writer = new TableWriter(SourceLatencyRun.createTable(catalog, table));
    GenericRecord template = GenericRecord.create(SCHEMA);
    long started = System.nanoTime();
    for (int c = 0; c < commits; c++) {
      List<Record> batch = new ArrayList<>(rows);
      for (int i = 0; i < rows; i++) {
        long id = (long) c * rows + i;
        GenericRecord row = template.copy();
        row.setField("id", id);
        row.setField("ts_nanos", System.nanoTime());
        row.setField("payload", "row-" + id);
        batch.add(row);
      }
      writer.append(batch);
    }
    System.out.printf(
        "backlog written: %d commits in %.1f s%n", commits, (System.nanoTime() - started) / 1e9);
  }

  /**
   * Runs a bounded job on {@code session}'s cluster into a counting map and returns its rows/s, and
   * on S3 the requests it made.
   */
  private static Throughput count(
      BoundedCount session,
      String source,
      int parallelism,
      ObjectStorage s3,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    ObjectStorage.Requests before = s3 == null ? null : s3.requests();
    BoundedCount.Result counted = session.run(source, parallelism, reading);
    String requests = "";
    if (s3 != null) {
      requests = s3.requests().minus(before).counts();
    }
    return new Throughput(
        source, parallelism, counted.rows(), counted.seconds(), counted.jobSeconds(), requests);
  }

  private static void print(
      Map<Storage, List<Latency>> latencies,
      Map<Storage, List<Throughput>> throughputs,
      int backlogCommits,
      int backlogRows) {
    Latency localSkade = latencies.values().iterator().next().get(0);
    System.out.println();
    String format = "%-11s %-30s %8s %7s %8s %8s %8s %10s %10s %11s %8s %6s%n";
    System.out.printf(
        format,
        "storage",
        "source",
        "commits",
        "missed",
        "p50 ms",
        "p99 ms",
        "max ms",
        "p50 ratio",
        "p99 ratio",
        "append p50",
        "warm-up",
        "JIT %");
    System.out.println("-".repeat(148));
    for (Map.Entry<Storage, List<Latency>> e : latencies.entrySet()) {
      Latency skade = e.getValue().get(0);
      for (Latency l : e.getValue()) {
        System.out.printf(
            format,
            e.getKey().label(),
            l.source(),
            l.commits(),
            l.missed(),
            ms(l.millis(0.50)),
            ms(l.millis(0.99)),
            ms(l.millis(1.0)),
            fmt("%.1fx", l.millis(0.50) / skade.millis(0.50)),
            fmt("%.1fx", l.millis(0.99) / skade.millis(0.99)),
            ms(quantile(l.commitCallNanos(), 0.50) / 1e6),
            l.warmupCommits(),
            fmt("%.1f", 100 * l.jitShare()));
      }
    }
    System.out.printf(
        "ratio = the source's latency / skade's on the same storage. missed = measured rows not"
            + " seen within %d s of the last commit. append p50 = the one-row append itself (not in"
            + " the latency). warm-up = the commits before the measured ones: at least the set"
            + " number, then blocks of 100 until the JIT compiled for under %.0f%% of one's time."
            + " JIT %% = the JVM's compilation time over the measured commits, a share of their"
            + " time.%n",
        SEEN_TIMEOUT.toSeconds(), 100 * SourceLatencyRun.JIT_QUIET);
    latencies.forEach(
        (storage, list) ->
            list.forEach(l -> printStages(l.source() + " on " + storage.label(), l)));
    System.out.printf(
        "%ntarget, skade on local disk: p50 <= %.0f ms (%s ms, %s), p99 <= %.0f ms (%s ms, %s)%n",
        TARGET_P50_MS,
        ms(localSkade.millis(0.50)),
        localSkade.millis(0.50) <= TARGET_P50_MS ? "met" : "missed",
        TARGET_P99_MS,
        ms(localSkade.millis(0.99)),
        localSkade.millis(0.99) <= TARGET_P99_MS ? "met" : "missed");
    for (Map.Entry<Storage, List<Latency>> e : latencies.entrySet()) {
      long delay = e.getKey().delayMillis();
      if (e.getKey() == latencies.keySet().iterator().next()) {
        continue; // local disk: the reference
      }
      double p50 = e.getValue().get(0).millis(0.50);
      double target = localSkade.millis(0.50) + 3 * delay;
      double measured = localSkade.millis(0.50) + 3 * e.getKey().getMillis();
      System.out.printf(
          "target, skade on %s: p50 <= local p50 + 3 GETs (%s + 3 x %d ms = %s ms): p50 %s ms,"
              + " %s; a GET measured there costs %s ms: local p50 + 3 measured GETs = %s ms, %s%n",
          e.getKey().label(),
          ms(localSkade.millis(0.50)),
          delay,
          ms(target),
          ms(p50),
          p50 <= target ? "met" : "missed by " + ms(p50 - target) + " ms",
          ms(e.getKey().getMillis()),
          ms(measured),
          p50 <= measured ? "met" : "missed by " + ms(p50 - measured) + " ms");
    }

    System.out.println();
    format = "%-11s %-38s %4s %8s %8s %8s %10s %10s %10s  %s%n";
    System.out.printf(
        format,
        "storage",
        "backlog read (" + backlogCommits + " x " + backlogRows + " rows)",
        "par",
        "rows",
        "job s",
        "total s",
        "rows/s",
        "vs Iceberg",
        "total vs",
        "requests");
    System.out.println("-".repeat(137));
    for (Map.Entry<Storage, List<Throughput>> e : throughputs.entrySet()) {
      for (int parallelism : PARALLELISMS) {
        List<Throughput> list =
            e.getValue().stream().filter(t -> t.parallelism() == parallelism).toList();
        printBacklog(e.getKey(), parallelism, list, format);
      }
    }
    System.out.println(
        "job s = the bounded job's net runtime (its planning and deployment on the session"
            + " MiniCluster all reads share included), which rows/s and the ratios are of; total s"
            + " = from the submission, and total vs its ratio. A line's ratio is to"
            + " IcebergSource's read of the same table just after; the warm-up table (a tenth of"
            + " the commits) is read first so that neither source pays the JVM's compilation of"
            + " the Parquet readers both share, and the measured table is read in turns, as one"
            + " read's time varies from one read to the next.");
  }

  /**
   * The reads of one storage at one parallelism, each pair (skade's, then Iceberg's) with its
   * ratio, and the target held against the median ratio of the measured pairs (not the warm-up
   * ones).
   */
  private static void printBacklog(
      Storage storage, int parallelism, List<Throughput> list, String format) {
    List<Double> ratios = new ArrayList<>();
    List<Double> totalRatios = new ArrayList<>();
    for (int i = 0; i < list.size(); i += 2) {
      Throughput iceberg = list.get(i + 1);
      for (Throughput t : list.subList(i, i + 2)) {
        System.out.printf(
            format,
            storage.label(),
            t.source(),
            t.parallelism(),
            t.rows(),
            fmt("%.2f", t.jobSeconds()),
            fmt("%.2f", t.seconds()),
            fmt("%.0f", t.rowsPerSecond()),
            fmt("%.2fx", t.rowsPerSecond() / iceberg.rowsPerSecond()),
            fmt("%.2fx", iceberg.seconds() / t.seconds()),
            t.requests());
      }
      if (i / 2 >= BACKLOG_WARMUP_READS) { // the warm-up pairs come first
        ratios.add(list.get(i).rowsPerSecond() / iceberg.rowsPerSecond());
        totalRatios.add(iceberg.seconds() / list.get(i).seconds());
      }
    }
    double ratio = Harness.median(ratios.stream().mapToDouble(x -> x).toArray());
    double totalRatio = Harness.median(totalRatios.stream().mapToDouble(x -> x).toArray());
    double target = storage.delayMillis() > 0 || !storage.label().equals("local disk") ? 1.0 : 1.2;
    System.out.printf(
        "target, backlog on %s at parallelism %d: skade / IcebergSource = %s, the median of %d"
            + " reads each (target >= %.1fx): %s; from submission %s%n",
        storage.label(),
        parallelism,
        fmt("%.2fx", ratio),
        ratios.size(),
        target,
        ratio >= target ? "met" : "missed",
        fmt("%.2fx", totalRatio));
  }
}
