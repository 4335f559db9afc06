package io.skade.benchmarks;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.source.SkadeSource;
import io.skade.source.StageTrace;
import io.skade.source.StartupMode;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
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
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.source.IcebergSource;
import org.apache.iceberg.flink.source.StreamingStartingStrategy;
import org.apache.iceberg.types.Types;

/**
 * One source's commit → row latency, as the source-latency benchmarks measure it: an unbounded job
 * (parallelism 1, a local MiniCluster of this JVM) reads a table while this thread commits one-row
 * appends to it through {@code TableWriter}, spaced {@code skade.bench.pauseMillis} to 2.5 times it
 * apart; the job's last step before its sink notes when it sees each row.
 *
 * <p>Three moments of each commit can start the clock: when the catalog's committer stamped it
 * ({@code CommitEvent.tsMicros}, the wall clock at the start of its group, before the fsync;
 * whichever process owns the catalog, the same machine's clock), when a commit feed subscriber of
 * this JVM heard of it (the moment its batch became durable when the catalog is embedded here, the
 * moment this JVM's long-poll was answered when a skade server owns it), and when the commit call
 * returned (the commit acknowledged to the committer). Probe commits (until the job emits a row)
 * and warm-up commits are not counted.
 */
final class SourceLatencyRun {
  /** Every latency table's schema: an append-only table, no identifier fields. */
  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.required(2, "ts_nanos", Types.LongType.get()),
          Types.NestedField.optional(3, "payload", Types.StringType.get()));

  /** How long after the last measured commit its rows may still come. */
  static final Duration SEEN_TIMEOUT = Duration.ofSeconds(30);

  /** Warm-up goes on in blocks of this many commits until the JIT compiler is quiet. */
  private static final int WARMUP_BLOCK = 100;

  /**
   * The JIT is quiet when its compiler threads compiled for less than this share of a block's wall
   * time (summed over its threads): code a commit runs once reaches C2's thresholds only after
   * thousands of commits, and until then the compiler threads take CPU that a 2-core machine's
   * source path is waiting for.
   */
  static final double JIT_QUIET = 0.03;

  /** The most warm-up commits, the fixed ones included: {@code skade.bench.maxWarmupCommits}. */
  private static final int MAX_WARMUP = Integer.getInteger("skade.bench.maxWarmupCommits", 3000);

  /** When the job saw each row id, in this JVM's nanoTime (the MiniCluster runs in process). */
  private static final Map<Long, Long> SEEN = new ConcurrentHashMap<>();

  /** The stream of a table's rows that one source gives. */
  interface Reading {
    DataStream<RowData> of(StreamExecutionEnvironment env, String table);
  }

  /**
   * The figures of one source, over the measured rows it saw: per row, nanoseconds after the
   * catalog's committer stamped its commit.
   *
   * @param row when the job saw the row
   * @param feed when this JVM's feed subscriber heard of the commit
   * @param ack when the commit call returned
   * @param commitCallNanos per measured commit, how long the commit call took
   * @param stages per stage of skade's source ({@link StageTrace}), in order, after when this JVM's
   *     feed subscriber heard of the commit and ending with the row emitted, nanoseconds after the
   *     commit's stamp of each measured row that was marked there (empty for a source that marks
   *     none)
   * @param warmupCommits the warm-up commits made before the measured ones
   * @param jitShare this JVM's JIT compilation time over the measured commits, a share of their
   *     wall time
   */
  record Latency(
      String source,
      int commits,
      int missed,
      long[] row,
      long[] feed,
      long[] ack,
      long[] commitCallNanos,
      List<StageTimes> stages,
      int warmupCommits,
      double jitShare) {

    /** Feed heard → row, milliseconds at {@code quantile} (1.0 = the max). */
    double millis(double quantile) {
      return millis(row, feed, quantile);
    }

    /** Commit stamped by the catalog's committer → row, milliseconds. */
    double committedMillis(double quantile) {
      return millis(row, null, quantile);
    }

    /** Commit call returned → row, milliseconds (negative: the row came first). */
    double ackMillis(double quantile) {
      return millis(row, ack, quantile);
    }

    /** Commit stamped → this JVM's feed subscriber heard of it, milliseconds. */
    double feedAfterCommittedMillis(double quantile) {
      return millis(feed, null, quantile);
    }

    /** Commit stamped → the commit call returned, milliseconds. */
    double ackAfterCommittedMillis(double quantile) {
      return millis(ack, null, quantile);
    }

    private static double millis(long[] to, long[] from, double quantile) {
      long[] gaps = to.clone();
      for (int i = 0; from != null && i < gaps.length; i++) {
        gaps[i] -= from[i];
      }
      return quantile(gaps, quantile) / 1e6;
    }
  }

  /**
   * One stage's times of the measured rows that reached it, nanoseconds after each one's commit
   * stamp, and, where the row also has the stage before, the time from that stage to this one.
   */
  record StageTimes(String stage, long[] sinceCommit, long[] sincePrevious) {}

  /**
   * One commit's moments: its {@code commit_seq}, the committer's stamp in microseconds since the
   * epoch and in this JVM's nanoTime, and when this JVM's feed subscriber heard of it.
   */
  private record Stamps(long seq, long committedMicros, long committed, long feed) {}

  private SourceLatencyRun() {}

  /**
   * Runs {@code reading}'s unbounded job on {@code table} (named {@code name} in its catalog) while
   * this thread commits to it through {@code writer}, and returns the latencies of the measured
   * commits. {@code stamps} is a subscription to the table's catalog taken by the caller; only this
   * thread commits to that catalog while it runs, so its events come in the order of the commits.
   * It is closed here.
   */
  static Latency measure(
      String source,
      TableWriter writer,
      String name,
      CommitSubscription stamps,
      int warmup,
      int commits,
      Reading reading)
      throws Exception {
    try (stamps) {
      commit(writer, Long.MIN_VALUE); // a first snapshot: every source starts on a non-empty table
      stampOf(stamps, Long.MIN_VALUE, null);
      SEEN.clear();
      clearStageTrace();
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(1);
      reading.of(env, name).map(new MarkSeen()).sinkTo(new DiscardingSink<>());
      Stamps[] stamped = new Stamps[commits];
      long[] acknowledged = new long[commits];
      long[] callNanos = new long[commits];
      int warmupCommits;
      double jitShare;
      JobClient job = env.executeAsync(source);
      try {
        // Until the job emits a row it may still be starting: probe (ids below -1,000,000).
        long probe = -1_000_000;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (SEEN.isEmpty()) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(source + ": the job emitted nothing in 60 s");
          }
          stampOf(stamps, probe, commit(writer, probe--));
          Thread.sleep(200);
        }
        // At least `warmup` commits, then blocks until one in which the JIT is quiet.
        int warmed = 0;
        while (warmed < warmup) {
          warm(writer, stamps, ++warmed);
        }
        while (warmed < MAX_WARMUP) {
          Jit block = Jit.start();
          for (int i = 0; i < WARMUP_BLOCK && warmed < MAX_WARMUP; i++) {
            warm(writer, stamps, ++warmed);
          }
          if (block.share() <= JIT_QUIET) {
            break;
          }
        }
        warmupCommits = warmed;
        Jit measured = Jit.start();
        for (int i = 0; i < commits; i++) {
          long started = System.nanoTime();
          long snapshotId = commit(writer, i);
          acknowledged[i] = System.nanoTime();
          callNanos[i] = acknowledged[i] - started;
          stamped[i] = stampOf(stamps, i, snapshotId);
          pause();
        }
        jitShare = measured.share();
        long until = System.nanoTime() + SEEN_TIMEOUT.toNanos();
        while (System.nanoTime() < until && !seenAll(commits)) {
          Thread.sleep(20);
        }
      } finally {
        job.cancel().get();
      }
      long[] row = new long[commits];
      long[] feed = new long[commits];
      long[] ack = new long[commits];
      List<Stamps> seenStamps = new ArrayList<>();
      List<Long> seenRows = new ArrayList<>();
      int seen = 0;
      for (int i = 0; i < commits; i++) {
        Long at = SEEN.get((long) i);
        if (at != null) {
          long committed = stamped[i].committed();
          row[seen] = at - committed;
          feed[seen] = stamped[i].feed() - committed;
          ack[seen++] = acknowledged[i] - committed;
          seenStamps.add(stamped[i]);
          seenRows.add(at - committed);
        }
      }
      return new Latency(
          source,
          commits,
          commits - seen,
          Arrays.copyOf(row, seen),
          Arrays.copyOf(feed, seen),
          Arrays.copyOf(ack, seen),
          callNanos,
          stages(seenStamps, seenRows),
          warmupCommits,
          jitShare);
    }
  }

  /**
   * Turns the stage trace on for every source this JVM (and any JVM given {@link
   * #stageTraceOption}) runs: called first thing, before a source class is loaded.
   */
  static void traceStages() throws IOException {
    if (System.getProperty(StageTrace.PROPERTY) == null) {
      Path dir = Files.createTempDirectory("skade-stage-trace-");
      dir.toFile().deleteOnExit();
      System.setProperty(StageTrace.PROPERTY, dir.toString());
    }
  }

  /** The JVM option that has another process of this machine mark into this JVM's stage trace. */
  static String stageTraceOption() {
    return "-D" + StageTrace.PROPERTY + "=" + System.getProperty(StageTrace.PROPERTY);
  }

  /** Drops every mark so far, of this JVM and any other marking into its directory. */
  static void clearStageTrace() throws IOException {
    String dir = System.getProperty(StageTrace.PROPERTY);
    if (dir == null) {
      return;
    }
    try (Stream<Path> files = Files.list(Path.of(dir))) {
      for (Path file : files.toList()) {
        Files.newOutputStream(file, StandardOpenOption.TRUNCATE_EXISTING).close();
      }
    }
  }

  /**
   * The stage times of the measured rows seen ({@code stamps}, with each row's nanoseconds after
   * its stamp in {@code rows}): when the benchmark's feed heard of the commit, the source's marks,
   * then the row emitted; none if it marked none.
   */
  private static List<StageTimes> stages(List<Stamps> stamps, List<Long> rows) throws IOException {
    return stages(
        stamps.stream().mapToLong(Stamps::seq).toArray(),
        stamps.stream().mapToLong(Stamps::committedMicros).toArray(),
        stamps.stream().mapToLong(s -> s.feed() - s.committed()).toArray(),
        rows.stream().mapToLong(Long::longValue).toArray());
  }

  /**
   * The stage times of measured rows: per row, its commit's {@code commit_seq} ({@code seqs}) and
   * stamp in microseconds since the epoch ({@code committedMicros}), when the benchmark's feed
   * heard of it ({@code heard}, nanoseconds after the stamp; null when not known), and the row
   * emitted ({@code rows}, the same); between them the source's marks. None if it marked none.
   */
  static List<StageTimes> stages(long[] seqs, long[] committedMicros, long[] heard, long[] rows)
      throws IOException {
    String dir = System.getProperty(StageTrace.PROPERTY);
    Map<Long, Map<StageTrace.Stage, Long>> marks =
        dir == null ? Map.of() : StageTrace.read(Path.of(dir));
    if (Arrays.stream(seqs).noneMatch(marks::containsKey)) {
      return List.of();
    }
    List<String> names = new ArrayList<>();
    List<long[]> times = new ArrayList<>(); // per stage, per row; -1 where not marked
    if (heard != null) {
      names.add("feed (bench)");
      times.add(heard);
    }
    for (StageTrace.Stage stage : StageTrace.Stage.values()) {
      long[] at = new long[seqs.length];
      for (int i = 0; i < at.length; i++) {
        Long micros = marks.getOrDefault(seqs[i], Map.of()).get(stage);
        at[i] = micros == null ? -1 : (micros - committedMicros[i]) * 1_000;
      }
      names.add(stage.name().toLowerCase(Locale.ROOT).replace('_', ' '));
      times.add(at);
    }
    names.add("row emitted");
    times.add(rows);
    List<StageTimes> out = new ArrayList<>();
    for (int s = 0; s < names.size(); s++) {
      long[] at = times.get(s);
      long[] previous = s == 0 ? null : times.get(s - 1);
      out.add(
          new StageTimes(
              names.get(s),
              Arrays.stream(at).filter(t -> t >= 0).toArray(),
              previous == null
                  ? Arrays.stream(at).filter(t -> t >= 0).toArray()
                  : IntStream.range(0, at.length)
                      .filter(i -> at[i] >= 0 && previous[i] >= 0)
                      .mapToLong(i -> at[i] - previous[i])
                      .toArray()));
    }
    return out;
  }

  /**
   * {@link #measure} on a fresh table {@code name} of {@code catalog}, embedded in this JVM: its
   * commit feed tells when each commit became durable (before the append returns).
   */
  static Latency measureEmbedded(
      String source, SkadeCatalog catalog, String name, int warmup, int commits, Reading reading)
      throws Exception {
    TableWriter writer = new TableWriter(createTable(catalog, name));
    return measure(source, writer, name, catalog.subscribeCommits(), warmup, commits, reading);
  }

  /** A fresh table {@code name} of {@code catalog}: {@link #SCHEMA}, unpartitioned, format v2. */
  static Table createTable(Catalog catalog, String name) {
    return catalog.createTable(
        TableIdentifier.parse(name),
        SCHEMA,
        PartitionSpec.unpartitioned(),
        Map.of("format-version", "2"));
  }

  /**
   * skade's source from the latest snapshot, on a catalog embedded in this JVM (of {@code
   * properties}): its enumerator is woken by the in-process commit feed.
   */
  static Reading skadeInProcess(Map<String, String> properties) {
    return (env, table) ->
        env.fromSource(
            SkadeSource.builder()
                .catalogProperties(properties)
                .table(table)
                .startupMode(StartupMode.LATEST)
                .build(),
            WatermarkStrategy.noWatermarks(),
            "skade");
  }

  /** Warm-up commit {@code n}: commits row {@code -n}, waits for its stamp, pauses. */
  private static void warm(TableWriter writer, CommitSubscription stamps, int n)
      throws InterruptedException {
    stampOf(stamps, -n, commit(writer, -n));
    pause();
  }

  /** This JVM's JIT compilation since a moment, as a share of the wall time since. */
  private record Jit(long compileMillis, long startNanos) {
    private static final CompilationMXBean COMPILER = ManagementFactory.getCompilationMXBean();

    static Jit start() {
      return new Jit(COMPILER.getTotalCompilationTime(), System.nanoTime());
    }

    double share() {
      double wallMillis = (System.nanoTime() - startNanos) / 1e6;
      return (COMPILER.getTotalCompilationTime() - compileMillis) / wallMillis;
    }
  }

  /** Appends one row and returns the snapshot it committed. */
  static long commit(TableWriter writer, long id) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    row.setField("ts_nanos", System.nanoTime());
    row.setField("payload", "row-" + id);
    return writer.append(List.of(row)).snapshotId();
  }

  /**
   * When the catalog's committer stamped the commit of {@code snapshotId} (any snapshot when null:
   * the table's first) and when {@code feed} heard of it, for the commit of row {@code id}.
   */
  private static Stamps stampOf(CommitSubscription feed, long id, Long snapshotId)
      throws InterruptedException {
    while (true) {
      CommitEvent event = feed.poll(Duration.ofSeconds(10));
      if (event == null) {
        throw new IllegalStateException(
            "the commit of row "
                + id
                + " (snapshot "
                + snapshotId
                + ") never reached the commit feed");
      }
      if (snapshotId == null
          ? !event.addedSnapshotIds().isEmpty()
          : event.addedSnapshotIds().contains(snapshotId)) {
        // The stamp is wall-clock microseconds, maybe of another process: brought onto this
        // JVM's nanoTime here, where both clocks are read together.
        long now = System.nanoTime();
        Instant wall = Instant.now();
        long ago = (wall.getEpochSecond() * 1_000_000L + wall.getNano() / 1_000) - event.tsMicros();
        return new Stamps(
            event.commitSeq(), event.tsMicros(), now - ago * 1_000, feed.lastDurableNanos());
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
  static void pause() throws InterruptedException {
    long min = pauseMillis();
    Thread.sleep(ThreadLocalRandom.current().nextLong(min, min * 5 / 2 + 1));
  }

  /** The least gap between two commits, {@code skade.bench.pauseMillis} [20]. */
  static long pauseMillis() {
    return Long.getLong("skade.bench.pauseMillis", 20);
  }

  /**
   * Iceberg's source over {@code loader}'s table: streaming every {@code interval}, or bounded if
   * null.
   */
  static DataStream<RowData> icebergStream(
      StreamExecutionEnvironment env, TableLoader loader, Duration interval) {
    IcebergSource.Builder<RowData> builder = IcebergSource.forRowData().tableLoader(loader);
    if (interval == null) {
      builder.streaming(false);
    } else {
      builder
          .streaming(true)
          .monitorInterval(interval)
          .streamingStartingStrategy(StreamingStartingStrategy.INCREMENTAL_FROM_LATEST_SNAPSHOT);
    }
    return env.fromSource(
        builder.build(),
        WatermarkStrategy.noWatermarks(),
        "iceberg",
        InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
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

  /**
   * Prints {@code latency}'s stage breakdown under {@code title}: per stage, p50 and p99 after the
   * commit's stamp and after the stage before; nothing for a source that marks no stages.
   */
  static void printStages(String title, Latency latency) {
    printStages(title, latency.stages());
  }

  /** As above, of {@code stages}. */
  static void printStages(String title, List<StageTimes> stages) {
    if (stages.isEmpty()) {
      return;
    }
    System.out.println();
    System.out.println(
        "stages of "
            + title
            + ", ms after the committer's stamp and after the stage before (each over the"
            + " measured rows marked there: a window of several commits marks its last; feed"
            + " (bench) = when the benchmark's own feed subscriber heard of the commit: when it was"
            + " durable if the catalog is embedded in this JVM):");
    String format = "  %-20s %8s %8s %12s %12s %6s%n";
    System.out.printf(format, "stage", "p50", "p99", "step p50", "step p99", "rows");
    for (StageTimes stage : stages) {
      System.out.printf(
          format,
          stage.stage(),
          ms(quantile(stage.sinceCommit(), 0.50) / 1e6),
          ms(quantile(stage.sinceCommit(), 0.99) / 1e6),
          ms(quantile(stage.sincePrevious(), 0.50) / 1e6),
          ms(quantile(stage.sincePrevious(), 0.99) / 1e6),
          stage.sinceCommit().length);
    }
  }

  /** Nearest-rank quantile of {@code values}; 0 when there are none. */
  static long quantile(long[] values, double quantile) {
    if (values.length == 0) {
      return 0;
    }
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(quantile * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)];
  }

  /** {@code 1 s}, {@code 100 ms}. */
  static String label(Duration interval) {
    return interval.toMillis() % 1000 == 0
        ? interval.toSeconds() + " s"
        : interval.toMillis() + " ms";
  }

  /** Milliseconds, two decimals below 10. */
  static String ms(double millis) {
    return fmt(Math.abs(millis) < 10 ? "%.2f" : "%.1f", millis);
  }

  static String fmt(String format, double value) {
    return String.format(Locale.ROOT, format, value);
  }
}
