package io.skade.benchmarks;

import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Prints the commit throughput of {@code SkadeCatalog}'s group-commit path, side by side for 1, 4,
 * 16 and 64 concurrent committers, and how far its fsyncs are coalesced.
 *
 * <p>Each cell opens a fresh catalog in a temporary warehouse (deleted afterwards), gives every
 * committer thread its own table (so no commit ever conflicts), and makes a fixed number of commits
 * of one workload: pointer-only (a table rename: the committer's compare-and-swap alone, no Iceberg
 * files), metadata-only ({@code updateProperties}) or a fast append of a small Parquet file. The
 * two workloads that write files also run with Hadoop's own local file system, beside skade's
 * ({@code SkadeLocalFileSystem}). A subscriber thread measures, for every commit, the time from its
 * batch becoming durable to the subscriber receiving it. One warm-up pass of each workload precedes
 * the measured cells. It asserts nothing; it prints figures.
 *
 * <p>Then contended cells ({@link ContendedRun}): 1, 4 and 16 writers appending small Parquet files
 * to the same 1 or 4 tables of one group-commit catalog, round-robin, with the tables' default
 * commit retries: commits that succeeded and failed, successful commits/s, append-call latency p50,
 * p99 and max, commit attempts per successful commit, and a warning where a table's snapshot count
 * differs from the commits to it that succeeded.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.pointerCommits} pointer-only
 * commits per cell [2000], {@code skade.bench.commits} metadata-only commits per cell [300], {@code
 * skade.bench.appendCommits} append commits per cell [150], {@code skade.bench.committers}
 * comma-separated committer counts [1,4,16,64], {@code skade.bench.warmupCommits} commits per
 * workload in the warm-up [100], {@code skade.bench.uncontended} whether to run the cells of a
 * table per committer [true] (false: the warm-up, then the contended cells alone); the contended
 * cells' properties are {@link ContendedRun}'s.
 */
public final class CommitBenchmark {
  /**
   * Kept to errors, for readable tables: Iceberg logs every commit at INFO, and every retry of a
   * contended commit at WARN with a stack trace (the contended table counts them).
   */
  static final String ICEBERG_COMMIT_LOGGER = "org.apache.iceberg.util.Tasks";

  private CommitBenchmark() {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs(ICEBERG_COMMIT_LOGGER);
    int pointerCommits = Integer.getInteger("skade.bench.pointerCommits", 2000);
    int metadataCommits = Integer.getInteger("skade.bench.commits", 300);
    int appendCommits = Integer.getInteger("skade.bench.appendCommits", 150);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 100);
    int[] committerCounts = ints("skade.bench.committers", "1,4,16,64");
    boolean uncontended =
        Boolean.parseBoolean(System.getProperty("skade.bench.uncontended", "true"));

    printHeader("skade commit benchmark");
    System.out.println(
        "WAL syncs per commit < 1 means group commit coalesced fsyncs"
            + " (several commits made durable by one fsync). Each cell runs side by side:"
            + " 'fsync per commit' (commit.max-batch-size=1, the design without group commit) and"
            + " 'group commit'; 'vs fsync/commit' is the ratio of their commits/s. Workloads that"
            + " write files also run 'group, Hadoop FS': group commit with files written through"
            + " Hadoop's own local file system, which starts a chmod process per file.");
    System.out.printf(
        "Per cell: fresh warehouse, one table per committer; %d pointer-only / %d"
            + " metadata-only / %d append commits; feed latency = batch durable -> subscriber"
            + " received.%n",
        pointerCommits, metadataCommits, appendCommits);

    // Warm-up: JIT, class loading, Hadoop/Parquet initialisation; results discarded.
    for (Workload workload : Workload.values()) {
      for (CommitRun.Design design : designs(workload)) {
        CommitRun.run(workload, design, 4, warmupCommits);
      }
    }

