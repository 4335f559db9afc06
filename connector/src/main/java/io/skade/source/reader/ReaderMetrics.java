package io.skade.source.reader;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.metrics.groups.SourceReaderMetricGroup;
import org.apache.flink.runtime.metrics.MetricNames;

/**
 * What a reader's split reader reports to Flink: {@code pendingRecords} (the changes of its
 * assigned splits not read yet, estimated from their files' record counts ({@link
 * io.skade.changelog.ChangeEstimate}); the Flink autoscaler scales sources on it) and {@code
 * currentFetchEventTimeLag} (now less the commit time of the last change fetched), and {@code
 * dataFilesRead} (the data files its splits have read, fetched ahead or opened in place). Written
 * by the fetcher thread, read by Flink's metric reporters.
 */
final class ReaderMetrics {
  private final AtomicLong pending = new AtomicLong();
  private volatile long lastFetchedCommitMillis = -1;
  private volatile long lastFetchMillis;
  private volatile long dataFilesRead;

  void pending(long changes) {
    pending.set(changes);
  }

  void fetched(long commitMillis) {
    lastFetchMillis = System.currentTimeMillis();
    lastFetchedCommitMillis = commitMillis;
  }

  void dataFilesRead(long files) {
    dataFilesRead = files;
  }

  /** Registers the gauges with the reader's metric group. */
  void register(SourceReaderMetricGroup group) {
    group.setPendingRecordsGauge(pending::get);
    group.gauge(
        MetricNames.CURRENT_FETCH_EVENT_TIME_LAG,
        () -> lastFetchedCommitMillis < 0 ? 0L : lastFetchMillis - lastFetchedCommitMillis);
    group.gauge("dataFilesRead", () -> dataFilesRead);
  }
}
