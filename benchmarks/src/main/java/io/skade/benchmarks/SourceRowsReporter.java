package io.skade.benchmarks;

import java.util.Properties;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * A metric reporter of a MiniCluster in this JVM that keeps the {@code numRecordsOut} counters of
 * its source operators, so that a benchmark reads the rows its sources emitted from memory: asking
 * the cluster's REST API many times a second costs the job it measures CPU (its metric fetcher, its
 * REST handlers, the JSON). Registered with {@link #register}.
 */
public final class SourceRowsReporter implements MetricReporter, MetricReporterFactory {
  private static final Queue<Counter> EMITTED = new ConcurrentLinkedQueue<>();

  /** Has a cluster started with {@code conf} report to this JVM's reporter. */
  static void register(Configuration conf) {
    conf.setString(
        "metrics.reporter.source-rows.factory.class", SourceRowsReporter.class.getName());
  }

  /** The rows every source operator of this JVM's cluster emitted so far. */
  static long emitted() {
    long sum = 0;
    for (Counter counter : EMITTED) {
      sum += counter.getCount();
    }
    return sum;
  }

  @Override
  public MetricReporter createMetricReporter(Properties properties) {
    return this;
  }

  @Override
  public void open(MetricConfig config) {}

  @Override
  public void close() {}

  @Override
  public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
    String operator = group.getAllVariables().get("<operator_name>");
    if (name.equals("numRecordsOut")
        && metric instanceof Counter counter
        && operator != null
        && operator.startsWith("Source:")) {
      EMITTED.add(counter);
    }
  }

  @Override
  public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}
}
