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
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A bounded job that counts the rows a source reads, in a local MiniCluster of this JVM, timed two
 * ways: from its submission to its end, the MiniCluster's start included, and the job's own run
 * (Flink's net runtime: from the job's start on the started cluster, its planning and deployment
 * included, to its end), which is what a bounded job on a running cluster pays. The backlog figures
 * of the source benchmarks are these.
 */
final class BoundedCount {
  /** Rows the running job counted. */
  private static final LongAdder COUNTED = new LongAdder();

  /**
   * The rows a job counted, its seconds from submission (the MiniCluster's start included) and its
   * net runtime's.
   */
  record Result(long rows, double seconds, double jobSeconds) {}

  private BoundedCount() {}

  /** Runs {@code reading}'s bounded job, named {@code job}, at {@code parallelism}. */
  static Result run(
      String job,
      int parallelism,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    COUNTED.reset();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    reading.apply(env).map(new Count()).sinkTo(new DiscardingSink<>());
    long started = System.nanoTime();
    JobExecutionResult result = env.execute(job);
    return new Result(
        COUNTED.sum(),
        (System.nanoTime() - started) / 1e9,
        result.getNetRuntime(TimeUnit.MILLISECONDS) / 1e3);
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
