package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.source.database.Consistency;
import io.skade.source.database.DatabaseChange;
import io.skade.source.database.DatabaseChangeDeserializer;
import io.skade.source.database.SkadeDatabaseSource;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;

/**
 * Prints, side by side in one run, what {@code SkadeDatabaseSource}'s consistent mode (every atomic
 * commit emitted whole before the next, across tables) costs beside its per-table mode (each
 * table's commits in order, tables independent), on one workload of three tables where a third of
 * the commits change all three atomically. It asserts nothing.
 *
 * <p>Throughput: a backlog of {@code skade.bench.commits} commits [300] of {@code skade.bench.rows}
 * rows per table changed [1000] is read from the log's start by an unbounded job at parallelism 2
 * in a MiniCluster of this JVM, until every row was seen; time from the first row seen to the last,
 * {@code skade.bench.runs} runs per mode [3], in turns, median.
 *
 * <p>Latency: an unbounded job of each mode at parallelism 2 from the log's end; the main thread
 * commits one row per table changed, 20–50 ms apart at random ({@code skade.bench.latencyCommits}
 * measured [200] after 50 of warm-up), and the job's map notes when it sees a commit's first row.
 * Latency = seen − the writer's commit returned (both {@code System.nanoTime()} of this JVM).
 * Checkpoints every second in every job: in both modes a checkpoint waits for the readers to reach
 * a commit boundary.
 */
public final class DatabaseSourceBenchmark {
  private static final int COMMITS = Integer.getInteger("skade.bench.commits", 300);
  private static final int ROWS = Integer.getInteger("skade.bench.rows", 1000);
  private static final int RUNS = Integer.getInteger("skade.bench.runs", 5);
  private static final int LATENCY_COMMITS = Integer.getInteger("skade.bench.latencyCommits", 200);
  private static final int WARMUP_COMMITS = 50;
  private static final int PARALLELISM = 2;
  private static final Schema SCHEMA =
      new Schema(
          NestedField.optional(1, "id", LongType.get()),
          NestedField.optional(2, "v", StringType.get()));

  /** Rows seen by the running job, and when the first and the last were. */
  private static final AtomicLong SEEN = new AtomicLong();

  private static final AtomicLong FIRST_NANOS = new AtomicLong();
  private static final AtomicLong LAST_NANOS = new AtomicLong();

  /** Per commit number, when the job saw its first row. */
  private static final Map<Long, Long> SEEN_AT = new ConcurrentHashMap<>();

