package io.skade.benchmarks;

import java.util.concurrent.atomic.LongAdder;
import org.apache.iceberg.metrics.CommitReport;
import org.apache.iceberg.metrics.CounterResult;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;

/**
 * Adds up, over this JVM, the attempts that Iceberg's snapshot commits took: each successful commit
 * reports them (1 plus its retries) in its {@link CommitReport}. A catalog loads it by name
 * (catalog property {@code metrics-reporter-impl}), hence public with a public constructor; the
 * counts are static because each catalog makes an instance of its own.
 */
public final class CommitAttemptsReporter implements MetricsReporter {
  private static final LongAdder ATTEMPTS = new LongAdder();
  private static final LongAdder COMMITS = new LongAdder();

  public CommitAttemptsReporter() {}

  @Override
  public void report(MetricsReport report) {
    if (report instanceof CommitReport commit) {
      CounterResult attempts = commit.commitMetrics().attempts();
      if (attempts != null) {
        ATTEMPTS.add(attempts.value());
        COMMITS.increment();
      }
    }
  }

  /** Starts counting afresh, e.g. before a cell. */
  static void reset() {
    ATTEMPTS.reset();
    COMMITS.reset();
  }

  /** Attempts of the commits reported since {@link #reset}. */
  static long attempts() {
    return ATTEMPTS.sum();
  }

  /** Commits reported since {@link #reset}: the successful ones whose catalog reports here. */
  static long commits() {
    return COMMITS.sum();
  }
}
