package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.lookup.ProbeParts;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

/**
 * The lookup engine's hand-written Parquet read for point lookups ({@code ProbeFile}, through
 * {@link ProbeParts}) beside parquet-mr doing the same work ({@link ParquetMrProbes}), on the table
 * {@link LookupJoinBenchmark} probes ({@link SkadeDim}: sorted by id, 250-row pages, LZ4, bloom
 * filters on id, page indexes), in one JVM, one thread. Keys are random (90% hits); each probe goes
 * to the one data file whose id range admits it (both sides), with every file open (footer and page
 * indexes in memory) and its bloom filters read.
 *
 * <p>Whole probes: cold (no page cache: a probe's pages are read and decoded each time) and warm
 * (every page the keys need decoded and kept): probes/s, bytes and read calls, bytes allocated,
 * rows decoded per probe. Then the parts that decide which hand-written code stays: a file's open
 * (tail: footer, page indexes, bloom filters), a page's header parse + decompression + decoding
 * from bytes in memory (per column), the bloom check, the sorted-key search over kept pages. Ratios
 * are hand-written / parquet-mr (above 1: hand-written costs more, or is faster for probes/s).
 *
 * <p>System properties: {@code skade.bench.rows} [1000000], {@code skade.bench.files} [32], {@code
 * skade.bench.probes} per pass [20000].
 */
public final class ProbeDecodingBenchmark {
  static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** Passes or rounds per figure, of which the best counts: the machine may be shared. */
  private static final int ROUNDS = 3;

  private ProbeDecodingBenchmark() {}

  public static void main(String[] args) throws Exception {
    long rows = Long.getLong("skade.bench.rows", 1_000_000);
    int fileCount = Integer.getInteger("skade.bench.files", 32);
    int probes = Integer.getInteger("skade.bench.probes", 20_000);
    Path work = Files.createTempDirectory("skade-probe-decoding");
    try {
      Path warehouse = work.resolve("warehouse");
      SkadeDim.prepare(Map.of("warehouse", warehouse.toString()), rows, fileCount);
      try (SkadeCatalog catalog = new SkadeCatalog()) {
        catalog.initialize("bench", Map.of("warehouse", warehouse.toString()));
        Table table = catalog.loadTable(TableIdentifier.of(SkadeDim.NAMESPACE, SkadeDim.TABLE));
        run(table, rows, probes);
      }
    } finally {
      Harness.deleteTree(work);
    }
  }

  private static void run(Table table, long rows, int probes) throws Exception {
    List<DataFile> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().includeColumnStats().planFiles()) {
      tasks.forEach(task -> files.add(task.file()));
    }
    files.sort(Comparator.comparingLong(ProbeDecodingBenchmark::lowestId));
    long[] lowest = files.stream().mapToLong(ProbeDecodingBenchmark::lowestId).toArray();
    long[] highest = files.stream().mapToLong(ProbeDecodingBenchmark::highestId).toArray();
    long bound = LookupJoinBenchmark.keyBound(rows);
    System.out.printf(
        "ProbeDecodingBenchmark: %,d rows in %d Parquet files (sorted by id, 250-row"
            + " pages, LZ4, bloom filters on id, page indexes), %,d random keys per pass (%.0f%%"
            + " hits), one thread, files open%n%n",
        rows, files.size(), probes, 100.0 * rows / bound);

