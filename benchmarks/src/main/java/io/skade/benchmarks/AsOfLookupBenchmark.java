package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.runtime.typeutils.ExternalTypeInfo;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Lookups as of each probe's event time, side by side in one run: skade's lookup join as of a time
 * ({@code JOIN dim FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id AND d.as_of = p.et}) beside
 * Flink's event-time temporal join over the same table's changelog as a versioned table ({@code
 * JOIN dim_versions FOR SYSTEM_TIME AS OF p.rt AS d ON p.k = d.id}, a bounded read of every change
 * with {@code commit_time} as its time), both LEFT joins of the same probes into a counting sink.
 *
 * <p>The table {@code (id BIGINT PRIMARY KEY, name STRING, score INT)} gets {@code keys} rows, then
 * {@code commits} commits that each upsert {@code upserted} random keys (equality deletes and new
 * rows: merge-on-read). The probes are {@code probes} rows in event-time order (the temporal join
 * needs its probes' watermark), their times spread evenly over the history from its first commit to
 * its last, their keys random in {@code [0, keys)}; one source task, the joins at {@code
 * parallelism} (2). Per join and run: probes/s (probes over the job's time from submission to end:
 * planning, deployment, and for the temporal join reading the whole changelog into state, are part
 * of what it costs), the probes that found a row (equal for both: the same answers), and the join
 * operator's state, the largest over the run's checkpoints (every second, operators unchained so
 * the join's state is its own). For comparison, skade's lookup join of now over the same table and
 * probes ({@code ON p.k = d.id}): what merge-on-read costs a probe, as of a time or not. Medians of
 * {@code runs} (3) runs each, in alternating order. Asserts nothing.
 *
 * <p>System properties: {@code skade.bench.asof.keys} (100000), {@code skade.bench.asof.commits}
 * (20), {@code skade.bench.asof.upserted} (keys / 5), {@code skade.bench.asof.joins}
 * (skade,temporal,now: which to run; the summary needs all three), {@code skade.bench.asof.probes}
 * (1000000), {@code skade.bench.asof.runs} (3), {@code skade.bench.asof.parallelism} (2).
 */
public final class AsOfLookupBenchmark {
  private static final int KEYS = Integer.getInteger("skade.bench.asof.keys", 100_000);
  private static final int COMMITS = Integer.getInteger("skade.bench.asof.commits", 20);
  private static final int UPSERTED = Integer.getInteger("skade.bench.asof.upserted", KEYS / 5);
  private static final long PROBES = Long.getLong("skade.bench.asof.probes", 1_000_000);
  private static final int RUNS = Integer.getInteger("skade.bench.asof.runs", 3);
  private static final int PARALLELISM = Integer.getInteger("skade.bench.asof.parallelism", 2);
  private static final List<String> JOINS =
      List.of(System.getProperty("skade.bench.asof.joins", "skade,temporal,now").split(","));
  private static final TableIdentifier DIM = TableIdentifier.of("bench", "dim");

  private static final LongAdder ROWS = new LongAdder();
  private static final LongAdder MATCHED = new LongAdder();

  private AsOfLookupBenchmark() {}

  private record Run(double seconds, long rows, long matched, long joinStateBytes) {
    double probesPerSecond() {
      return rows / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    // a checkpoint triggered as a bounded job's tasks finish is declined, and logged with its trace
    Harness.quietLogs("org.apache.flink.runtime");
    Harness.printHeader("AsOfLookupBenchmark");
    System.out.printf(
        "load average %s | %,d keys, %d upsert commits of %,d keys, %,d probes, parallelism %d%n",
        Harness.loadAverage(), KEYS, COMMITS, UPSERTED, PROBES, PARALLELISM);
    Path dir = Files.createTempDirectory("skade-asof-bench");
    Path warehouse = dir.resolve("warehouse");
    MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(PARALLELISM + 1)
                .build());
    try (SharedCatalogs.Handle catalog =
        SharedCatalogs.acquire(Map.of("warehouse", warehouse.toString()))) {
      cluster.start();
      long[] history = writeHistory(catalog.catalog());
      System.out.printf(
          "history: %d snapshots over %.1f s%n", COMMITS + 1, (history[1] - history[0]) / 1e3);
      List<Run> skade = new ArrayList<>();
      List<Run> temporal = new ArrayList<>();
      List<Run> now = new ArrayList<>();
      for (int run = 0; run < RUNS; run++) {
        List<String> joins =
            run % 2 == 0
                ? List.of("skade", "temporal", "now")
                : List.of("now", "temporal", "skade");
        for (String join : joins) {
          if (!JOINS.contains(join)) {
            continue;
          }
          Run result = run(cluster, warehouse, dir.resolve("checkpoints"), history, join);
          System.out.printf(
              "  run %d %-8s %6.2f s  %,10.0f probes/s  %,d rows, %,d matched, join state %,d"
                  + " bytes%n",
              run + 1,
              join,
              result.seconds(),
              result.probesPerSecond(),
              result.rows(),
              result.matched(),
              result.joinStateBytes());
          (join.equals("skade") ? skade : join.equals("now") ? now : temporal).add(result);
        }
      }
      if (skade.isEmpty() || temporal.isEmpty() || now.isEmpty()) {
        return; // a profiling run of some joins: their runs above are the figures
      }
      Run s = median(skade);
      Run t = median(temporal);
      Run n = median(now);
      System.out.println();
      System.out.printf(
          "%-44s %12s %12s %14s%n", "join (medians)", "probes/s", "matched", "state bytes");
      System.out.printf(
          "%-44s %,12.0f %,12d %,14d%n",
          "skade lookup join as of event time",
          s.probesPerSecond(),
          s.matched(),
          s.joinStateBytes());
      System.out.printf(
          "%-44s %,12.0f %,12d %,14d%n",
          "Flink event-time temporal join (changelog)",
          t.probesPerSecond(),
          t.matched(),
          t.joinStateBytes());
      System.out.printf(
          "%-44s %,12.0f %,12d %,14d%n",
          "skade lookup join of now (for comparison)",
          n.probesPerSecond(),
          n.matched(),
          n.joinStateBytes());
      System.out.printf(
          "skade / temporal join: probes/s %.2fx; state %,d bytes vs %,d bytes; answers %s%n",
          s.probesPerSecond() / t.probesPerSecond(),
          s.joinStateBytes(),
          t.joinStateBytes(),
          s.matched() == t.matched() && s.rows() == t.rows() ? "equal in count" : "DIFFER");
    } finally {
      cluster.close();
      Harness.deleteTree(dir);
    }
  }

  /** Writes the table; returns its first and last commit's times, in ms. */
  private static long[] writeHistory(SkadeCatalog catalog) {
    catalog.createNamespace(Namespace.of("bench"));
    org.apache.iceberg.Schema schema =
        new org.apache.iceberg.Schema(
            List.of(
                Types.NestedField.required(1, "id", Types.LongType.get()),
                Types.NestedField.optional(2, "name", Types.StringType.get()),
                Types.NestedField.optional(3, "score", Types.IntegerType.get())),
            java.util.Set.of(1));
    Table table =
        catalog
            .buildTable(DIM, schema)
            .withProperty("format-version", "2")
            .withProperties(io.skade.lookup.PointLookup.LOOKUP_FILE_PROPERTIES)
            .create();
    TableWriter writer = new TableWriter(table);
    Random random = new Random(42);
    List<Record> rows = new ArrayList<>();
    for (int id = 0; id < KEYS; id++) {
      rows.add(row(schema, id, 0));
    }
    long first = stampMillis(catalog, writer.append(rows).snapshotId());
    long last = first;
    for (int c = 1; c <= COMMITS; c++) {
      rows = new ArrayList<>();
      java.util.Set<Integer> keys = new java.util.HashSet<>();
      while (keys.size() < UPSERTED) {
        keys.add(random.nextInt(KEYS));
      }
      for (int id : keys) {
        rows.add(row(schema, id, c));
      }
      last = stampMillis(catalog, writer.upsert(rows).snapshotId());
    }
    return new long[] {first, last};
  }

  private static long stampMillis(SkadeCatalog catalog, long snapshotId) {
    return catalog.commitOf(DIM, snapshotId).orElseThrow().tsMicros() / 1000;
  }

  private static Record row(org.apache.iceberg.Schema schema, long id, int version) {
    GenericRecord row = GenericRecord.create(schema);
    row.set(0, id);
    row.set(1, "name-" + id + "-v" + version);
    row.set(2, version);
    return row;
  }

  private static Run run(
      MiniCluster cluster, Path warehouse, Path checkpoints, long[] history, String join)
      throws Exception {
    ROWS.reset();
    MATCHED.reset();
    Configuration conf = new Configuration();
    conf.setString("execution.checkpointing.interval", "1 s");
    conf.setString("execution.checkpointing.storage", "filesystem");
    conf.setString("execution.checkpointing.dir", checkpoints.toUri().toString());
    conf.setString("pipeline.operator-chaining.enabled", "false");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(PARALLELISM);
    StreamTableEnvironment sql = StreamTableEnvironment.create(env);
    String with =
        "'connector' = 'skade', 'warehouse' = '"
            + warehouse
            + "', 'database' = 'bench', 'table' = 'dim'";
    long first = history[0];
    long span = Math.max(1, history[1] - history[0]);
    DataStream<Row> probes =
        env.fromSequence(0, PROBES - 1)
            .setParallelism(1)
            .map(new Probe(first, span))
            .returns(
                ExternalTypeInfo.of(
                    DataTypes.ROW(
                        DataTypes.FIELD("k", DataTypes.BIGINT()),
                        DataTypes.FIELD("et", DataTypes.TIMESTAMP_LTZ(3)))))
            .setParallelism(1);
    String query;
    if (!join.equals("temporal")) {
      boolean asOf = join.equals("skade");
      sql.executeSql(
          "CREATE TABLE dim (id BIGINT, name STRING, score INT, "
              + (asOf ? "as_of TIMESTAMP_LTZ(3) METADATA VIRTUAL, " : "")
              + "PRIMARY KEY (id) NOT ENFORCED) WITH ("
              + with
              + (asOf ? ", 'lookup.as-of.retention' = '1 d')" : ")"));
      sql.createTemporaryView(
          "probes",
          sql.fromDataStream(
              probes, probeColumns().columnByExpression("pt", "PROCTIME()").build()));
      query =
          "SELECT p.k, d.name FROM probes AS p LEFT JOIN dim FOR SYSTEM_TIME AS OF p.pt AS d"
              + " ON p.k = d.id"
              + (asOf ? " AND d.as_of = p.et" : "");
    } else {
      sql.executeSql(
          "CREATE TABLE dim_versions (id BIGINT, name STRING, score INT, commit_time"
              + " TIMESTAMP_LTZ(3) METADATA VIRTUAL, PRIMARY KEY (id) NOT ENFORCED, WATERMARK FOR"
              + " commit_time AS SOURCE_WATERMARK()) WITH ("
              + with
              + ", 'scan.startup.mode' = 'earliest', 'scan.bounded' = 'true')");
      DataStream<Row> timed =
          probes
              .assignTimestampsAndWatermarks(
                  WatermarkStrategy.<Row>forMonotonousTimestamps()
                      .withTimestampAssigner(
                          (row, ts) -> ((Instant) row.getField(1)).toEpochMilli()))
              .setParallelism(1);
      sql.createTemporaryView(
          "probes",
          sql.fromDataStream(
              timed,
              probeColumns()
                  .columnByMetadata("rt", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                  .watermark("rt", "SOURCE_WATERMARK()")
                  .build()));
      query =
          "SELECT p.k, d.name FROM probes AS p LEFT JOIN dim_versions FOR SYSTEM_TIME AS OF p.rt"
              + " AS d ON p.k = d.id";
    }
    sql.toChangelogStream(sql.sqlQuery(query)).sinkTo(new Counting());
    JobGraph graph = env.getStreamGraph().getJobGraph();
    long started = System.nanoTime();
    JobID job = cluster.submitJob(graph).get().getJobID();
    cluster
        .requestJobResult(job)
        .get(30, TimeUnit.MINUTES)
        .toJobExecutionResult(AsOfLookupBenchmark.class.getClassLoader());
    double seconds = (System.nanoTime() - started) / 1e9;
    return new Run(seconds, ROWS.sum(), MATCHED.sum(), joinState(cluster, job));
  }

  /** The probes' own columns, as both joins declare them. */
  private static Schema.Builder probeColumns() {
    return Schema.newBuilder()
        .column("k", DataTypes.BIGINT())
        .column("et", DataTypes.TIMESTAMP_LTZ(3));
  }

  /** The join vertex's largest checkpointed state over the run. */
  private static long joinState(MiniCluster cluster, JobID job) throws Exception {
    AccessExecutionGraph graph = cluster.getArchivedExecutionGraph(job).get();
    long largest = 0;
    for (AbstractCheckpointStats checkpoint :
        graph.getCheckpointStatsSnapshot().getHistory().getCheckpoints()) {
      if (!(checkpoint instanceof CompletedCheckpointStats)) {
        continue;
      }
      for (AccessExecutionJobVertex vertex : graph.getAllVertices().values()) {
        if (vertex.getName().contains("Join")) {
          var stats = checkpoint.getTaskStateStats(vertex.getJobVertexId());
          if (stats != null) {
            largest = Math.max(largest, stats.getStateSize());
          }
        }
      }
    }
    return largest;
  }

  private static Run median(List<Run> runs) {
    List<Run> sorted =
        runs.stream().sorted(java.util.Comparator.comparingDouble(Run::probesPerSecond)).toList();
    Run middle = sorted.get(sorted.size() / 2);
    long state = runs.stream().mapToLong(Run::joinStateBytes).sorted().toArray()[runs.size() / 2];
    return new Run(middle.seconds(), middle.rows(), middle.matched(), state);
  }

  /** Probe {@code i}: a random key, a time {@code i / PROBES} of the way through the history. */
  private static final class Probe implements MapFunction<Long, Row> {
    private final long first;
    private final long span;

    Probe(long first, long span) {
      this.first = first;
      this.span = span;
    }

    @Override
    public Row map(Long i) {
      long key = Math.floorMod(i * 0x9E3779B97F4A7C15L >>> 17, KEYS);
      long at = first + (long) ((double) i / PROBES * span);
      return Row.of(key, Instant.ofEpochMilli(at));
    }
  }

  /** Counts the joined rows, and those that found a row, in this JVM. */
  private static final class Counting implements Sink<Row> {
    @Override
    public SinkWriter<Row> createWriter(WriterInitContext context) {
      return new SinkWriter<>() {
        @Override
        public void write(Row row, Context context) {
          ROWS.increment();
          if (row.getField(1) != null) {
            MATCHED.increment();
          }
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {}
      };
    }
  }
}
