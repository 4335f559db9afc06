package io.skade.benchmarks;

import static io.skade.benchmarks.CommitBenchmark.fmt;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.stream.StreamSupport;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The contended cells of the commit benchmarks: W writers appending to the same T tables, where
 * {@link CommitRun}'s cells give every committer a table of its own. Writer w's i-th commit is an
 * append of a small Parquet file ({@link Workload#APPEND}) to table (w + i) % T; the writers are
 * let go at once and each makes the same number of commits, with the tables' default commit retries
 * (whatever the catalog gives). Each writer loads its {@code Table}s once, through the catalog it
 * commits with: in this JVM the cell's one catalog (skade's defaults, group commit); on a server, a
 * {@code RESTCatalog} of its own. A commit that fails, e.g. with Iceberg's {@code
 * CommitFailedException} once its retries are used up, is counted and the writer goes on.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.contendedWriters} comma-separated
 * writer counts [1,4,16], {@code skade.bench.contendedTables} comma-separated table counts [1,4],
 * {@code skade.bench.contendedCommits} commits per writer [30].
 */
final class ContendedRun {

  /**
   * Figures of one cell. Latencies, sorted, are those of the successful append calls; the reported
   * attempts and commits are what the catalog's commits told {@link CommitAttemptsReporter} (no
   * commits where it was not told). Warnings name each table whose snapshot count differs from the
   * commits to it that succeeded.
   */
  record Result(
      String where,
      int writers,
      int tables,
      int attempted,
      int succeeded,
      long elapsedNanos,
      long[] sortedLatencyNanos,
      long reportedAttempts,
      long reportedCommits,
      Throwable firstFailure,
      List<String> warnings) {

    int failed() {
      return attempted - succeeded;
    }

    String cell() {
      return where + ", W=" + writers + ", T=" + tables;
    }
  }

  /** Runs a contended cell somewhere: in this JVM, or through a server. */
  @FunctionalInterface
  interface Where {
    Result run(int writers, int tables, int commitsPerWriter) throws Exception;
  }

  private ContendedRun() {}

  /**
   * Runs the contended section: a cell per writer count and table count (the system properties), at
   * each of {@code wheres} side by side, then prints their table.
   */
  static void section(List<Where> wheres) throws Exception {
    int[] writerCounts = CommitBenchmark.ints("skade.bench.contendedWriters", "1,4,16");
    int[] tableCounts = CommitBenchmark.ints("skade.bench.contendedTables", "1,4");
    int commits = Integer.getInteger("skade.bench.contendedCommits", 30);
    System.out.println();
    System.out.printf(
        "Contended commits: W writers append a small Parquet file each (TableWriter.append) to the"
            + " same T tables, writer w's i-th commit to table (w + i) %% T, %d commits per"
            + " writer, all let go at once, with the tables' default commit retries. Each writer"
            + " loads its tables once: 'embedded' = one catalog in this JVM (group commit) that"
            + " all writers share; 'server, REST' (through a server) = a RESTCatalog per writer."
            + " A failed commit is counted and the writer goes on.%n",
        commits);
    List<Result> results = new ArrayList<>();
    for (int writers : writerCounts) {
      for (int tables : tableCounts) {
        for (Where where : wheres) {
          results.add(where.run(writers, tables, commits));
        }
      }
    }
    print(results);
    System.out.println("Load average at the end: " + Harness.loadAverage());
  }

