package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.sink.SkadeTableLoader;
import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.source.IcebergSource;
import org.apache.iceberg.flink.source.StreamingStartingStrategy;
import org.apache.iceberg.types.Types;

/**
 * Prints, side by side in one run, how soon a committed row reaches a Flink job through skade's
 * {@code SkadeSource} (woken by the catalog's in-process commit feed) and through Iceberg's own
 * {@code IcebergSource} in streaming mode (which polls the table every monitor interval), and how
 * fast each reads a backlog of commits as a bounded job. It asserts nothing.
 *
 * <p>Latency: for each source, a fresh append-only table (no identifier fields) and an unbounded
 * job at parallelism 1 in a local MiniCluster of this JVM. The main thread commits one-row
 * appends through {@code TableWriter}, spaced 20–50 ms apart at random (a one-row append takes
 * some 70 ms of this machine's CPU, so the writer is then nearly always busy); the commit feed stamps
 * the {@code System.nanoTime()} at which each commit became durable (Iceberg's append returns
 * some milliseconds later); the job's map notes when it sees the row. Latency = seen − durable. Probe commits (until the job emits a row)
 * and warm-up commits are not counted. Every source reads through the one catalog this JVM holds
 * ({@link SharedCatalogs}); Iceberg's through {@link SkadeTableLoader}.
 *
 * <p>Backlog: a fresh table gets the backlog commits first; then a bounded skade job from the
 * earliest snapshot and an {@code IcebergSource} bounded batch read of the same table count the
 * rows. Their times include the job's MiniCluster start and planning, as a bounded job pays them.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.commits} measured commits per
 * source [200], {@code skade.bench.slowCommits} for Iceberg's 1 s monitor interval, where each
 * row takes about half a second to surface [60], {@code skade.bench.warmupCommits} per source
 * [300: the JIT compiles a source's read path over the first hundreds of commits], {@code
 * skade.bench.backlogCommits} [200], {@code skade.bench.backlogRows} rows per
 * backlog commit [5000], {@code skade.bench.pauseMillis} the least gap between commits, the
 * most being 2.5 times it [20].
 */