    SplittableRandom random = new SplittableRandom(7);
    long[] coldKeys = keys(random, bound, probes);
    long[] warmKeys = keys(random, bound, probes);
    ProbeSide[] sides = {
      new ProbeSide.HandWritten(table, files, false), new ProbeSide.ParquetMr(table, files, false)
    };
    verify(sides, keys(random, bound, 2_000), lowest, highest);
    for (ProbeSide side : sides) {
      pass(side, keys(random, bound, probes), lowest, highest); // compiles the code
    }
    // The machine is shared: each side's best of three passes, the sides taking turns.
    List<double[]> cold = best(sides, coldKeys, lowest, highest);
    for (ProbeSide side : sides) {
      side.close();
    }
    sides =
        new ProbeSide[] {
          new ProbeSide.HandWritten(table, files, true), new ProbeSide.ParquetMr(table, files, true)
        };
    for (ProbeSide side : sides) {
      pass(side, warmKeys, lowest, highest); // fills the page cache
    }
    List<double[]> warm = best(sides, warmKeys, lowest, highest);
    printProbes(cold, warm);
    System.out.println();
    ProbeDecodingParts.print(table, files, sides, random, lowest, highest, bound);
    for (ProbeSide side : sides) {
      side.close();
    }
  }

  private static long lowestId(DataFile file) {
    return Conversions.<Long>fromByteBuffer(Types.LongType.get(), file.lowerBounds().get(1));
  }

  private static long highestId(DataFile file) {
    return Conversions.<Long>fromByteBuffer(Types.LongType.get(), file.upperBounds().get(1));
  }

  static long[] keys(SplittableRandom random, long bound, int count) {
    long[] keys = new long[count];
    for (int i = 0; i < count; i++) {
      keys[i] = random.nextLong(bound);
    }
    return keys;
  }

  /** The data file whose id range holds {@code key}, or -1. */
  static int fileOf(long key, long[] lowest, long[] highest) {
    for (int f = 0; f < lowest.length; f++) {
      if (lowest[f] <= key && key <= highest[f]) {
        return f;
      }
    }
    return -1;
  }

  /** Both sides find the same rows for {@code keys}. */
  private static void verify(ProbeSide[] sides, long[] keys, long[] lowest, long[] highest)
      throws IOException {
    for (long key : keys) {
      int file = fileOf(key, lowest, highest);
      if (file < 0) {
        continue;
      }
      String expected = sides[0].probe(file, key).toString();
      String other = sides[1].probe(file, key).toString();
      if (!expected.equals(other) || expected.equals("[]")) {
        throw new IllegalStateException(
            "key "
                + key
                + ": "
                + sides[0].name()
                + " found "
                + expected
                + ", "
                + sides[1].name()
                + " "
                + other);
      }
    }
  }

  /** Each side's pass of the most probes/s of {@value #ROUNDS}, the sides taking turns. */
  private static List<double[]> best(ProbeSide[] sides, long[] keys, long[] lowest, long[] highest)
      throws IOException {
    List<double[]> best = new ArrayList<>(List.of(new double[] {0}, new double[] {0}));
    for (int round = 0; round < ROUNDS; round++) {
      for (int s = 0; s < sides.length; s++) {
        double[] figures = pass(sides[s], keys, lowest, highest);
        if (figures[0] > best.get(s)[0]) {
          best.set(s, figures);
        }
      }
    }
    return best;
  }

  /** probes/s, bytes/probe, reads/probe, allocated bytes/probe, rows decoded/probe, hits. */
  private static double[] pass(ProbeSide side, long[] keys, long[] lowest, long[] highest)
      throws IOException {
    long[] before = side.counts();
    long allocated = THREADS.getCurrentThreadAllocatedBytes();
    long hits = 0;
    long started = System.nanoTime();
    for (long key : keys) {
      int file = fileOf(key, lowest, highest);
      if (file >= 0) {
        hits += side.probe(file, key).size();
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    allocated = THREADS.getCurrentThreadAllocatedBytes() - allocated;
    long[] after = side.counts();
    double n = keys.length;
    return new double[] {
      n / seconds,
      (after[1] - before[1]) / n,
      (after[0] - before[0]) / n,
      allocated / n,
      (after[2] - before[2]) / n,
      100.0 * hits / n
    };
  }

  private static void printProbes(List<double[]> cold, List<double[]> warm) {
    String format = "%-44s %10s %10s %8s %12s %10s %6s%n";
    System.out.printf(
        format,
        "whole probe (per probe)",
        "probes/s",
        "bytes",
        "reads",
        "alloc bytes",
        "rows dec.",
        "hits%");
    System.out.println("-".repeat(108));
    String[] names = {"hand-written (ProbeFile)", "parquet-mr (readFilteredRowGroup+readers)"};
    for (String phase : List.of("cold", "warm")) {
      List<double[]> figures = phase.equals("cold") ? cold : warm;
      for (int s = 0; s < 2; s++) {
        double[] f = figures.get(s);
        System.out.printf(
            format,
            phase + ": " + names[s] + (phase.equals("warm") && s == 1 ? ", +cache" : ""),
            String.format("%,.0f", f[0]),
            String.format("%,.0f", f[1]),
            String.format("%.3f", f[2]),
            String.format("%,.0f", f[3]),
            String.format("%.1f", f[4]),
            String.format("%.1f", f[5]));
      }
      double[] a = figures.get(0);
      double[] b = figures.get(1);
      System.out.printf(
          format,
          phase + ": ratio hand-written / parquet-mr",
          ratio(a[0], b[0]),
          ratio(a[1], b[1]),
          ratio(a[2], b[2]),
          ratio(a[3], b[3]),
          ratio(a[4], b[4]),
          "");
    }
    System.out.println(
        "cold: no page cache (each probe reads and decodes its pages; files open,"
            + " page indexes and bloom filters in memory); warm: every page the keys need decoded"
            + " and kept (parquet-mr: pages from its PageReaders decoded by its ValuesReaders, kept"
            + " by this harness, the kept key page scanned). Each side's best of "
            + ROUNDS
            + " passes over the same keys.");
  }

  static String ratio(double a, double b) {
    return b == 0 ? (a == 0 ? "=" : "-") : String.format("%.2f", a / b);
  }
}
