package io.skade.table;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * A metric reporter that keeps every gauge a job's tasks register, by job and name, after the job
 * and its MiniCluster are gone (Flink's {@code InMemoryReporter} forgets them when its cluster
 * closes, and each SQL job here runs on a cluster of its own). A gauge read then gives its last
 * value. Add it to a job's configuration with {@link #addTo}.
 */
public final class ReaderGauges implements MetricReporter {
  private static final Map<String, List<Gauge<?>>> GAUGES = new ConcurrentHashMap<>();

  /** Reports the metrics of the jobs run with {@code config} here. */
  static Configuration addTo(Configuration config) {
    config.setString("metrics.reporters", "gauges");
    config.setString("metrics.reporter.gauges.factory.class", Factory.class.getName());
    return config;
  }

  /** The gauges named {@code name} that job {@code job}'s tasks registered, one per subtask. */
  static List<Gauge<?>> of(JobID job, String name) {
    return GAUGES.getOrDefault(job + "/" + name, List.of());
  }

  @Override
  public void open(MetricConfig config) {}

  @Override
  public void close() {}

  @Override
  public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
    String job = group.getAllVariables().get("<job_id>");
    if (job != null && metric instanceof Gauge<?> gauge) {
      GAUGES.computeIfAbsent(job + "/" + name, key -> new CopyOnWriteArrayList<>()).add(gauge);
    }
  }

  @Override
  public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}

  /** Makes the reporter; found by Flink through {@code META-INF/services}. */
  public static final class Factory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
      return new ReaderGauges();
    }
  }
}
