package io.skade.benchmarks;

import static io.skade.benchmarks.CommitBenchmark.fmt;

import io.skade.server.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Prints the commit throughput and commit feed latency through a skade server's REST protocol
 * beside the embedded catalog's, for 1, 4 and 16 concurrent committers. It asserts nothing.
 *
 * <p>Cells are {@link CommitRun}'s: a fixed number of commits of one workload (metadata-only,
 * {@code updateProperties}; or a fast append of a small Parquet file), each committer thread on a
 * fresh table of its own. The embedded cell is skade's defaults (group commit) in this JVM. The
 * server cell commits to a skade server in a child JVM ({@link ServerProcess}, started once and
 * warmed by the warm-up pass): each committer is an Iceberg {@code RESTCatalog} of its own in this
 * JVM, and the feed subscriber a {@code RemoteCommitFeed} (through {@code CatalogConnection}), also
 * here. Pointer-only commits reach the committer in process, so they are not in this benchmark.
 *
 * <p>Feed latency, per commit the subscriber received: from the catalog's committer stamping it
 * (the start of its group, before the fsync; the server's wall clock is this machine's), for both;
 * from the commit call returning (the commit acknowledged to its committer; negative when the
 * subscriber heard first), for both; and, embedded only, from its batch becoming durable, as {@link
 * CommitBenchmark} prints it.
 *
 * <p>Then contended cells ({@link ContendedRun}), embedded and through the server side by side: 1,
 * 4 and 16 writers appending small Parquet files to the same 1 or 4 tables, round-robin, each
 * writer a {@code RESTCatalog} of its own on the server, with the tables' default commit retries:
 * commits that succeeded and failed, successful commits/s, append-call latency p50, p99 and max,
 * commit attempts per successful commit, and a warning where a table's snapshot count differs from
 * the commits to it that succeeded.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.commits} metadata-only commits
 * per cell [300], {@code skade.bench.appendCommits} append commits per cell [150], {@code
 * skade.bench.committers} comma-separated committer counts [1,4,16], {@code
 * skade.bench.warmupCommits} commits per workload and design in the warm-up [500], {@code
 * skade.bench.uncontended} whether to run the cells of a table per committer [true] (false: the
 * warm-up, then the contended cells alone); the contended cells' properties are {@link
 * ContendedRun}'s.
 */
public final class RemoteCommitBenchmark {
  private static final List<Workload> WORKLOADS = List.of(Workload.METADATA_ONLY, Workload.APPEND);

  private RemoteCommitBenchmark() {}

  public static void main(String[] args) throws Exception {
    // Every REST client warns that its token implies OAuth2; keep the table readable.
    Harness.quietLogs(CommitBenchmark.ICEBERG_COMMIT_LOGGER, "org.apache.iceberg.rest.auth");
    int metadataCommits = Integer.getInteger("skade.bench.commits", 300);
    int appendCommits = Integer.getInteger("skade.bench.appendCommits", 150);
    // More than CommitBenchmark's 100: the server's JVM is warmed by these alone (a metadata-only
    // commit through it took 11 ms over the first 300, 4.5 ms over the third 300).
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 500);
    int[] committerCounts = CommitBenchmark.ints("skade.bench.committers", "1,4,16");
    boolean uncontended =
        Boolean.parseBoolean(System.getProperty("skade.bench.uncontended", "true"));

    CommitBenchmark.printHeader("skade commit benchmark through REST");
    System.out.printf(
        "Per cell: one fresh table per committer; %d metadata-only / %d append"
            + " commits. 'embedded' = group commit in this JVM; 'server, REST' = the same catalog"
            + " in a skade server process, committers (a RESTCatalog each) and the feed subscriber"
            + " (RemoteCommitFeed) its HTTP clients in this JVM. Warm-up first: %d commits per"
            + " workload and design.%n",
        metadataCommits, appendCommits, warmupCommits);

    Path root = Files.createTempDirectory("skade-remote-commit-bench-");
    List<CommitRun.Result> results = new ArrayList<>();
    try (ServerProcess server = new ServerProcess(root)) {
      // Warm-up of both JVMs: JIT, class loading, Hadoop/Parquet, HTTP; results discarded.
      for (Workload workload : WORKLOADS) {
        CommitRun.run(workload, CommitRun.Design.GROUP_COMMIT, 4, warmupCommits);
        CommitRun.run(workload, server, 4, warmupCommits);
      }
      if (uncontended) {
        for (Workload workload : WORKLOADS) {
          int commits = workload == Workload.APPEND ? appendCommits : metadataCommits;
          for (int committers : committerCounts) {
            results.add(
                CommitRun.run(workload, CommitRun.Design.GROUP_COMMIT, committers, commits));
            results.add(CommitRun.run(workload, server, committers, commits));
          }
        }
        System.out.println();
        print(results);
      }
      // While the server is up: its cells need it.
      ContendedRun.section(
          List.of(
              CommitRun::contended,
              (writers, tables, commits) -> CommitRun.contended(server, writers, tables, commits)));
    } finally {
      Harness.deleteTree(root);
    }
  }

  private static void print(List<CommitRun.Result> results) {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        CommitRun.Result.header(
            "vs embedded",
            "feed from durable p50/p99 (µs)",
            "feed from stamp p50/p99 (µs)",
            "vs embedded p50/p99",
            "feed from ack p50/p99 (µs)"));
    CommitRun.Result embedded = null;
    long missed = 0;
    for (CommitRun.Result r : results) {
      missed += r.feedEventsMissed();
      boolean served = r.design() == CommitRun.Design.SERVER;
      if (!served) {
        embedded = r;
      }
      rows.add(
          r.cells(
              served ? r.design().label : "embedded",
              fmt("%.2fx", r.commitsPerSecond() / embedded.commitsPerSecond()),
              served ? "-" : pair(r.latencyMicros(50), r.latencyMicros(99)),
              pair(r.stampLatencyMicros(50), r.stampLatencyMicros(99)),
              fmt("%.1fx", r.stampLatencyMicros(50) / embedded.stampLatencyMicros(50))
                  + " / "
                  + fmt("%.1fx", r.stampLatencyMicros(99) / embedded.stampLatencyMicros(99)),
              pair(r.ackLatencyMicros(50), r.ackLatencyMicros(99))));
    }
    CommitBenchmark.printAligned(rows);
    System.out.println(
        "vs embedded = the server's figure / the embedded one of the same cell."
            + " Feed latency = until the feed subscriber received the commit: from durable = from its"
            + " batch becoming durable (in this JVM only); from stamp = from the committer stamping"
            + " it, before the fsync; from ack = from the commit call returning to its committer"
            + " (negative: the subscriber heard first).");
    if (missed > 0) {
      System.out.printf(
          "Note: %d feed events were missed and are not in the latency" + " percentiles.%n",
          missed);
    }
  }

  private static String pair(double p50, double p99) {
    return fmt("%.0f", p50) + " / " + fmt("%.0f", p99);
  }
}
