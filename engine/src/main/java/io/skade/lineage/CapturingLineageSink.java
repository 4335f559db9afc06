package io.skade.lineage;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/**
 * Keeps every lineage event it is given, in order, in memory: for tests, and for a live tail of
 * lineage in the same JVM ({@link #awaitCommits}).
 */
public final class CapturingLineageSink implements LineageSink {
  private final List<LineageEvent> commits = new ArrayList<>();
  private final List<JobRunEvent> runs = new ArrayList<>();

  @Override
  public synchronized void commit(LineageEvent event) {
    commits.add(event);
    notifyAll();
  }

  @Override
  public synchronized void jobRun(JobRunEvent event) {
    runs.add(event);
    notifyAll();
  }

  /** The commits described so far, oldest first. */
  public synchronized List<LineageEvent> commits() {
    return List.copyOf(commits);
  }

  /** The job runs described so far, oldest first. */
  public synchronized List<JobRunEvent> runs() {
    return List.copyOf(runs);
  }

  /**
   * The commits described so far once {@code done} holds for them, waiting at most {@code timeout}.
   *
   * @throws TimeoutException naming what was captured, when {@code done} did not hold in time
   */
  public List<LineageEvent> awaitCommits(Predicate<List<LineageEvent>> done, Duration timeout)
      throws InterruptedException, TimeoutException {
    return await(this::commits, done, timeout);
  }

  /** As {@link #awaitCommits}, for job runs. */
  public List<JobRunEvent> awaitRuns(Predicate<List<JobRunEvent>> done, Duration timeout)
      throws InterruptedException, TimeoutException {
    return await(this::runs, done, timeout);
  }

  private synchronized <T> List<T> await(
      java.util.function.Supplier<List<T>> events, Predicate<List<T>> done, Duration timeout)
      throws InterruptedException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!done.test(events.get())) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new TimeoutException(
            "lineage not as awaited within "
                + timeout
                + "; captured: "
                + new ArrayList<>(events.get()));
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return events.get();
  }
}
