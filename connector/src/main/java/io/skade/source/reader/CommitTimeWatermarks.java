package io.skade.source.reader;

import io.skade.source.CommitProgressEvent;
import io.skade.source.split.ChangelogSplit;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;

/**
 * A reader's watermark on commit time, emitted on its main output: just before the oldest commit
 * stamp among the splits it holds, and never past the log's progress it was told ({@link
 * CommitProgressEvent}). Splits reach a reader in commit order and stamps never go back along the
 * log, so no change of a held or later split is behind it: the watermark is exact, and a reader
 * given no split follows the log instead of holding the job's watermark back.
 *
 * <p>With an idle timeout, a reader that holds no split and has not advanced for that long is
 * marked idle, so a job's other inputs are not held back by a table that sees no commits; it is
 * marked active again before it emits a change. As everywhere in Flink, a change that reaches a
 * reader while it was idle may then be behind a downstream watermark.
 *
 * <p>Runs on the task thread only, as the reader's callbacks do.
 */
final class CommitTimeWatermarks {
  private final long idleTimeoutNanos;

  /** The splits held (added, not finished): their commits' stamps, milliseconds. */
  private final Map<String, Long> held = new HashMap<>();

  private long progressMillis = Long.MIN_VALUE;
  private long emitted = Long.MIN_VALUE;
  private boolean idle;
  private long quietSinceNanos = System.nanoTime();
  private CompletableFuture<Void> wake = new CompletableFuture<>();

  /**
   * @param idleTimeout how long a reader without splits waits to be marked idle; zero: never
   */
  CommitTimeWatermarks(Duration idleTimeout) {
    this.idleTimeoutNanos = idleTimeout.toNanos();
  }

  void added(ChangelogSplit split) {
    long micros = split.commitMicros();
    held.put(
        split.splitId(),
        micros == ChangelogSplit.UNKNOWN_TIME ? Long.MIN_VALUE : Math.floorDiv(micros, 1000));
  }

  void finished(Collection<String> splitIds) {
    splitIds.forEach(held::remove);
    if (held.isEmpty()) {
      quietSinceNanos = System.nanoTime();
    }
  }

  void progress(CommitProgressEvent event) {
    progressMillis = Math.max(progressMillis, Math.floorDiv(event.commitMicros(), 1000));
    wake.complete(null);
  }

  /**
   * Before the reader emits changes: a reader marked idle is active again while it holds splits.
   */
  void beforePoll(ReaderOutput<?> output) {
    if (idle && !held.isEmpty()) {
      output.markActive();
      idle = false;
    }
  }

  /** After the reader emitted what it had: the watermark those changes and the log allow. */
  void afterPoll(ReaderOutput<?> output) {
    if (wake.isDone()) {
      wake = new CompletableFuture<>();
    }
    long watermark = watermark();
    if (watermark > emitted) {
      output.emitWatermark(new Watermark(watermark));
      emitted = watermark;
      idle = false;
      quietSinceNanos = System.nanoTime();
    } else if (idleDue()) {
      output.markIdle();
      idle = true;
    }
  }

  /**
   * When the reader should be polled although no change is ready: now, if a watermark or idleness
   * is due; else when the enumerator's progress or the idle timeout comes, or {@code changes}.
   */
  CompletableFuture<Void> available(CompletableFuture<Void> changes) {
    if (watermark() > emitted || idleDue()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<?> any =
        idleTimeoutNanos > 0 && !idle && held.isEmpty()
            ? CompletableFuture.anyOf(
                changes,
                wake,
                CompletableFuture.runAsync(
                    () -> {},
                    CompletableFuture.delayedExecutor(
                        idleTimeoutNanos - (System.nanoTime() - quietSinceNanos) + 1,
                        TimeUnit.NANOSECONDS)))
            : CompletableFuture.anyOf(changes, wake);
    return any.thenApply(ignored -> null);
  }

  private long watermark() {
    long floor = progressMillis;
    for (long stamp : held.values()) {
      floor = Math.min(floor, stamp);
    }
    return floor == Long.MIN_VALUE ? Long.MIN_VALUE : floor - 1;
  }

  private boolean idleDue() {
    return idleTimeoutNanos > 0
        && !idle
        && held.isEmpty()
        && System.nanoTime() - quietSinceNanos >= idleTimeoutNanos;
  }
}