  /** Runs one contended cell on {@code cell}, which is fresh: its tables are made here. */
  static Result measure(CommitRun.Cell cell, String where, int writers, int tables, int commits)
      throws Exception {
    // Setup is untimed: the tables, then each writer's Table objects, which it keeps.
    Catalog[] clients = new Catalog[writers];
    for (int w = 0; w < writers; w++) {
      clients[w] = cell.client(w);
    }
    for (int t = 0; t < tables; t++) {
      clients[0].createTable(cell.tableId(t), Workload.SCHEMA);
    }
    IntConsumer[][] appends = new IntConsumer[writers][tables];
    for (int w = 0; w < writers; w++) {
      for (int t = 0; t < tables; t++) {
        TableIdentifier id = cell.tableId(t);
        appends[w][t] = Workload.APPEND.committerFor(clients[w], id, clients[w].loadTable(id), w);
      }
    }

    int[][] succeeded = new int[writers][tables];
    long[][] latencies = new long[writers][commits];
    int[] done = new int[writers];
    AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    AtomicReference<Throwable> crash = new AtomicReference<>();
    CommitAttemptsReporter.reset();
    long elapsed =
        CommitRun.together(
            writers,
            "bench-writer-",
            w -> {
              for (int i = 0; i < commits; i++) {
                int t = (w + i) % tables;
                long start = System.nanoTime();
                try {
                  appends[w][t].accept(i);
                } catch (RuntimeException e) {
                  // Losing a race for good is what the cell measures: count it, go on.
                  firstFailure.compareAndSet(null, e);
                  continue;
                }
                latencies[w][done[w]++] = System.nanoTime() - start;
                succeeded[w][t]++;
              }
            },
            crash);
    if (crash.get() != null) {
      throw new IllegalStateException(where + " contended cell crashed", crash.get());
    }

    List<String> warnings = new ArrayList<>();
    for (int t = 0; t < tables; t++) {
      int expected = 0;
      for (int w = 0; w < writers; w++) {
        expected += succeeded[w][t];
      }
      // Fresh from the catalog: an append the writer was told failed may still have landed.
      TableIdentifier id = cell.tableId(t);
      long snapshots =
          StreamSupport.stream(clients[0].loadTable(id).snapshots().spliterator(), false).count();
      if (snapshots != expected) {
        warnings.add(
            String.format(
                "table %s has %d snapshots, but %d commits to it succeeded",
                id, snapshots, expected));
      }
    }
    long[] sorted = new long[Arrays.stream(done).sum()];
    int n = 0;
    for (int w = 0; w < writers; w++) {
      System.arraycopy(latencies[w], 0, sorted, n, done[w]);
      n += done[w];
    }
    Arrays.sort(sorted);
    return new Result(
        where,
        writers,
        tables,
        writers * commits,
        sorted.length,
        elapsed,
        sorted,
        CommitAttemptsReporter.attempts(),
        CommitAttemptsReporter.commits(),
        firstFailure.get(),
        warnings);
  }

  private static void print(List<Result> results) {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {
          "where",
          "writers",
          "tables",
          "commits",
          "succeeded",
          "failed",
          "seconds",
          "succeeded/s",
          "p50 (ms)",
          "p99 (ms)",
          "max (ms)",
          "attempts/commit"
        });
    for (Result r : results) {
      double seconds = r.elapsedNanos() / 1e9;
      long[] sorted = r.sortedLatencyNanos();
      rows.add(
          new String[] {
            r.where(),
            Integer.toString(r.writers()),
            Integer.toString(r.tables()),
            Integer.toString(r.attempted()),
            Integer.toString(r.succeeded()),
            Integer.toString(r.failed()),
            fmt("%.2f", seconds),
            fmt("%.1f", r.succeeded() / seconds),
            fmt("%.1f", CommitRun.micros(sorted, 50) / 1e3),
            fmt("%.1f", CommitRun.micros(sorted, 99) / 1e3),
            sorted.length == 0 ? "NaN" : fmt("%.1f", sorted[sorted.length - 1] / 1e6),
            r.reportedCommits() == 0
                ? "-"
                : fmt("%.2f", (double) r.reportedAttempts() / r.reportedCommits())
          });
    }
    CommitBenchmark.printAligned(rows);
    System.out.println(
        "Latency = each successful append call (writing its Parquet file, then the commit with"
            + " Iceberg's retries). attempts/commit = attempts over the commits that succeeded, as"
            + " their CommitReports tell ('-': the catalog reported none).");
    for (Result r : results) {
      if (r.firstFailure() != null) {
        System.out.printf(
            "%s: %d failed; the first: %s: %s%n",
            r.cell(),
            r.failed(),
            r.firstFailure().getClass().getName(),
            String.valueOf(r.firstFailure().getMessage()).replaceAll("\\s+", " "));
      }
      for (String warning : r.warnings()) {
        System.out.println("WARNING " + r.cell() + ": " + warning);
      }
    }
  }
}