public final class SourceLatencyBenchmark {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.required(2, "ts_nanos", Types.LongType.get()),
      Types.NestedField.optional(3, "payload", Types.StringType.get()));
  private static final String NAMESPACE = "bench";
  private static final Duration SEEN_TIMEOUT = Duration.ofSeconds(30);

  /** When the job saw each row id, in this JVM's nanoTime (the MiniCluster runs in process). */
  private static final Map<Long, Long> SEEN = new ConcurrentHashMap<>();
  /** Rows a bounded job counted. */
  private static final LongAdder COUNTED = new LongAdder();

  /** The stream of a table's rows that one source gives. */
  private interface Reading {
    DataStream<RowData> of(StreamExecutionEnvironment env, String table);
  }

  private record Latency(String source, int commits, int missed, long[] nanos,
      long[] appendNanos) {
    double millis(double quantile) {
      return quantile(nanos, quantile) / 1e6;
    }
  }

  private record Throughput(String source, long rows, double seconds) {
    double rowsPerSecond() {
      return rows / seconds;
    }
  }

  private SourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    // Every MiniCluster warns of its missing Hadoop config and log file; keep the table readable.
    if (System.getProperty("org.slf4j.simpleLogger.log.org.apache.flink") == null) {
      System.setProperty("org.slf4j.simpleLogger.log.org.apache.flink", "error");
    }
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 300);
    int backlogCommits = Integer.getInteger("skade.bench.backlogCommits", 200);
    int backlogRows = Integer.getInteger("skade.bench.backlogRows", 5000);
    System.out.printf("skade source latency benchmark | JVM %s | cores %d | max heap %d MiB | %s%n",
        System.getProperty("java.runtime.version"), Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() >> 20, ZonedDateTime.now());
    System.out.printf("latency: per source a fresh LOG table (id bigint, ts_nanos bigint, payload"
        + " string), %d warm-up then %d measured one-row appends %d-%d ms apart (%d for a 1 s"
        + " monitor interval); latency = commit durable (the commit feed's stamp) -> row seen"
        + " by the job (parallelism 1, same JVM).%n", warmupCommits, commits,
        Long.getLong("skade.bench.pauseMillis", 20),
        Long.getLong("skade.bench.pauseMillis", 20) * 5 / 2, slowCommits);
    System.out.printf("backlog: %d commits x %d rows, then bounded jobs count them.%n",
        backlogCommits, backlogRows);

    Path warehouse = Files.createTempDirectory("skade-source-latency-bench-");
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
    List<Latency> latencies = new ArrayList<>();
    List<Throughput> throughputs = new ArrayList<>();
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of(NAMESPACE));
      latencies.add(latency("skade (commit feed)", catalog, "skade_feed", warmupCommits, commits,
          (env, table) -> env.fromSource(SkadeSource.builder()
              .catalogProperties(properties).table(table)
              .startupMode(StartupMode.LATEST).build(),
              WatermarkStrategy.noWatermarks(), "skade")));
      for (Duration interval : new Duration[] {Duration.ofMillis(100), Duration.ofSeconds(1)}) {
        latencies.add(latency("IcebergSource monitor " + label(interval), catalog,
            "iceberg_" + interval.toMillis() + "ms", warmupCommits,
            interval.toMillis() < 1000 ? commits : slowCommits,
            (env, table) -> icebergStream(env, properties, table, interval)));
      }

      String backlog = NAMESPACE + ".backlog";
      writeBacklog(catalog, backlog, backlogCommits, backlogRows);
      throughputs.add(count("skade bounded, earliest (per commit)", env -> env.fromSource(
          SkadeSource.builder().catalogProperties(properties).table(backlog)
              .startupMode(StartupMode.EARLIEST).bounded().build(),
          WatermarkStrategy.noWatermarks(), "skade")));
      throughputs.add(count("IcebergSource bounded batch read", env -> icebergStream(env,
          properties, backlog, null)));
    } finally {
      try (Stream<Path> paths = Files.walk(warehouse)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    print(latencies, throughputs, backlogCommits, backlogRows);
  }

  /** Iceberg's source over {@code table}: streaming every {@code interval}, or bounded if null. */
  private static DataStream<RowData> icebergStream(StreamExecutionEnvironment env,
      Map<String, String> properties, String table, Duration interval) {
    IcebergSource.Builder<RowData> builder = IcebergSource.forRowData()
        .tableLoader(new SkadeTableLoader(properties, TableIdentifier.parse(table)));
    if (interval == null) {
      builder.streaming(false);
    } else {
      builder.streaming(true).monitorInterval(interval)
          .streamingStartingStrategy(StreamingStartingStrategy.INCREMENTAL_FROM_LATEST_SNAPSHOT);
    }
    return env.fromSource(builder.build(), WatermarkStrategy.noWatermarks(), "iceberg",
        InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
  }

  /**
   * Runs one source's unbounded job on a fresh table while this thread commits, and returns the
   * latencies of the measured commits.
   */
  private static Latency latency(String source, SkadeCatalog catalog, String name, int warmup,
      int commits, Reading reading) throws Exception {
    String table = NAMESPACE + "." + name;
    Table created = catalog.createTable(TableIdentifier.parse(table), SCHEMA,
        PartitionSpec.unpartitioned(), Map.of("format-version", "2"));
    TableWriter writer = new TableWriter(created);
    commit(writer, Long.MIN_VALUE); // a first snapshot, so every source starts on a non-empty table
    SEEN.clear();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    reading.of(env, table).map(new MarkSeen()).sinkTo(new DiscardingSink<>());
    long[] durable = new long[commits];
    long[] appendNanos = new long[commits];
    // The commit feed tells when each commit became durable (before append returns).
    CommitSubscription feed = catalog.subscribeCommits();
    JobClient job = env.executeAsync(source);
    try (feed) {
      // Until the job emits a row it may still be starting: probe (ids below -1,000,000).
      long probe = -1_000_000;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (SEEN.isEmpty()) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(source + ": the job emitted nothing in 60 s");
        }
        durableAt(feed, commit(writer, probe--));
        Thread.sleep(200);
      }
      for (int i = 1; i <= warmup; i++) {
        durableAt(feed, commit(writer, -i));
        pause();
      }
      for (int i = 0; i < commits; i++) {
        long started = System.nanoTime();
        long snapshotId = commit(writer, i);
        appendNanos[i] = System.nanoTime() - started;
        durable[i] = durableAt(feed, snapshotId);
        pause();
      }
      long until = System.nanoTime() + SEEN_TIMEOUT.toNanos();
      while (System.nanoTime() < until && !seenAll(commits)) {
        Thread.sleep(20);
      }
    } finally {
      job.cancel().get();
    }
    long[] nanos = new long[commits];
    int seen = 0;
    for (int i = 0; i < commits; i++) {
      Long at = SEEN.get((long) i);
      if (at != null) {
        nanos[seen++] = at - durable[i];
      }
    }
    return new Latency(source, commits, commits - seen, Arrays.copyOf(nanos, seen), appendNanos);
  }

  /** Appends one row and returns the snapshot it committed. */
  private static long commit(TableWriter writer, long id) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    row.setField("ts_nanos", System.nanoTime());
    row.setField("payload", "row-" + id);
    return writer.append(List.of(row)).snapshotId();
  }

  /**
   * The {@code System.nanoTime()} at which the commit of {@code snapshotId} became durable, as
   * the catalog's commit feed stamps it (only this thread commits, so events come in order).
   */
  private static long durableAt(CommitSubscription feed, long snapshotId)
      throws InterruptedException {
    while (true) {
      CommitEvent event = feed.poll(Duration.ofSeconds(10));
      if (event == null) {
        throw new IllegalStateException("the commit of snapshot " + snapshotId
            + " never reached the commit feed");
      }
      if (event.addedSnapshotIds().contains(snapshotId)) {
        return feed.lastDurableNanos();
      }
    }
  }

  private static boolean seenAll(int commits) {
    for (long i = commits - 1; i >= 0; i--) {
      if (!SEEN.containsKey(i)) {
        return false;
      }
    }
    return true;
  }

  /** The gap between two measured commits: {@code skade.bench.pauseMillis} up to 2.5x it. */
  private static void pause() throws InterruptedException {
    long min = Long.getLong("skade.bench.pauseMillis", 20);
    Thread.sleep(ThreadLocalRandom.current().nextLong(min, min * 5 / 2 + 1));
  }

  private static void writeBacklog(SkadeCatalog catalog, String table, int commits, int rows) {
    Table created = catalog.createTable(TableIdentifier.parse(table), SCHEMA,
        PartitionSpec.unpartitioned(), Map.of("format-version", "2"));
    TableWriter writer = new TableWriter(created);
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
    System.out.printf("backlog written: %d commits in %.1f s%n", commits,
        (System.nanoTime() - started) / 1e9);
  }

  /** Runs a bounded job into a counting map and returns its rows/s, MiniCluster start included. */
  private static Throughput count(String source,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    COUNTED.reset();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    reading.apply(env).map(new Count()).sinkTo(new DiscardingSink<>());
    long started = System.nanoTime();
    env.execute(source);
    return new Throughput(source, COUNTED.sum(), (System.nanoTime() - started) / 1e9);
  }

  /** Notes when the job first sees each row id. */
  private static final class MarkSeen implements MapFunction<RowData, Long> {
    @Override
    public Long map(RowData row) {
      long now = System.nanoTime();
      long id = row.getLong(0);
      SEEN.putIfAbsent(id, now);
      return id;
    }
  }

  private static final class Count implements MapFunction<RowData, Long> {
    @Override
    public Long map(RowData row) {
      COUNTED.increment();
      return row.getLong(0);
    }
  }

  private static long quantile(long[] values, double quantile) {
    if (values.length == 0) {
      return 0;
    }
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(quantile * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)];
  }

  private static String label(Duration interval) {
    return interval.toMillis() % 1000 == 0 ? interval.toSeconds() + " s"
        : interval.toMillis() + " ms";
  }

  private static void print(List<Latency> latencies, List<Throughput> throughputs,
      int backlogCommits, int backlogRows) {
    Latency skade = latencies.get(0);
    System.out.println();
    String format = "%-32s %8s %7s %8s %8s %8s %11s %11s%n";
    System.out.printf(format, "source", "commits", "missed", "p50 ms", "p99 ms", "max ms",
        "p50 ratio", "p99 ratio");
    System.out.println("-".repeat(100));
    for (Latency l : latencies) {
      System.out.printf(format, l.source(), l.commits(), l.missed(), ms(l.millis(0.50)),
          ms(l.millis(0.99)), ms(l.millis(1.0)),
          fmt("%.1fx", l.millis(0.50) / skade.millis(0.50)),
          fmt("%.1fx", l.millis(0.99) / skade.millis(0.99)));
    }
    long[] appends = latencies.stream().flatMapToLong(l -> Arrays.stream(l.appendNanos()))
        .toArray();
    System.out.printf("ratio = the source's latency / skade's. missed = measured rows not seen"
        + " within %d s of the last commit. The one-row append itself took p50 %s ms, p99 %s ms"
        + " (not in the latency).%n", SEEN_TIMEOUT.toSeconds(),
        ms(quantile(appends, 0.50) / 1e6), ms(quantile(appends, 0.99) / 1e6));

    Throughput iceberg = throughputs.get(throughputs.size() - 1);
    System.out.println();
    format = "%-40s %10s %9s %12s %17s%n";
    System.out.printf(format, "backlog read (" + backlogCommits + " x " + backlogRows + " rows)",
        "rows", "seconds", "rows/s", "vs IcebergSource");
    System.out.println("-".repeat(92));
    for (Throughput t : throughputs) {
      System.out.printf(format, t.source(), t.rows(), fmt("%.2f", t.seconds()),
          fmt("%.0f", t.rowsPerSecond()),
          fmt("%.2fx", t.rowsPerSecond() / iceberg.rowsPerSecond()));
    }
    System.out.println("Bounded times include the job's MiniCluster start and planning.");
  }

  private static String ms(double millis) {
    return fmt(millis < 10 ? "%.2f" : "%.1f", millis);
  }

  private static String fmt(String format, double value) {
    return String.format(Locale.ROOT, format, value);
  }
}
