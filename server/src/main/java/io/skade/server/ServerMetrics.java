package io.skade.server;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * The server's metrics, kept by Micrometer and served in Prometheus' text format on {@code GET
 * /metrics}: commits (as the feed delivers them), commit latency (of the commit routes), parked
 * feed waiters, and request latency by route, method and status.
 */
final class ServerMetrics {
  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final Counter commits =
      Counter.builder("skade.commits")
          .description("commits made in the catalog, as its feed delivered them")
          .register(registry);
  private final Timer commitLatency =
      Timer.builder("skade.commit.latency")
          .description("time a commit route took, from its parsed request to its durable commit")
          .publishPercentiles(0.5, 0.99)
          .register(registry);

  /** Registers the gauge of parked long-polls, read from {@code waiters}. */
  /** The parked feed requests of the feed served now (a group's leader serves one per term). */
  private volatile Supplier<Number> waiters = () -> 0;

  synchronized void feedWaiters(Supplier<Number> current) {
    boolean first = registry.find("skade.feed.waiters").gauge() == null;
    waiters = current;
    if (first) {
      Gauge.builder("skade.feed.waiters", () -> waiters.get())
          .description("commits requests parked until a commit lands or their wait ends")
          .register(registry);
    }
  }

  void commit() {
    commits.increment();
  }

  Timer commitLatency() {
    return commitLatency;
  }

  /** Records one answered request under its route's template. */
  void request(String route, String method, int status, long nanos) {
    Timer.builder("skade.http.requests")
        .description("requests answered, by route template, method and status")
        .tag("route", route)
        .tag("method", method)
        .tag("status", String.valueOf(status))
        .register(registry)
        .record(Duration.ofNanos(nanos));
  }

  /** The metrics in Prometheus' text format. */
  String scrape() {
    return registry.scrape();
  }
}