  private DatabaseSourceBenchmark() {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs("org.apache.flink.runtime");
    Harness.printHeader("DatabaseSourceBenchmark");
    System.out.printf(
        "load average %s | 3 tables, a third of the commits atomic over all three; backlog %d"
            + " commits of %,d rows per table changed; latency %d commits; parallelism %d%n",
        Harness.loadAverage(), COMMITS, ROWS, LATENCY_COMMITS, PARALLELISM);
    Path dir = Files.createTempDirectory("skade-dbsource-bench");
    Map<String, String> properties = Map.of("warehouse", dir.resolve("warehouse").toString());
    MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(PARALLELISM)
                .build());
    try (SharedCatalogs.Handle catalog = SharedCatalogs.acquire(properties)) {
      cluster.start();
      SkadeCatalog skade = catalog.catalog();
      skade.createNamespace(Namespace.of("bench"));
      List<Table> tables = new ArrayList<>();
      for (int t = 0; t < 3; t++) {
        tables.add(skade.createTable(TableIdentifier.of("bench", "t" + t), SCHEMA));
      }
      Random random = new Random(42);
      long rows = 0;
      for (int c = 0; c < COMMITS; c++) {
        rows += commit(skade, random, c, ROWS);
      }
      long backlogEnd = skade.commitSeq();
      System.out.printf("backlog: %,d rows in %,d log commits%n", rows, backlogEnd);

      double[][] rates = new double[2][RUNS];
      for (int run = -1; run < RUNS; run++) { // run -1: warm-up
        for (Consistency mode :
            run % 2 == 0
                ? List.of(Consistency.TABLE, Consistency.COMMIT)
                : List.of(Consistency.COMMIT, Consistency.TABLE)) {
          double seconds = readBacklog(cluster, properties, mode, rows);
          if (run >= 0) {
            rates[mode.ordinal()][run] = rows / seconds;
          }
          System.out.printf(
              "  %s %-7s %6.2f s %,12.0f rows/s%n",
              run < 0 ? "warm-up" : "run " + (run + 1), mode.value(), seconds, rows / seconds);
        }
      }
      double commitRate = Harness.median(rates[Consistency.COMMIT.ordinal()]);
      double tableRate = Harness.median(rates[Consistency.TABLE.ordinal()]);

      long[][] latencies = new long[2][];
      for (Consistency mode : List.of(Consistency.TABLE, Consistency.COMMIT)) {
        latencies[mode.ordinal()] = latencies(cluster, properties, skade, mode, random);
      }
      System.out.println();
      System.out.printf(
          "%-30s %14s %10s %10s %10s%n",
          "mode (medians)", "backlog rows/s", "p50 ms", "p90 ms", "p99 ms");
      for (Consistency mode : List.of(Consistency.TABLE, Consistency.COMMIT)) {
        long[] ms = latencies[mode.ordinal()];
        System.out.printf(
            "%-30s %,14.0f %10.1f %10.1f %10.1f%n",
            mode == Consistency.COMMIT ? "consistent (commit)" : "per table (table)",
            mode == Consistency.COMMIT ? commitRate : tableRate,
            quantile(ms, 0.5) / 1e6,
            quantile(ms, 0.9) / 1e6,
            quantile(ms, 0.99) / 1e6);
      }
      System.out.printf(
          "consistent / per table: backlog throughput %.2fx, commit → row p50 %.2fx%n",
          commitRate / tableRate,
          quantile(latencies[Consistency.COMMIT.ordinal()], 0.5)
              / quantile(latencies[Consistency.TABLE.ordinal()], 0.5));
    } finally {
      cluster.close();
      Harness.deleteTree(dir);
    }
  }

  /**
   * Commit number {@code c}: {@code rows} rows appended to all three tables in one atomic commit (a
   * third of the time), else to one of them; each row's id is {@code c}. Returns the rows.
   */
  private static int commit(SkadeCatalog skade, Random random, long c, int rows) {
    List<Record> records = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      GenericRecord row = GenericRecord.create(SCHEMA);
      row.setField("id", c);
      row.setField("v", "row " + i);
      records.add(row);
    }
    if (random.nextInt(3) > 0) {
      new TableWriter(skade.loadTable(TableIdentifier.of("bench", "t" + random.nextInt(3))))
          .append(records);
      return rows;
    }
    List<TableCommit> commits = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      TableIdentifier name = TableIdentifier.of("bench", "t" + t);
      Table table = skade.loadTable(name);
      Transaction transaction = table.newTransaction();
      org.apache.iceberg.AppendFiles append = transaction.newFastAppend();
      new TableWriter(table).writeDataFiles(records).forEach(append::appendFile);
      append.commit();
      org.apache.iceberg.BaseTransaction staged = (org.apache.iceberg.BaseTransaction) transaction;
      commits.add(TableCommit.create(name, staged.startMetadata(), staged.currentMetadata()));
    }
    skade.commitTransaction(commits);
    return 3 * rows;
  }

  /** Reads the backlog from the log's start; the seconds from the first row seen to the last. */
  private static double readBacklog(
      MiniCluster cluster, Map<String, String> properties, Consistency mode, long rows)
      throws Exception {
    SEEN.set(0);
    FIRST_NANOS.set(0);
    JobID job = submit(cluster, properties, mode, true);
    try {
      while (SEEN.get() < rows) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
      }
    } finally {
      cancel(cluster, job);
    }
    return (LAST_NANOS.get() - FIRST_NANOS.get()) / 1e9;
  }

  /** Commit → first row seen, in nanoseconds, of the measured commits. */
  private static long[] latencies(
      MiniCluster cluster,
      Map<String, String> properties,
      SkadeCatalog skade,
      Consistency mode,
      Random random)
      throws Exception {
    SEEN_AT.clear();
    JobID job = submit(cluster, properties, mode, false);
    long base = 1_000_000L * (mode.ordinal() + 1);
    long[] latencies = new long[LATENCY_COMMITS];
    try {
      // The first commits wait for the job to start: one until a row comes, then the warm-up.
      long probe = base - 1;
      while (!SEEN_AT.containsKey(probe)) {
        commit(skade, random, probe, 1);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (!SEEN_AT.containsKey(probe) && System.nanoTime() < until) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
      }
      for (int c = 0; c < WARMUP_COMMITS + LATENCY_COMMITS; c++) {
        long id = base + c;
        commit(skade, random, id, 1);
        long committed = System.nanoTime();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20 + random.nextInt(31)));
        while (!SEEN_AT.containsKey(id)) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        if (c >= WARMUP_COMMITS) {
          latencies[c - WARMUP_COMMITS] = SEEN_AT.get(id) - committed;
        }
      }
    } finally {
      cancel(cluster, job);
    }
    Arrays.sort(latencies);
    return latencies;
  }

  private static JobID submit(
      MiniCluster cluster, Map<String, String> properties, Consistency mode, boolean earliest)
      throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(PARALLELISM);
    env.enableCheckpointing(1000);
    var builder =
        SkadeDatabaseSource.builder()
            .catalogProperties(properties)
            .namespace("bench")
            .consistency(mode)
            .deserializer(new Ids());
    if (earliest) {
      builder.startFromEarliest();
    }
    env.fromSource(builder.build(), WatermarkStrategy.noWatermarks(), "bench")
        .map(new Seen())
        .sinkTo(new DiscardingSink<>());
    return cluster.submitJob(env.getStreamGraph().getJobGraph()).get().getJobID();
  }

  private static void cancel(MiniCluster cluster, JobID job) throws Exception {
    cluster.cancelJob(job).get(60, TimeUnit.SECONDS);
    cluster.requestJobResult(job).get(60, TimeUnit.SECONDS);
  }

  private static double quantile(long[] sorted, double q) {
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(q * sorted.length))];
  }

  /** Each change as its row's id: the number of the commit that wrote it. */
  private static final class Ids implements DatabaseChangeDeserializer<Long> {
    @Override
    public void deserialize(DatabaseChange change, Collector<Long> out) {
      out.collect(change.row().getLong(0));
    }

    @Override
    public TypeInformation<Long> getProducedType() {
      return Types.LONG;
    }
  }

  /** Notes each row: the count, the first and last time, each commit's first time. */
  private static final class Seen implements MapFunction<Long, Long> {
    @Override
    public Long map(Long id) {
      long now = System.nanoTime();
      if (SEEN.getAndIncrement() == 0) {
        FIRST_NANOS.set(now);
      }
      LAST_NANOS.set(now);
      SEEN_AT.putIfAbsent(id, now);
      return id;
    }
  }
}
