package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The reader's metrics while a throttled job reads a backlog: {@code pendingRecords} (what the
 * Flink autoscaler scales on) starts near the backlog, falls as the changes are read and ends at 0;
 * {@code currentFetchEventTimeLag} is the age of the commits being read.
 */
class SkadeSourceMetricsTest {
  private static final Schema SCHEMA = IdRows.log("v");
  private static final int COMMITS = 20;
  private static final int ROWS = 50;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  @Timeout(120)
  void pendingRecordsFallsAsTheBacklogIsReadAndTheFetchLagIsTheCommitsAge() throws Exception {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "backlog"), SCHEMA);
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < COMMITS; commit++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < ROWS; i++) {
        rows.add(IdRows.row(SCHEMA, (long) commit * ROWS + i, "v"));
      }
      writer.append(rows);
    }
    Thread.sleep(200); // the commits are at least this old when read

    InMemoryReporter reporter = InMemoryReporter.createWithRetainedMetrics();
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.getExecutionEnvironment(
            reporter.addToConfiguration(new Configuration()));
    env.setParallelism(1);
    env.fromSource(
            SkadeSource.builder()
                .catalogProperties(catalog.properties())
                .table("db.backlog")
                .startupMode(StartupMode.EARLIEST)
                .bounded()
                .batchRows(10)
                .deserializer(new ChangeLines.Deserializer())
                .build(),
            WatermarkStrategy.noWatermarks(),
            "backlog")
        .map(
            line -> {
              Thread.sleep(2); // a slow job: the backlog is read over about 2 s
              return line;
            })
        .sinkTo(new DiscardingSink<>());
    JobClient job = env.executeAsync("backlog");
    JobID id = job.getJobID();
    List<Long> pending = new ArrayList<>();
    List<Long> lags = new ArrayList<>();
    // Samples the gauges every 20 ms while the job runs: the samples are what the test checks,
    // so this loop is a sampler, not a wait for a condition.
    while (!job.getJobExecutionResult().isDone()) {
      gauge(reporter, id, "pendingRecords").ifPresent(pending::add);
      gauge(reporter, id, "currentFetchEventTimeLag").ifPresent(lags::add);
      Thread.sleep(20);
    }
    job.getJobExecutionResult().get();
    gauge(reporter, id, "pendingRecords").ifPresent(pending::add);

    long backlog = (long) COMMITS * ROWS;
    assertThat(pending).as("pendingRecords seen while the job ran").isNotEmpty();
    assertThat(pending.stream().mapToLong(Long::longValue).max().orElse(0))
        .as("the largest backlog reported")
        .isGreaterThan(backlog / 2)
        .isLessThanOrEqualTo(backlog);
    assertThat(pending.get(pending.size() - 1)).as("pending at the end").isZero();
    assertThat(lags).as("fetch lags seen").isNotEmpty();
    assertThat(lags.stream().mapToLong(Long::longValue).max().orElse(0))
        .as("the age of the commits read")
        .isGreaterThanOrEqualTo(200);
  }

  /** The value of the reader's gauge {@code name}, once it is registered. */
  private static Optional<Long> gauge(InMemoryReporter reporter, JobID job, String name) {
    Map<String, Metric> metrics = reporter.findMetrics(job, name);
    return metrics.values().stream()
        .filter(m -> m instanceof Gauge<?>)
        .map(m -> ((Gauge<?>) m).getValue())
        .filter(v -> v instanceof Long)
        .map(v -> (Long) v)
        .findFirst();
  }
}