    if (uncontended) {
      printUncontended(pointerCommits, metadataCommits, appendCommits, committerCounts);
    }
    ContendedRun.section(List.of(CommitRun::contended));
  }

  /** The cells of a table per committer, then their table. */
  private static void printUncontended(
      int pointerCommits, int metadataCommits, int appendCommits, int[] committerCounts)
      throws Exception {
    List<CommitRun.Result> results = new ArrayList<>();
    for (Workload workload : Workload.values()) {
      int commits =
          switch (workload) {
            case POINTER_ONLY -> pointerCommits;
            case METADATA_ONLY -> metadataCommits;
            case APPEND -> appendCommits;
          };
      for (int committers : committerCounts) {
        // Side by side in one run: the previous designs, then skade's.
        for (CommitRun.Design design : designs(workload)) {
          results.add(CommitRun.run(workload, design, committers, commits));
        }
      }
    }
    System.out.println();
    printTable(results);
    printLocalFileSystemRatios(results);
  }

  /** The designs a workload runs in; files are written only by the metadata and append ones. */
  private static List<CommitRun.Design> designs(Workload workload) {
    return workload == Workload.POINTER_ONLY
        ? List.of(CommitRun.Design.FSYNC_PER_COMMIT, CommitRun.Design.GROUP_COMMIT)
        : List.of(
            CommitRun.Design.GROUP_COMMIT_HADOOP_LOCAL_FS,
            CommitRun.Design.FSYNC_PER_COMMIT,
            CommitRun.Design.GROUP_COMMIT);
  }

  /** Group commit with skade's local file system beside the same with Hadoop's, per cell. */
  private static void printLocalFileSystemRatios(List<CommitRun.Result> results) {
    System.out.println();
    System.out.println(
        "Files through SkadeLocalFileSystem vs Hadoop's local file system (a chmod"
            + " process per file), group commit, commits/s:");
    for (CommitRun.Result hadoop : results) {
      if (hadoop.design() != CommitRun.Design.GROUP_COMMIT_HADOOP_LOCAL_FS) {
        continue;
      }
      results.stream()
          .filter(
              r ->
                  r.design() == CommitRun.Design.GROUP_COMMIT
                      && r.workload() == hadoop.workload()
                      && r.committers() == hadoop.committers())
          .forEach(
              skade ->
                  System.out.printf(
                      Locale.ROOT,
                      "  %-28s %2d committers: %6.0f vs %6.0f = %.2fx%n",
                      hadoop.workload().label(),
                      hadoop.committers(),
                      skade.commitsPerSecond(),
                      hadoop.commitsPerSecond(),
                      skade.commitsPerSecond() / hadoop.commitsPerSecond()));
    }
  }

  private static void printTable(List<CommitRun.Result> results) {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        CommitRun.Result.header(
            "vs fsync/commit",
            "WAL syncs",
            "WAL syncs/commit",
            "batches/commit",
            "feed p50 (µs)",
            "feed p99 (µs)"));
    long missed = 0;
    CommitRun.Result baseline = null;
    for (CommitRun.Result r : results) {
      missed += r.feedEventsMissed();
      if (r.design() == CommitRun.Design.FSYNC_PER_COMMIT) {
        baseline = r;
      }
      rows.add(
          r.cells(
              r.design().label,
              switch (r.design()) {
                case FSYNC_PER_COMMIT -> "1.00x";
                case GROUP_COMMIT ->
                    fmt("%.2fx", r.commitsPerSecond() / baseline.commitsPerSecond());
                case GROUP_COMMIT_HADOOP_LOCAL_FS, SERVER -> "-";
              },
              Long.toString(r.walSyncs()),
              fmt("%.3f", (double) r.walSyncs() / r.commits()),
              fmt("%.3f", (double) r.batches() / r.commits()),
              fmt("%.0f", r.latencyMicros(50)),
              fmt("%.0f", r.latencyMicros(99))));
    }
    printAligned(rows);
    if (missed > 0) {
      System.out.printf(
          "Note: %d feed events were dropped by subscriber lag and are not in the"
              + " latency percentiles.%n",
          missed);
    }
  }

  /**
   * Prints {@code rows} (the first the header, underlined) in columns, the first left-aligned, the
   * others right-aligned so their digits line up.
   */
  static void printAligned(List<String[]> rows) {
    int[] widths = new int[rows.get(0).length];
    for (String[] row : rows) {
      for (int c = 0; c < row.length; c++) {
        widths[c] = Math.max(widths[c], row[c].length());
      }
    }
    for (int i = 0; i < rows.size(); i++) {
      String[] row = rows.get(i);
      StringBuilder line = new StringBuilder();
      for (int c = 0; c < row.length; c++) {
        // Workload left-aligned, figures right-aligned so their digits line up.
        String cell = c == 0 ? pad(row[c], widths[c], false) : pad(row[c], widths[c], true);
        line.append(c == 0 ? "" : "  ").append(cell);
      }
      System.out.println(line.toString().stripTrailing());
      if (i == 0) {
        System.out.println("-".repeat(line.toString().stripTrailing().length()));
      }
    }
  }

  /** Prints the commit benchmarks' first line: {@code title}, the JVM, cores, load and date. */
  static void printHeader(String title) {
    System.out.printf(
        "%s | JVM: %s %s (%s) | cores: %d | load average: %s | date: %s%n",
        title,
        System.getProperty("java.vm.name"),
        System.getProperty("java.runtime.version"),
        System.getProperty("java.vm.vendor"),
        Runtime.getRuntime().availableProcessors(),
        Harness.loadAverage(),
        ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
  }

  /** The comma-separated integers of system property {@code property}, or of {@code defaults}. */
  static int[] ints(String property, String defaults) {
    return Arrays.stream(System.getProperty(property, defaults).split(","))
        .map(String::trim)
        .mapToInt(Integer::parseInt)
        .toArray();
  }

  static String fmt(String format, double value) {
    return String.format(Locale.ROOT, format, value);
  }

  private static String pad(String s, int width, boolean right) {
    String fill = " ".repeat(width - s.length());
    return right ? fill + s : s + fill;
  }
}
