package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.lookup.LookupStats;
import io.skade.lookup.PointLookup;
import io.skade.lookup.ProbeParts;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;

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
  private static final com.sun.management.ThreadMXBean THREADS =
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
      SkadeDim.prepare(warehouse, rows, fileCount);
      try (SkadeCatalog catalog = new SkadeCatalog()) {
        catalog.initialize("bench", Map.of("warehouse", warehouse.toString()));
        Table table = catalog.loadTable(TableIdentifier.of(SkadeDim.NAMESPACE, SkadeDim.TABLE));
        run(table, rows, probes);
      }
    } finally {
      try (var paths = Files.walk(work)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
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
    Side[] sides = {new HandWritten(table, files, false), new ParquetMr(table, files, false)};
    verify(sides, keys(random, bound, 2_000), lowest, highest);
    for (Side side : sides) {
      pass(side, keys(random, bound, probes), lowest, highest); // compiles the code
    }
    // The machine is shared: each side's best of three passes, the sides taking turns.
    List<double[]> cold = best(sides, coldKeys, lowest, highest);
    for (Side side : sides) {
      side.close();
    }
    sides = new Side[] {new HandWritten(table, files, true), new ParquetMr(table, files, true)};
    for (Side side : sides) {
      pass(side, warmKeys, lowest, highest); // fills the page cache
    }
    List<double[]> warm = best(sides, warmKeys, lowest, highest);
    printProbes(cold, warm);
    System.out.println();
    parts(table, files, sides, random, lowest, highest, bound);
    for (Side side : sides) {
      side.close();
    }
  }

  private static long lowestId(DataFile file) {
    return Conversions.<Long>fromByteBuffer(Types.LongType.get(), file.lowerBounds().get(1));
  }

  private static long highestId(DataFile file) {
    return Conversions.<Long>fromByteBuffer(Types.LongType.get(), file.upperBounds().get(1));
  }

  private static long[] keys(SplittableRandom random, long bound, int count) {
    long[] keys = new long[count];
    for (int i = 0; i < count; i++) {
      keys[i] = random.nextLong(bound);
    }
    return keys;
  }

  /** The data file whose id range holds {@code key}, or -1. */
  private static int fileOf(long key, long[] lowest, long[] highest) {
    for (int f = 0; f < lowest.length; f++) {
      if (lowest[f] <= key && key <= highest[f]) {
        return f;
      }
    }
    return -1;
  }

  /** One way of probing the table's files. */
  private interface Side extends AutoCloseable {
    String name();

    List<Record> probe(int file, long key) throws IOException;

    /** Read calls, bytes read and rows decoded so far. */
    long[] counts();

    @Override
    void close() throws IOException;
  }

  private static final class HandWritten implements Side {
    final PointLookup.Counters counters = new PointLookup.Counters();
    final ProbeParts[] files;
    final boolean warm;

    HandWritten(Table table, List<DataFile> dataFiles, boolean keepPages) {
      this.warm = keepPages;
      this.files = new ProbeParts[dataFiles.size()];
      for (int f = 0; f < files.length; f++) {
        files[f] = ProbeParts.open(table, dataFiles.get(f), "id", counters, keepPages);
        files[f].indexAll();
      }
    }

    @Override
    public String name() {
      return "hand-written (ProbeFile" + (warm ? ", pages kept)" : ")");
    }

    @Override
    public List<Record> probe(int file, long key) throws IOException {
      return files[file].probe(key);
    }

    @Override
    public long[] counts() {
      LookupStats stats = counters.stats();
      long decoded = 0;
      for (ProbeParts file : files) {
        decoded += file.rowsDecoded();
      }
      return new long[] {stats.readCalls(), stats.bytesRead(), decoded};
    }

    @Override
    public void close() throws IOException {
      for (ProbeParts file : files) {
        file.close();
      }
    }
  }

  private static final class ParquetMr implements Side {
    final ParquetMrProbes.CountingFile[] inputs;
    final ParquetMrProbes[] files;
    final boolean warm;

    ParquetMr(Table table, List<DataFile> dataFiles, boolean cachePages) throws IOException {
      this.warm = cachePages;
      this.inputs = new ParquetMrProbes.CountingFile[dataFiles.size()];
      this.files = new ParquetMrProbes[dataFiles.size()];
      for (int f = 0; f < files.length; f++) {
        inputs[f] = new ParquetMrProbes.CountingFile(localPath(dataFiles.get(f)));
        files[f] = new ParquetMrProbes(inputs[f], table.schema(), cachePages);
        files[f].indexAll();
      }
    }

    @Override
    public String name() {
      return warm ? "parquet-mr (its pages decoded, kept)" : "parquet-mr (column readers)";
    }

    @Override
    public List<Record> probe(int file, long key) throws IOException {
      return files[file].probe(key);
    }

    @Override
    public long[] counts() {
      long reads = 0;
      long bytes = 0;
      long decoded = 0;
      for (int f = 0; f < files.length; f++) {
        reads += inputs[f].reads;
        bytes += inputs[f].bytes;
        decoded += files[f].rowsDecoded();
      }
      return new long[] {reads, bytes, decoded};
    }

    @Override
    public void close() throws IOException {
      for (ParquetMrProbes file : files) {
        file.close();
      }
    }
  }

  private static Path localPath(DataFile file) {
    return Path.of(new org.apache.hadoop.fs.Path(file.location()).toUri().getPath());
  }

  /** Both sides find the same rows for {@code keys}. */
  private static void verify(Side[] sides, long[] keys, long[] lowest, long[] highest)
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
  private static List<double[]> best(Side[] sides, long[] keys, long[] lowest, long[] highest)
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
  private static double[] pass(Side side, long[] keys, long[] lowest, long[] highest)
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

  private static String ratio(double a, double b) {
    return b == 0 ? (a == 0 ? "=" : "-") : String.format("%.2f", a / b);
  }

  private static void parts(
      Table table,
      List<DataFile> files,
      Side[] warmSides,
      SplittableRandom random,
      long[] lowest,
      long[] highest,
      long bound)
      throws Exception {
    String format = "%-50s %14s %14s %8s%n";
    System.out.printf(format, "part", "hand-written", "parquet-mr", "ratio");
    System.out.println("-".repeat(90));
    openParts(table, files, format);
    pageParts(table, files, format);
    HandWritten hand = (HandWritten) warmSides[0];
    ParquetMr mr = (ParquetMr) warmSides[1];
    bloomPart(hand, mr, random, format);
    searchPart(hand, mr, random, lowest, highest, bound, format);
    System.out.println(
        "open: footer, every row group's page indexes and the key's bloom"
            + " filters of a file, on a file the OS has cached; page: header parse, decompression"
            + " (LZ4) and decoding of each page of a row group's column from bytes in memory"
            + " (dictionary decoded once per chunk, not counted); bloom: hash of a long and the"
            + " check; search: row group and page selection by their bounds, the first row not below"
            + " the key in the kept decoded page. Times: the best of 5 rounds; parquet-mr's reads"
            + " through a 4 KB buffer, as Hadoop's local file system reads.");
  }

  private static void openParts(Table table, List<DataFile> files, String format) throws Exception {
    double[][] results = {{Double.MAX_VALUE}, {Double.MAX_VALUE}};
    for (int round = 0; round < 5; round++) { // the fastest round of each counts
      PointLookup.Counters counters = new PointLookup.Counters();
      long allocated = THREADS.getCurrentThreadAllocatedBytes();
      long started = System.nanoTime();
      for (DataFile file : files) {
        try (ProbeParts parts = ProbeParts.open(table, file, "id", counters, false)) {
          parts.indexAll();
        }
      }
      double n = files.size();
      double micros = (System.nanoTime() - started) / 1e3 / n;
      if (micros < results[0][0]) {
        results[0] =
            new double[] {
              micros,
              counters.stats().readCalls() / n,
              counters.stats().bytesRead() / n,
              (THREADS.getCurrentThreadAllocatedBytes() - allocated) / n
            };
      }
      long reads = 0;
      long bytes = 0;
      allocated = THREADS.getCurrentThreadAllocatedBytes();
      started = System.nanoTime();
      for (DataFile file : files) {
        ParquetMrProbes.CountingFile input = new ParquetMrProbes.CountingFile(localPath(file));
        try (ParquetMrProbes mr = new ParquetMrProbes(input, table.schema(), false)) {
          mr.indexAll();
        }
        reads += input.reads;
        bytes += input.bytes;
      }
      micros = (System.nanoTime() - started) / 1e3 / n;
      if (micros < results[1][0]) {
        results[1] =
            new double[] {
              micros,
              reads / n,
              bytes / n,
              (THREADS.getCurrentThreadAllocatedBytes() - allocated) / n
            };
      }
    }
    String[] labels = {
      "open a file: us",
      "open a file: read calls",
      "open a file: bytes read",
      "open a file: bytes allocated"
    };
    for (int i = 0; i < labels.length; i++) {
      System.out.printf(
          format,
          labels[i],
          String.format("%,.1f", results[0][i]),
          String.format("%,.1f", results[1][i]),
          ratio(results[0][i], results[1][i]));
    }
  }

  /** Each page of the first row groups of the first file, per column, decoded from memory. */
  private static void pageParts(Table table, List<DataFile> files, String format) throws Exception {
    DataFile file = files.get(0);
    PointLookup.Counters counters = new PointLookup.Counters();
    ParquetMrProbes.CountingFile input = new ParquetMrProbes.CountingFile(localPath(file));
    try (ProbeParts hand = ProbeParts.open(table, file, "id", counters, true);
        ParquetMrProbes mr = new ParquetMrProbes(input, table.schema(), false)) {
      hand.indexAll();
      ColumnDescriptor[] columns = mr.columns();
      List<BlockMetaData> blocks = mr.reader().getRowGroups();
      int groups = Math.min(8, blocks.size());
      String[] steps = {"header+decompress+decode", "header+decompress", "decode"};
      for (int c = 0; c < columns.length; c++) {
        // [step][side]: the best round's ns per page, and bytes allocated per page
        double[][] best = new double[3][2];
        double[][] allocatedPerPage = new double[3][2];
        for (double[] step : best) {
          java.util.Arrays.fill(step, Double.MAX_VALUE);
        }
        String encodings = "";
        for (int round = 0; round < 5; round++) {
          long[][] nanos = new long[3][2];
          long[][] allocated = new long[3][2];
          int pages = 0;
          for (int g = 0; g < groups; g++) {
            BlockMetaData block = blocks.get(g);
            ColumnChunkMetaData chunk = block.getColumns().get(c);
            OffsetIndex index = mr.reader().readOffsetIndex(chunk);
            long base = chunk.getStartingPos();
            byte[] bytes = read(localPath(file), base, (int) chunk.getTotalSize());
            Dictionary dictionary = ParquetMrProbes.dictionary(columns[c], chunk, bytes, base);
            hand.loadRowGroup(g);
            int handColumn =
                hand.column(table.schema().findField(columns[c].getPath()[0]).fieldId());
            hand.decodePage(handColumn, 0); // its dictionary, decoded once, as parquet-mr's
            encodings = chunk.getEncodings().toString();
            int count = index.getPageCount();
            Object[] handPages = new Object[count];
            ParquetMrProbes.Decompressed[] mrPages = new ParquetMrProbes.Decompressed[count];
            for (int step = 0; step < 3; step++) {
              for (int side = 0; side < 2; side++) {
                long before = THREADS.getCurrentThreadAllocatedBytes();
                long started = System.nanoTime();
                for (int p = 0; p < count; p++) {
                  long offset = index.getOffset(p);
                  int length = index.getCompressedPageSize(p);
                  if (side == 0) {
                    switch (step) {
                      case 0 -> hand.decodePage(handColumn, p);
                      case 1 -> handPages[p] = hand.decompressPage(handColumn, p);
                      default -> hand.decodeDecompressed(handColumn, handPages[p]);
                    }
                  } else {
                    switch (step) {
                      case 0 ->
                          ParquetMrProbes.decode(
                              columns[c],
                              ParquetMrProbes.decompress(chunk, bytes, base, offset, length),
                              dictionary);
                      case 1 ->
                          mrPages[p] =
                              ParquetMrProbes.decompress(chunk, bytes, base, offset, length);
                      default -> ParquetMrProbes.decode(columns[c], mrPages[p], dictionary);
                    }
                  }
                }
                nanos[step][side] += System.nanoTime() - started;
                allocated[step][side] += THREADS.getCurrentThreadAllocatedBytes() - before;
              }
            }
            pages += count;
          }
          for (int step = 0; step < 3; step++) {
            for (int side = 0; side < 2; side++) {
              best[step][side] = Math.min(best[step][side], (double) nanos[step][side] / pages);
              allocatedPerPage[step][side] = (double) allocated[step][side] / pages;
            }
          }
        }
        String name = columns[c].getPath()[0];
        System.out.printf(
            format,
            "page "
                + name
                + " "
                + columns[c].getPrimitiveType().getPrimitiveTypeName()
                + " "
                + encodings,
            "",
            "",
            "");
        for (int step = 0; step < 3; step++) {
          System.out.printf(
              format,
              "  " + steps[step] + ": ns",
              String.format("%,.0f", best[step][0]),
              String.format("%,.0f", best[step][1]),
              ratio(best[step][0], best[step][1]));
          System.out.printf(
              format,
              "  " + steps[step] + ": bytes allocated",
              String.format("%,.0f", allocatedPerPage[step][0]),
              String.format("%,.0f", allocatedPerPage[step][1]),
              ratio(allocatedPerPage[step][0], allocatedPerPage[step][1]));
        }
      }
    }
  }

  private static byte[] read(Path path, long position, int length) throws IOException {
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      ByteBuffer buffer = ByteBuffer.allocate(length);
      while (buffer.hasRemaining()) {
        if (channel.read(buffer, position + buffer.position()) < 0) {
          throw new IOException(path + " is shorter than expected");
        }
      }
      return buffer.array();
    }
  }

  /** The key bloom filters of every row group of every file, asked for random keys. */
  private static void bloomPart(
      HandWritten hand, ParquetMr mr, SplittableRandom random, String format) {
    long[] keys = keys(random, 1L << 40, 100_000);
    long[] hashes = new long[keys.length];
    double[][] best = {{Double.MAX_VALUE, Double.MAX_VALUE}, {Double.MAX_VALUE, Double.MAX_VALUE}};
    long[] admitted = new long[2];
    BloomFilter[][] filters = new BloomFilter[mr.files.length][];
    for (int f = 0; f < mr.files.length; f++) {
      filters[f] = new BloomFilter[hand.files[f].rowGroups()];
      for (int g = 0; g < filters[f].length; g++) {
        filters[f][g] = mr.files[f].keyBloom(g);
      }
    }
    long sum = 0;
    for (int round = 0; round < 5; round++) {
      long started = System.nanoTime();
      for (long key : keys) {
        sum += ProbeParts.bloomHash(key);
      }
      best[0][0] = Math.min(best[0][0], (double) (System.nanoTime() - started) / keys.length);
      BloomFilter any = filters[0][0];
      started = System.nanoTime();
      for (int i = 0; i < keys.length; i++) {
        hashes[i] = any.hash(keys[i]);
      }
      best[0][1] = Math.min(best[0][1], (double) (System.nanoTime() - started) / keys.length);
      int checks = 0;
      admitted[0] = 0;
      started = System.nanoTime();
      for (int f = 0; f < hand.files.length; f++) {
        int groups = filters[f].length;
        for (int i = 0; i < keys.length; i += 7) {
          admitted[0] += hand.files[f].bloomAdmits(i % groups, 0, hashes[i]) ? 1 : 0;
          checks++;
        }
      }
      best[1][0] = Math.min(best[1][0], (double) (System.nanoTime() - started) / checks);
      admitted[1] = 0;
      started = System.nanoTime();
      for (int f = 0; f < mr.files.length; f++) {
        int groups = filters[f].length;
        for (int i = 0; i < keys.length; i += 7) {
          admitted[1] += filters[f][i % groups].findHash(hashes[i]) ? 1 : 0;
        }
      }
      best[1][1] = Math.min(best[1][1], (double) (System.nanoTime() - started) / checks);
    }
    if (admitted[0] != admitted[1] || ProbeParts.bloomHash(keys[0]) != hashes[0] || sum == 42) {
      throw new IllegalStateException(
          "the bloom checks differ: "
              + admitted[0]
              + " admitted by"
              + " the hand-written one, "
              + admitted[1]
              + " by parquet-mr's");
    }
    System.out.printf(
        format,
        "bloom hash of a long: ns",
        String.format("%.1f", best[0][0]),
        String.format("%.1f", best[0][1]),
        ratio(best[0][0], best[0][1]));
    System.out.printf(
        format,
        "bloom test of a hash: ns",
        String.format("%.1f", best[1][0]),
        String.format("%.1f", best[1][1]),
        ratio(best[1][0], best[1][1]));
  }

  /** The first row not below a key, over kept pages (the warm sides). */
  private static void searchPart(
      HandWritten hand,
      ParquetMr mr,
      SplittableRandom random,
      long[] lowest,
      long[] highest,
      long bound,
      String format)
      throws IOException {
    long[] keys = keys(random, bound, 50_000);
    for (long key : keys) { // both keep the pages the keys reach
      int f = fileOf(key, lowest, highest);
      if (f >= 0 && hand.files[f].search(key) != mr.files[f].search(key)) {
        throw new IllegalStateException("key " + key + ": the searches differ");
      }
    }
    double[] best = {Double.MAX_VALUE, Double.MAX_VALUE};
    double[] allocatedPer = new double[2];
    for (int round = 0; round < 5; round++) {
      for (int side = 0; side < 2; side++) {
        long allocated = THREADS.getCurrentThreadAllocatedBytes();
        long started = System.nanoTime();
        long sum = 0;
        for (long key : keys) {
          int f = fileOf(key, lowest, highest);
          if (f >= 0) {
            sum += side == 0 ? hand.files[f].search(key) : mr.files[f].search(key);
          }
        }
        best[side] = Math.min(best[side], (double) (System.nanoTime() - started) / keys.length);
        allocatedPer[side] =
            (double) (THREADS.getCurrentThreadAllocatedBytes() - allocated) / keys.length;
        if (sum == 42) {
          System.out.print(""); // keeps the sum alive
        }
      }
    }
    System.out.printf(
        format,
        "sorted-key search (kept pages): ns",
        String.format("%,.0f", best[0]),
        String.format("%,.0f", best[1]),
        ratio(best[0], best[1]));
    System.out.printf(
        format,
        "sorted-key search: bytes allocated",
        String.format("%,.0f", allocatedPer[0]),
        String.format("%,.0f", allocatedPer[1]),
        ratio(allocatedPer[0], allocatedPer[1]));
  }
}
