package io.skade.benchmarks;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeCatalog.StoreStatistics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/** One cell of the benchmark: a fresh catalog, one table per committer, a fixed commit count. */
final class CommitRun {
  private static final Namespace NAMESPACE = Namespace.of("bench");

  /** How the cell's catalog commits and writes its files. */
  enum Design {
    /** One fsync per commit ({@code commit.max-batch-size=1}): the design without group commit. */
    FSYNC_PER_COMMIT("fsync per commit"),
    /** skade's defaults. */
    GROUP_COMMIT("group commit"),
    /**
     * skade's defaults but files written through Hadoop's own local file system, which starts a
     * {@code chmod} process per file: the design before {@code SkadeLocalFileSystem}.
     */
    GROUP_COMMIT_HADOOP_LOCAL_FS("group, Hadoop FS");

    final String label;

    Design(String label) {
      this.label = label;
    }
  }

  /** Figures of one cell; the store counters cover the timed commits only. */
  record Result(Workload workload, Design design, int committers, int commits, long elapsedNanos,
      long walSyncs, long batches, long[] sortedLatencyNanos, long feedEventsMissed) {

    double seconds() {
      return elapsedNanos / 1e9;
    }

    double commitsPerSecond() {
      return commits / seconds();
    }

    /** Nearest-rank percentile of the feed latency in microseconds; NaN when nothing arrived. */
    double latencyMicros(double percentile) {
      if (sortedLatencyNanos.length == 0) {
        return Double.NaN;
      }
      int rank = (int) Math.ceil(percentile / 100 * sortedLatencyNanos.length);
      return sortedLatencyNanos[Math.max(rank, 1) - 1] / 1e3;
    }
  }

  private CommitRun() {}

  /** Runs one cell of the given design. */
  static Result run(Workload workload, Design design, int committers, int commits)
      throws Exception {
    Path warehouse = Files.createTempDirectory("skade-bench-");
    try {
      return runIn(warehouse, workload, design, committers, commits);
    } finally {
      deleteTree(warehouse);
    }
  }

  private static Result runIn(Path warehouse, Workload workload, Design design, int committers,
      int commits) throws Exception {
    SkadeCatalog catalog = new SkadeCatalog();
    if (design == Design.GROUP_COMMIT_HADOOP_LOCAL_FS) {
      catalog.setConf(new Configuration()); // Hadoop's defaults: its own local file system
    }
    catalog.initialize("bench", Map.of("warehouse", warehouse.toString(),
        SkadeCatalog.MAX_BATCH_SIZE, design == Design.FSYNC_PER_COMMIT ? "1" : "4096"));
    try {
      // Setup is untimed: each committer gets its own table, so no commit ever loses a CAS.
      catalog.createNamespace(NAMESPACE);
      List<IntConsumer> actions = new ArrayList<>();
      for (int t = 0; t < committers; t++) {
        TableIdentifier id = TableIdentifier.of(NAMESPACE, "t" + t);
        var table = catalog.createTable(id, Workload.SCHEMA);
        actions.add(workload.committerFor(catalog, id, table, t));
      }

      // Subscribed after setup, so the feed carries exactly the timed commits. The buffer holds
      // the whole run, so it cannot lag; lag is still counted, should it ever happen.
      CommitSubscription subscription = catalog.subscribeCommits(commits + 1024);
      FeedProbe probe = new FeedProbe(subscription, commits);
      probe.start();

      CountDownLatch go = new CountDownLatch(1);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < committers; t++) {
        // Spread the remainder so the cell makes exactly `commits` commits.
        int share = commits / committers + (t < commits % committers ? 1 : 0);
        IntConsumer action = actions.get(t);
        Thread thread = new Thread(() -> {
          try {
            go.await();
            for (int i = 0; i < share; i++) {
              action.accept(i);
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        }, "bench-committer-" + t);
        thread.start();
        threads.add(thread);
      }

      StoreStatistics before = catalog.statistics();
      long start = System.nanoTime();
      go.countDown();
      for (Thread thread : threads) {
        thread.join();
      }
      long elapsed = System.nanoTime() - start;
      StoreStatistics after = catalog.statistics();

      probe.finish(Duration.ofSeconds(30));
      subscription.close();
      if (failure.get() != null) {
        throw new IllegalStateException(
            workload.label() + " with " + committers + " committers failed", failure.get());
      }
      return new Result(workload, design, committers, commits, elapsed,
          after.walSyncs() - before.walSyncs(), after.batchesWritten() - before.batchesWritten(),
          probe.sortedLatencies(), probe.missed());
    } finally {
      catalog.close();
    }
  }

  /**
   * Polls the commit feed on its own thread and records, per event, how long after its batch
   * became durable the event was received.
   */
  private static final class FeedProbe extends Thread {
    private final CommitSubscription subscription;
    private final long lastExpectedSeq;
    private final long[] latencies;
    private int received;
    private long lastSeq;
    private long missed;
    private volatile boolean stop;

    FeedProbe(CommitSubscription subscription, int expected) {
      super("bench-feed-probe");
      setDaemon(true);
      this.subscription = subscription;
      this.lastExpectedSeq = subscription.startCursor() + expected;
      this.latencies = new long[expected];
      this.lastSeq = subscription.startCursor();
    }

    @Override
    public void run() {
      while (lastSeq < lastExpectedSeq) {
        CommitEvent event;
        try {
          event = subscription.poll(Duration.ofMillis(50));
        } catch (CommitFeedLaggedException lagged) {
          continue; // the gap in commitSeq is counted as missed below
        } catch (InterruptedException | IllegalStateException closed) {
          return;
        }
        // Read the clock first: lastDurableNanos() takes the subscription's lock.
        long now = System.nanoTime();
        if (event == null) {
          if (stop) {
            return;
          }
          continue;
        }
        if (received < latencies.length) {
          latencies[received++] = now - subscription.lastDurableNanos();
        }
        missed += event.commitSeq() - lastSeq - 1;
        lastSeq = event.commitSeq();
      }
    }

    /** Waits for the last expected event, at most {@code timeout}; then stops polling. */
    void finish(Duration timeout) throws InterruptedException {
      join(timeout.toMillis());
      stop = true;
      join();
      missed += Math.max(0, lastExpectedSeq - lastSeq);
    }

    long[] sortedLatencies() {
      long[] sorted = Arrays.copyOf(latencies, received);
      Arrays.sort(sorted);
      return sorted;
    }

    long missed() {
      return missed;
    }
  }

  private static void deleteTree(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete benchmark warehouse " + root, e);
    }
  }
}
