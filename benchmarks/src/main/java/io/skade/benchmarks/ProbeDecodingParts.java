package io.skade.benchmarks;

import static io.skade.benchmarks.ProbeDecodingBenchmark.THREADS;
import static io.skade.benchmarks.ProbeDecodingBenchmark.fileOf;
import static io.skade.benchmarks.ProbeDecodingBenchmark.keys;
import static io.skade.benchmarks.ProbeDecodingBenchmark.ratio;

import io.skade.lookup.PointLookup;
import io.skade.lookup.ProbeParts;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;

/**
 * The second table of {@link ProbeDecodingBenchmark}: the parts of a probe, hand-written beside
 * parquet-mr, each timed alone: a file's open, a page's header parse, decompression and decoding
 * (and each apart), the bloom hash and test, the sorted-key search over kept pages. Each figure is
 * the best of 5 rounds.
 */
final class ProbeDecodingParts {
  private ProbeDecodingParts() {}

  static void print(
      Table table,
      List<DataFile> files,
      ProbeSide[] warmSides,
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
    ProbeSide.HandWritten hand = (ProbeSide.HandWritten) warmSides[0];
    ProbeSide.ParquetMr mr = (ProbeSide.ParquetMr) warmSides[1];
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
        ParquetMrProbes.CountingFile input =
            new ParquetMrProbes.CountingFile(ProbeSide.localPath(file));
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
    ParquetMrProbes.CountingFile input =
        new ParquetMrProbes.CountingFile(ProbeSide.localPath(file));
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
            byte[] bytes = read(ProbeSide.localPath(file), base, (int) chunk.getTotalSize());
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
      ProbeSide.HandWritten hand, ProbeSide.ParquetMr mr, SplittableRandom random, String format) {
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
      ProbeSide.HandWritten hand,
      ProbeSide.ParquetMr mr,
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
