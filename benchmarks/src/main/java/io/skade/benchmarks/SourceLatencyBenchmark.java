package io.skade.benchmarks;

import static io.skade.benchmarks.SourceLatencyRun.SEEN_TIMEOUT;
import static io.skade.benchmarks.SourceLatencyRun.fmt;
import static io.skade.benchmarks.SourceLatencyRun.label;
import static io.skade.benchmarks.SourceLatencyRun.ms;
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
import java.util.Arrays;
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
 * rows. Their times include the job's MiniCluster start and planning, as a bounded job pays them.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.commits} measured commits per
 * source [200], {@code skade.bench.slowCommits} for Iceberg's 1 s monitor interval, where each row
 * takes about half a second to surface [60], {@code skade.bench.warmupCommits} per source [300: the
 * JIT compiles a source's read path over the first hundreds of commits], {@code
 * skade.bench.backlogCommits} [200], {@code skade.bench.backlogRows} rows per backlog commit
 * [5000], {@code skade.bench.pauseMillis} the least gap between commits, the most being 2.5 times
 * it [20].
 */
public final class SourceLatencyBenchmark {
  private static final Schema SCHEMA = SourceLatencyRun.SCHEMA;
  private static final String NAMESPACE = "bench";

  private record Throughput(String source, long rows, double seconds) {
    double rowsPerSecond() {
      return rows / seconds;
    }
  }

  private SourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    // Every MiniCluster warns of its missing Hadoop config and log file; keep the table readable.
    Harness.quietLogs("org.apache.flink");
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 300);
    int backlogCommits = Integer.getInteger("skade.bench.backlogCommits", 200);
    int backlogRows = Integer.getInteger("skade.bench.backlogRows", 5000);
    Harness.printHeader("skade source latency benchmark");
    System.out.printf(
        "latency: per source a fresh LOG table (id bigint, ts_nanos bigint, payload"
            + " string), %d warm-up then %d measured one-row appends %d-%d ms apart (%d for a 1 s"
            + " monitor interval); latency = commit durable (the commit feed's stamp) -> row seen"
            + " by the job (parallelism 1, same JVM).%n",
        warmupCommits,
        commits,
        Long.getLong("skade.bench.pauseMillis", 20),
        Long.getLong("skade.bench.pauseMillis", 20) * 5 / 2,
        slowCommits);
    System.out.printf(
        "backlog: %d commits x %d rows, then bounded jobs count them.%n",
        backlogCommits, backlogRows);

    Path warehouse = Files.createTempDirectory("skade-source-latency-bench-");
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
    List<Latency> latencies = new ArrayList<>();
    List<Throughput> throughputs = new ArrayList<>();
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of(NAMESPACE));
      latencies.add(
          SourceLatencyRun.measureEmbedded(
              "skade (commit feed)",
              catalog,
              NAMESPACE + ".skade_feed",
              warmupCommits,
              commits,
              SourceLatencyRun.skadeInProcess(properties)));
      for (Duration interval : new Duration[] {Duration.ofMillis(100), Duration.ofSeconds(1)}) {
        latencies.add(
            SourceLatencyRun.measureEmbedded(
                "IcebergSource monitor " + label(interval),
                catalog,
                NAMESPACE + ".iceberg_" + interval.toMillis() + "ms",
                warmupCommits,
                interval.toMillis() < 1000 ? commits : slowCommits,
                (env, table) -> icebergStream(env, properties, table, interval)));
      }

      String backlog = NAMESPACE + ".backlog";
      writeBacklog(catalog, backlog, backlogCommits, backlogRows);
      throughputs.add(
          count(
              "skade bounded, earliest (per commit)",
              env ->
                  BoundedCount.skadeFromEarliest(env, properties, TableIdentifier.parse(backlog))));
      throughputs.add(
          count(
              "IcebergSource bounded batch read",
              env -> icebergStream(env, properties, backlog, null)));
    } finally {
      Harness.deleteTree(warehouse);
    }
    print(latencies, throughputs, backlogCommits, backlogRows);
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

  /** Runs a bounded job into a counting map and returns its rows/s, MiniCluster start included. */
  private static Throughput count(
      String source, Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    BoundedCount.Result counted = BoundedCount.run(source, 1, reading);
    return new Throughput(source, counted.rows(), counted.seconds());
  }

  private static void print(
      List<Latency> latencies, List<Throughput> throughputs, int backlogCommits, int backlogRows) {
    Latency skade = latencies.get(0);
    System.out.println();
    String format = "%-32s %8s %7s %8s %8s %8s %11s %11s%n";
    System.out.printf(
        format,
        "source",
        "commits",
        "missed",
        "p50 ms",
        "p99 ms",
        "max ms",
        "p50 ratio",
        "p99 ratio");
    System.out.println("-".repeat(100));
    for (Latency l : latencies) {
      System.out.printf(
          format,
          l.source(),
          l.commits(),
          l.missed(),
          ms(l.millis(0.50)),
          ms(l.millis(0.99)),
          ms(l.millis(1.0)),
          fmt("%.1fx", l.millis(0.50) / skade.millis(0.50)),
          fmt("%.1fx", l.millis(0.99) / skade.millis(0.99)));
    }
    long[] appends =
        latencies.stream().flatMapToLong(l -> Arrays.stream(l.commitCallNanos())).toArray();
    System.out.printf(
        "ratio = the source's latency / skade's. missed = measured rows not seen"
            + " within %d s of the last commit. The one-row append itself took p50 %s ms, p99 %s ms"
            + " (not in the latency).%n",
        SEEN_TIMEOUT.toSeconds(),
        ms(quantile(appends, 0.50) / 1e6),
        ms(quantile(appends, 0.99) / 1e6));

    Throughput iceberg = throughputs.get(throughputs.size() - 1);
    System.out.println();
    format = "%-40s %10s %9s %12s %17s%n";
    System.out.printf(
        format,
        "backlog read (" + backlogCommits + " x " + backlogRows + " rows)",
        "rows",
        "seconds",
        "rows/s",
        "vs IcebergSource");
    System.out.println("-".repeat(92));
    for (Throughput t : throughputs) {
      System.out.printf(
          format,
          t.source(),
          t.rows(),
          fmt("%.2f", t.seconds()),
          fmt("%.0f", t.rowsPerSecond()),
          fmt("%.2fx", t.rowsPerSecond() / iceberg.rowsPerSecond()));
    }
    System.out.println("Bounded times include the job's MiniCluster start and planning.");
  }
}
