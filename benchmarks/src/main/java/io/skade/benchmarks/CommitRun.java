package io.skade.benchmarks;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeCatalog.StoreStatistics;
import io.skade.server.ServerProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * One cell of the commit benchmarks: fresh tables, one per committer thread, a fixed commit count;
 * in a fresh catalog of this JVM, or through a skade server's REST protocol. A contended cell
 * ({@link ContendedRun}) uses the same catalogs, its writers sharing tables. Every catalog here
 * reports commits to {@link CommitAttemptsReporter}.
 */
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
    GROUP_COMMIT_HADOOP_LOCAL_FS("group, Hadoop FS"),
    /**
     * skade's defaults in a skade server (a child JVM); the committers and the feed subscriber are
     * its clients in this JVM, over HTTP: Iceberg's {@code RESTCatalog}, skade's {@code
     * RemoteCommitFeed}.
     */
    SERVER("server, REST");

    final String label;

    Design(String label) {
      this.label = label;
    }
  }

  /**
   * Figures of one cell; the store counters cover the timed commits only (-1 where the store is in
   * another process). Feed latencies, sorted, per commit the subscriber received: from its batch
   * becoming durable (only where the feed stamps that: a catalog in this JVM), from the committer
   * stamping it (its group's start, before the fsync; wall clock), and from the commit call
   * returning (negative: the subscriber heard of it first).
   */
  record Result(
      Workload workload,
      Design design,
      int committers,
      int commits,
      long elapsedNanos,
      long walSyncs,
      long batches,
      long[] sortedLatencyNanos,
      long[] sortedStampLatencyNanos,
      long[] sortedAckLatencyNanos,
      long feedEventsMissed) {

    double seconds() {
      return elapsedNanos / 1e9;
    }

    double commitsPerSecond() {
      return commits / seconds();
    }

    /** Feed latency from durable, microseconds at {@code percentile}; NaN when not measured. */
    double latencyMicros(double percentile) {
      return micros(sortedLatencyNanos, percentile);
    }

    /** Feed latency from the committer's stamp, microseconds. */
    double stampLatencyMicros(double percentile) {
      return micros(sortedStampLatencyNanos, percentile);
    }

    /** Feed latency from the commit call's return, microseconds. */
    double ackLatencyMicros(double percentile) {
      return micros(sortedAckLatencyNanos, percentile);
    }

    /** The columns every table of cells starts with, then {@code more}. */
    static String[] header(String... more) {
      return concat(
          new String[] {"workload", "design", "committers", "commits", "seconds", "commits/s"},
          more);
    }

    /**
     * This cell's columns under {@link #header}: its workload, {@code design} as the table names
     * it, committers, commits, seconds and commits/s; then {@code more}.
     */
    String[] cells(String design, String... more) {
      return concat(
          new String[] {
            workload.label(),
            design,
            Integer.toString(committers),
            Integer.toString(commits),
            CommitBenchmark.fmt("%.2f", seconds()),
            CommitBenchmark.fmt("%.0f", commitsPerSecond())
          },
          more);
    }

    private static String[] concat(String[] first, String[] more) {
      String[] all = Arrays.copyOf(first, first.length + more.length);
      System.arraycopy(more, 0, all, first.length, more.length);
      return all;
    }
  }

  /** Nearest-rank percentile of {@code sorted} nanoseconds, in microseconds; NaN when empty. */
  static double micros(long[] sorted, double percentile) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int rank = (int) Math.ceil(percentile / 100 * sorted.length);
    return sorted[Math.max(rank, 1) - 1] / 1e3;
  }

  /** Where a cell's catalog is, and how its committers and its feed subscriber reach it. */
  interface Cell extends AutoCloseable {
    /**
     * The catalog that committer {@code n} commits through: the cell's own in this JVM; on a
     * server, a client of its own, made by this call.
     */
    Catalog client(int n);

    /** The cell's table number {@code t}. */
    TableIdentifier tableId(int t);

    /** Creates committer {@code t}'s table (untimed); returns what its commit {@code i} does. */
    default IntConsumer committer(Workload workload, int t) {
      Catalog client = client(t);
      TableIdentifier id = tableId(t);
      return workload.committerFor(client, id, client.createTable(id, Workload.SCHEMA), t);
    }

    /** Committer {@code t}'s table, as the feed's events name it. */
    String tableKey(int t);

    /** A subscription to the catalog's commits, buffering up to {@code size}. */
    CommitSubscription subscribe(int size);

    /** Whether the subscription's stamps tell when a batch became durable. */
    boolean stampsDurability();

    /** The store's counters now; null when the store is in another process. */
    StoreStatistics statistics();
  }

  /** What a benchmark measures on a cell. */
  @FunctionalInterface
  private interface Measurement<R> {
    R on(Cell cell) throws Exception;
  }

  /** What each of the threads that {@link #together} starts does, given its number. */
  @FunctionalInterface
  interface ThreadBody {
    void run(int thread) throws Exception;
  }

  private CommitRun() {}

  /** Runs one cell of the given design, on a fresh catalog embedded in this JVM. */
  static Result run(Workload workload, Design design, int committers, int commits)
      throws Exception {
    if (design == Design.SERVER) {
      throw new IllegalArgumentException("a server's cell runs on a server: run(.., server, ..)");
    }
    return embedded(design, cell -> measure(cell, workload, design, committers, commits));
  }

  /**
   * Runs one contended cell ({@link ContendedRun}) on a fresh catalog of skade's defaults (group
   * commit) in this JVM, which all writers share.
   */
  static ContendedRun.Result contended(int writers, int tables, int commitsPerWriter)
      throws Exception {
    return embedded(
        Design.GROUP_COMMIT,
        cell -> ContendedRun.measure(cell, "embedded", writers, tables, commitsPerWriter));
  }

  /** Runs one contended cell through {@code server}'s REST protocol, a client per writer. */
  static ContendedRun.Result contended(
      ServerProcess server, int writers, int tables, int commitsPerWriter) throws Exception {
    try (Served cell = new Served(server)) {
      return ContendedRun.measure(cell, Design.SERVER.label, writers, tables, commitsPerWriter);
    }
  }

  /** Measures on a fresh catalog of {@code design} in a temporary warehouse, deleted afterwards. */
  private static <R> R embedded(Design design, Measurement<R> measurement) throws Exception {
    Path warehouse = Files.createTempDirectory("skade-bench-");
    try (Embedded cell = new Embedded(warehouse, design)) {
      return measurement.on(cell);
    } finally {
      Harness.deleteTree(warehouse);
    }
  }

  /**
   * Runs one cell through {@code server}'s REST protocol: fresh tables in a namespace of their own,
   * one {@code RESTCatalog} per committer, the feed subscriber a client of its own. The server is
   * the caller's, so that its JIT is warm from the cells before.
   */
  static Result run(Workload workload, ServerProcess server, int committers, int commits)
      throws Exception {
    try (Served cell = new Served(server)) {
      return measure(cell, workload, Design.SERVER, committers, commits);
    }
  }

  private static Result measure(
      Cell cell, Workload workload, Design design, int committers, int commits) throws Exception {
    // Setup is untimed: each committer gets its own table, so no commit ever loses a CAS.
    List<IntConsumer> actions = new ArrayList<>();
    String[] tableKeys = new String[committers];
    for (int t = 0; t < committers; t++) {
      actions.add(cell.committer(workload, t));
      tableKeys[t] = cell.tableKey(t);
    }

    // Subscribed after setup, so the feed carries exactly the timed commits. The buffer holds
    // the whole run, so it cannot lag; lag is still counted, should it ever happen.
    CommitSubscription subscription = cell.subscribe(commits + 1024);
    FeedProbe probe = new FeedProbe(subscription, commits, cell.stampsDurability());
    probe.start();

    AtomicReference<Throwable> failure = new AtomicReference<>();
    long[][] acknowledged = new long[committers][];
    for (int t = 0; t < committers; t++) {
      // Spread the remainder so the cell makes exactly `commits` commits.
      acknowledged[t] = new long[commits / committers + (t < commits % committers ? 1 : 0)];
    }
    StoreStatistics before = cell.statistics();
    long elapsed =
        together(
            committers,
            "bench-committer-",
            t -> {
              for (int i = 0; i < acknowledged[t].length; i++) {
                actions.get(t).accept(i);
                acknowledged[t][i] = System.nanoTime();
              }
            },
            failure);
    StoreStatistics after = cell.statistics();

    probe.finish(Duration.ofSeconds(30));
    subscription.close();
    if (failure.get() != null) {
      throw new IllegalStateException(
          workload.label() + " with " + committers + " committers failed", failure.get());
    }
    return new Result(
        workload,
        design,
        committers,
        commits,
        elapsed,
        after == null ? -1 : after.walSyncs() - before.walSyncs(),
        after == null ? -1 : after.batchesWritten() - before.batchesWritten(),
        probe.sortedLatencies(),
        probe.sortedStampLatencies(),
        probe.sortedAckLatencies(tableKeys, acknowledged),
        probe.missed());
  }

  /**
   * Runs {@code body} on {@code threads} threads (named {@code name} and their number), let go at
   * once so that they contend from the first commit; returns the nanoseconds from then until the
   * last one finished. A thread that throws stops, its exception in {@code failure} if the first.
   */
  static long together(
      int threads, String name, ThreadBody body, AtomicReference<Throwable> failure)
      throws InterruptedException {
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> started = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int number = t;
      Thread thread =
          new Thread(
              () -> {
                try {
                  go.await();
                  body.run(number);
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              },
              name + t);
      thread.start();
      started.add(thread);
    }
    long start = System.nanoTime();
    go.countDown();
    for (Thread thread : started) {
      thread.join();
    }
    return System.nanoTime() - start;
  }

  /** A fresh catalog in this JVM, configured as the design says. */
  private static final class Embedded implements Cell {
    private final SkadeCatalog catalog = new SkadeCatalog();

    Embedded(Path warehouse, Design design) {
      if (design == Design.GROUP_COMMIT_HADOOP_LOCAL_FS) {
        catalog.setConf(new Configuration()); // Hadoop's defaults: its own local file system
      }
      catalog.initialize(
          "bench",
          Map.of(
              "warehouse",
              warehouse.toString(),
              SkadeCatalog.MAX_BATCH_SIZE,
              design == Design.FSYNC_PER_COMMIT ? "1" : "4096",
              CatalogProperties.METRICS_REPORTER_IMPL,
              CommitAttemptsReporter.class.getName()));
      catalog.createNamespace(NAMESPACE);
    }

    @Override
    public Catalog client(int n) {
      return catalog;
    }

    @Override
    public TableIdentifier tableId(int t) {
      return TableIdentifier.of(NAMESPACE, "t" + t);
    }

    @Override
    public String tableKey(int t) {
      return catalog.commitTableKey(tableId(t));
    }

    @Override
    public CommitSubscription subscribe(int size) {
      return catalog.subscribeCommits(size);
    }

    @Override
    public boolean stampsDurability() {
      return true;
    }

    @Override
    public StoreStatistics statistics() {
      return catalog.statistics();
    }

    @Override
    public void close() throws IOException {
      catalog.close();
    }
  }

  /** Fresh tables of a skade server, reached over HTTP as other processes reach it. */
  private static final class Served implements Cell {
    private static final AtomicInteger CELLS = new AtomicInteger();
    private final ServerProcess server;
    private final Namespace namespace = Namespace.of("bench_" + CELLS.incrementAndGet());
    private final List<RESTCatalog> clients = new ArrayList<>();
    private final CatalogConnection subscriber;

    Served(ServerProcess server) {
      this.server = server;
      this.subscriber = CatalogConnection.open(ServerClients.properties(server));
      ((SupportsNamespaces) subscriber.catalog()).createNamespace(namespace);
    }

    @Override
    public Catalog client(int n) {
      // A client per committer, as committers in processes of their own would have.
      RESTCatalog client = ServerClients.committer("committer-" + n, server);
      clients.add(client);
      return client;
    }

    @Override
    public TableIdentifier tableId(int t) {
      return TableIdentifier.of(namespace, "t" + t);
    }

    @Override
    public String tableKey(int t) {
      return subscriber.feed().commitTableKey(tableId(t));
    }

    @Override
    public CommitSubscription subscribe(int size) {
      return subscriber.feed().subscribeCommits(size);
    }

    @Override
    public boolean stampsDurability() {
      return false; // a remote feed stamps when its long-poll was answered
    }

    @Override
    public StoreStatistics statistics() {
      return null;
    }

    @Override
    public void close() {
      for (RESTCatalog client : clients) {
        try {
          client.close();
        } catch (IOException e) {
          throw new UncheckedIOException("closing a REST client of " + server.uri(), e);
        }
      }
      subscriber.close();
    }
  }

  /**
   * Polls the commit feed on its own thread and records, per event, when it was received: how long
   * after its batch became durable (where the feed stamps that) and after the committer stamped it,
   * and, per table, the moment of each receipt, to set against the commit calls.
   */
  private static final class FeedProbe extends Thread {
    private final CommitSubscription subscription;
    private final boolean stampsDurability;
    private final long lastExpectedSeq;
    private final long[] latencies;
    private final long[] stampLatencies;
    private final Map<String, List<Long>> receivedByTable = new HashMap<>();
    private int received;
    private long lastSeq;
    private long missed;
    private volatile boolean stop;

    FeedProbe(CommitSubscription subscription, int expected, boolean stampsDurability) {
      super("bench-feed-probe");
      setDaemon(true);
      this.subscription = subscription;
      this.stampsDurability = stampsDurability;
      this.lastExpectedSeq = subscription.startCursor() + expected;
      this.latencies = new long[expected];
      this.stampLatencies = new long[expected];
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
        // Read the clocks first: lastDurableNanos() takes the subscription's lock.
        long now = System.nanoTime();
        Instant wall = Instant.now();
        if (event == null) {
          if (stop) {
            return;
          }
          continue;
        }
        if (received < latencies.length) {
          latencies[received] = now - subscription.lastDurableNanos();
          stampLatencies[received++] =
              (wall.getEpochSecond() * 1_000_000L + wall.getNano() / 1_000 - event.tsMicros())
                  * 1_000;
        }
        receivedByTable.computeIfAbsent(event.tableKey(), k -> new ArrayList<>()).add(now);
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

    /** From durable to received; empty where the feed does not stamp durability. */
    long[] sortedLatencies() {
      return stampsDurability ? sorted(latencies, received) : new long[0];
    }

    long[] sortedStampLatencies() {
      return sorted(stampLatencies, received);
    }

    /**
     * From each commit call's return to the receipt of its event: committer {@code t} alone commits
     * to table {@code tableKeys[t]}, so its i-th event is its i-th commit. Nothing when events were
     * missed, which would shift that pairing.
     */
    long[] sortedAckLatencies(String[] tableKeys, long[][] acknowledged) {
      if (missed > 0) {
        return new long[0];
      }
      long[] gaps = new long[received];
      int n = 0;
      for (int t = 0; t < tableKeys.length; t++) {
        List<Long> receipts = receivedByTable.getOrDefault(tableKeys[t], List.of());
        for (int i = 0;
            i < Math.min(receipts.size(), acknowledged[t].length) && n < gaps.length;
            i++) {
          gaps[n++] = receipts.get(i) - acknowledged[t][i];
        }
      }
      return sorted(gaps, n);
    }

    private static long[] sorted(long[] values, int count) {
      long[] sorted = Arrays.copyOf(values, count);
      Arrays.sort(sorted);
      return sorted;
    }

    long missed() {
      return missed;
    }
  }
}
