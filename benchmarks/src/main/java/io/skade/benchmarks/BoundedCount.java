package io.skade.benchmarks;

import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Bounded jobs that count the rows a source reads, submitted to one session MiniCluster of this JVM
 * that all of a benchmark's bounded jobs share, each timed two ways: from its submission to its
 * end, and the job's own run (Flink's net runtime: from the job's start on the cluster, its
 * planning and deployment included, to its end), which is what a bounded job on a running cluster
 * pays. The backlog figures of the source benchmarks are these.
 *
 * <p>One cluster rather than one per job: each MiniCluster's start loads Flink's RPC system into a
 * class loader of its own, whose classes the JIT then compiles anew; on 2 cores that compilation
 * (about 2 s of CPU per start, measured) ran through the job just submitted and moved its runtime
 * by a third from one read to the next.
 */
final class BoundedCount implements AutoCloseable {
  /** Rows the running job counted. */
  private static final LongAdder COUNTED = new LongAdder();

  /** The most parallel job the session runs. */
  private static final int SLOTS = 2;

  /** The rows a job counted, its seconds from submission and its net runtime's. */
  record Result(long rows, double seconds, double jobSeconds) {}

  private final MiniCluster cluster;

  private BoundedCount(MiniCluster cluster) {
    this.cluster = cluster;
  }

  /** Starts the session cluster that {@link #run} submits to. */
  static BoundedCount start() throws Exception {
    MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(SLOTS)
                .build());
    cluster.start();
    return new BoundedCount(cluster);
  }

  /** Runs {@code reading}'s bounded job, named {@code job}, at {@code parallelism}. */
  Result run(
      String job,
      int parallelism,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    COUNTED.reset();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    reading.apply(env).map(new Count()).sinkTo(new DiscardingSink<>());
    StreamGraph graph = env.getStreamGraph();
    graph.setJobName(job);
    long started = System.nanoTime();
    JobExecutionResult result = cluster.executeJobBlocking(graph.getJobGraph());
    return new Result(
        COUNTED.sum(),
        (System.nanoTime() - started) / 1e9,
        result.getNetRuntime(TimeUnit.MILLISECONDS) / 1e3);
  }

  @Override
  public void close() throws Exception {
    cluster.close();
  }

  /** skade's bounded source over {@code table}, from its first snapshot: every commit's changes. */
  static DataStream<RowData> skadeFromEarliest(
      StreamExecutionEnvironment env, Map<String, String> properties, TableIdentifier table) {
    return env.fromSource(
        SkadeSource.builder()
            .catalogProperties(properties)
            .table(table)
            .startupMode(StartupMode.EARLIEST)
            .bounded()
            .build(),
        WatermarkStrategy.noWatermarks(),
        "skade");
  }

  private static final class Count implements MapFunction<RowData, Long> {
    @Override
    public Long map(RowData row) {
      COUNTED.increment();
      return row.getLong(0);
    }
  }
}
