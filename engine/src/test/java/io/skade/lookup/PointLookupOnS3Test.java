package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.testing.ChildJvm;
import io.skade.testing.S3FaultProxy;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Point lookups on a table in S3 (a real S3 server behind a proxy that counts requests), measured
 * against the files' layout: opening a file is one bounded ranged GET of its tail (footer, page
 * indexes and bloom filters), a cold probe one more of its key's pages, a warm probe none; a fresh
 * lookup over the disk cache another one filled reads nothing remote; a file a commit adds is
 * opened ahead, so its first probe is one ranged GET; probes of one file on many threads read at
 * once and are exact.
 */
class PointLookupOnS3Test {
  private static final int FILES = 2;
  private static final int ROWS_PER_FILE = 20_000;

  @TempDir static Path dir;
  static S3Tables s3;
  static Table table;
  static List<DataFile> files;

  @BeforeAll
  static void writeTwoFiles() throws Exception {
    s3 = S3Tables.start(dir, "lookups");
    table = s3.createTable("dim");
    for (int f = 0; f < FILES; f++) {
      S3Tables.appendFile(table, f, ROWS_PER_FILE);
    }
    files = new ArrayList<>();
    for (var task : table.newScan().includeColumnStats().planFiles()) {
      files.add(task.file());
    }
    files.sort((a, b) -> Long.compare(lowerId(a), lowerId(b)));
    assertThat(files).hasSize(FILES);
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  @Test
  void aColdProbeIsATailGetAndAPageGetOfTheRangesTheLayoutImpliesAndAWarmProbeNone()
      throws Exception {
    PointLookup.Counters counters = new PointLookup.Counters();
    PointLookup lookup =
        new PointLookup(table, List.of("id"), new LookupCaches(1L << 30), counters);
    probe(lookup, -1); // plans the snapshot's files (manifests), opens none
    for (int f = 0; f < FILES; f++) {
      DataFile file = files.get(f);
      Layout layout = Layout.of(file, table);
      int i = 7_777 + f;
      long key = S3Tables.id(f, i, ROWS_PER_FILE);
      s3.proxy.clearRequests();
      assertThat(probe(lookup, key)).isEqualTo(S3Tables.expected(key, FILES, ROWS_PER_FILE));

      List<S3FaultProxy.Request> requests = s3.proxy.requests();
      assertThat(requests).as("requests of a cold probe of %s", key).allSatisfy(this::bounded);
      assertThat(requests).allSatisfy(r -> assertThat(r.path()).endsWith(name(file)));
      assertThat(requests.stream().map(S3FaultProxy.Request::rangeLength).toList())
          .as("the tail (footer, indexes, blooms), then the key's pages in every column")
          .containsExactly(layout.tailLength(), layout.pageRegion(i));
      assertThat(layout.tailLength())
          .isGreaterThanOrEqualTo(file.fileSizeInBytes() - layout.indexStart);

      s3.proxy.clearRequests();
      LookupStats before = counters.stats();
      assertThat(probe(lookup, key)).isEqualTo(S3Tables.expected(key, FILES, ROWS_PER_FILE));
      assertThat(s3.proxy.requests()).as("requests of a warm probe").isEmpty();
      assertThat(counters.stats().minus(before).remoteReads()).isZero();
    }
    LookupStats stats = counters.stats();
    assertThat(stats.remoteReads()).isEqualTo(2L * FILES);
    assertThat(stats.remoteBytes()).isEqualTo(stats.bytesRead());
  }

  @Test
  void aFreshLookupOverTheDiskCacheAnotherFilledReadsNothingRemote() throws Exception {
    Path disk = dir.resolve("disk-cache-fresh");
    List<Long> keys = new ArrayList<>();
    for (int f = 0; f < FILES; f++) {
      for (int i : List.of(3, 9_001, 19_999)) {
        keys.add(S3Tables.id(f, i, ROWS_PER_FILE));
        keys.add(S3Tables.id(f, i, ROWS_PER_FILE) + 1); // a miss inside the file
      }
    }
    PointLookup.Counters first = new PointLookup.Counters();
    LookupCaches filling = new LookupCaches(1L << 30);
    filling.useDiskCache(new DiskCache(disk, 64L << 20));
    for (long key : keys) {
      assertThat(probe(new PointLookup(table, List.of("id"), filling, first), key))
          .isEqualTo(S3Tables.expected(key, FILES, ROWS_PER_FILE));
    }
    assertThat(first.stats().diskCacheMisses()).isEqualTo(first.stats().remoteReads()).isPositive();
    assertThat(first.stats().diskCacheMissBytes()).isEqualTo(first.stats().remoteBytes());

    // Another process's view: caches in memory empty, the disk cache opened afresh over the dir.
    PointLookup.Counters second = new PointLookup.Counters();
    LookupCaches fresh = new LookupCaches(1L << 30);
    fresh.useDiskCache(new DiskCache(disk, 64L << 20));
    PointLookup lookup = new PointLookup(table, List.of("id"), fresh, second);
    probe(lookup, -1); // plans the snapshot's files: metadata, not data files
    s3.proxy.clearRequests();
    for (long key : keys) {
      assertThat(probe(lookup, key)).isEqualTo(S3Tables.expected(key, FILES, ROWS_PER_FILE));
    }
    assertThat(s3.proxy.requests()).isEmpty();
    LookupStats stats = second.stats();
    assertThat(stats.remoteReads()).isZero();
    assertThat(stats.diskCacheMisses()).isZero();
    assertThat(stats.diskCacheHits()).isEqualTo(stats.readCalls()).isPositive();
    assertThat(stats.diskCacheHitBytes()).isEqualTo(stats.bytesRead());
  }

  @Test
  void aFileACommitAddsIsOpenedAheadAndItsFirstProbeIsOneRangedGet() throws Exception {
    Table growing = s3.createTable("growing");
    S3Tables.appendFile(growing, 0, ROWS_PER_FILE);
    try (CatalogConnection connection = CatalogConnection.of(s3.catalog);
        LookupCaches.Handle caches = LookupCaches.acquire();
        TableLookup<Record> lookup =
            new TableLookup<>(
                connection,
                org.apache.iceberg.catalog.TableIdentifier.of("db", "growing"),
                new TableLookup.Settings(
                    List.of("id"),
                    null,
                    Duration.ofHours(1),
                    TableLookup.Caching.PROBE,
                    0,
                    Expressions.alwaysTrue(),
                    0),
                caches.caches(),
                t -> Function.identity())) {
      long old = S3Tables.id(0, 5, ROWS_PER_FILE);
      assertThat(canonical(lookup.lookup(List.of(old))))
          .isEqualTo(S3Tables.expected(old, 1, ROWS_PER_FILE));
      assertThat(lookup.stats().filesFetchedAhead()).isZero();

      S3Tables.appendFile(growing, 1, ROWS_PER_FILE);
      Awaitility.await("the new file opened ahead")
          .atMost(Duration.ofSeconds(30))
          .until(() -> lookup.stats().filesFetchedAhead() == 1);
      s3.proxy.clearRequests();
      LookupStats before = lookup.stats();
      long added = S3Tables.id(1, 12_345, ROWS_PER_FILE);
      assertThat(canonical(lookup.lookup(List.of(added))))
          .isEqualTo(S3Tables.expected(added, 2, ROWS_PER_FILE));

      List<S3FaultProxy.Request> requests = s3.proxy.requests();
      assertThat(requests).as("requests of the new file's first probe").hasSize(1);
      assertThat(requests).allSatisfy(this::bounded);
      LookupStats cost = lookup.stats().minus(before);
      assertThat(cost.fileOpens()).isZero();
      assertThat(cost.remoteReads()).isEqualTo(1);
      assertThat(cost.remoteBytes()).isEqualTo(requests.get(0).rangeLength());
    }
  }

  @Test
  void probesOfOneFileOnManyThreadsReadAtOnceAndAreExact() throws Exception {
    int threads = 8;
    long delay = 250;
    PointLookup lookup =
        new PointLookup(
            table, List.of("id"), new LookupCaches(1L << 30), new PointLookup.Counters());
    probe(lookup, S3Tables.id(0, 0, ROWS_PER_FILE)); // the file open, its pages not read
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      // Each thread a key of another row group, all at once, every request held by the proxy:
      // read one after the other, no two would ever be held at the same time.
      s3.proxy.clearRequests();
      s3.proxy.delay(delay);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Boolean>> right = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        long key = S3Tables.id(0, 2_000 * (t + 1), ROWS_PER_FILE);
        right.add(
            pool.submit(
                () -> {
                  start.await();
                  return probe(lookup, key).equals(S3Tables.expected(key, FILES, ROWS_PER_FILE));
                }));
      }
      start.countDown();
      for (Future<Boolean> answer : right) {
        assertThat(answer.get()).isTrue();
      }
      s3.proxy.delay(0);
      assertThat(s3.proxy.mostHeldAtOnce())
          .as("requests of %d probes out at the same time", threads)
          .isGreaterThan(1);

      // Many probes of random keys, on cold and warm pages, on every thread at once.
      List<Future<List<String>>> wrong = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Random random = new Random(t);
        wrong.add(
            pool.submit(
                () -> {
                  List<String> mismatches = new ArrayList<>();
                  for (int i = 0; i < 300; i++) {
                    long key = random.nextInt(2 * FILES * ROWS_PER_FILE + 10) - 5;
                    List<String> rows = probe(lookup, key);
                    if (!rows.equals(S3Tables.expected(key, FILES, ROWS_PER_FILE))) {
                      mismatches.add(key + " -> " + rows);
                    }
                  }
                  return mismatches;
                }));
      }
      for (Future<List<String>> mismatches : wrong) {
        assertThat(mismatches.get()).isEmpty();
      }
    } finally {
      s3.proxy.delay(0);
      pool.shutdownNow();
    }
  }

  @Test
  void twoProcessesProbingThroughOneDiskCacheDirectoryAnswerRight() throws Exception {
    Path disk = dir.resolve("disk-shared");
    String metadata =
        ((org.apache.iceberg.HasTableOperations) table)
            .operations()
            .current()
            .metadataFileLocation();
    List<ChildJvm> children = new ArrayList<>();
    try {
      for (int seed = 1; seed <= 2; seed++) {
        children.add(
            ChildJvm.start(
                DiskCacheChild.class,
                dir.resolve("child-" + seed + ".err"),
                Duration.ofMinutes(2),
                metadata,
                s3.s3.endpoint().toString(),
                disk.toString(),
                String.valueOf(700L << 10), // below what they read: each evicts the other's
                String.valueOf(seed),
                "150",
                String.valueOf(FILES),
                String.valueOf(ROWS_PER_FILE)));
      }
      for (ChildJvm child : children) {
        child.await("ready");
      }
      for (ChildJvm child : children) {
        child.send("go");
      }
      long hits = 0;
      for (ChildJvm child : children) {
        String[] done = child.lineStartingWith("done ").split(" ");
        assertThat(Long.parseLong(done[1]))
            .as("wrong answers; the child's stderr:\n%s", child.stderr())
            .isZero();
        hits += Long.parseLong(done[2]);
      }
      assertThat(hits).as("reads the shared disk cache served").isPositive();
    } finally {
      for (ChildJvm child : children) {
        child.close();
      }
    }
  }

  private void bounded(S3FaultProxy.Request request) {
    assertThat(request.rangedGet()).as("%s is a ranged GET", request).isTrue();
    assertThat(request.rangeLength()).as("%s asks for a bounded range", request).isPositive();
  }

  private static List<String> probe(PointLookup lookup, long key) {
    return canonical(lookup.lookup(null, List.of(key)));
  }

  private static List<String> canonical(List<Record> rows) {
    return IcebergReference.sortedCanonical(rows, S3Tables.SCHEMA);
  }

  private static String name(DataFile file) {
    String location = file.location();
    return location.substring(location.lastIndexOf('/') + 1);
  }

  private static long lowerId(DataFile file) {
    return org.apache.iceberg.types.Conversions.fromByteBuffer(
        org.apache.iceberg.types.Types.LongType.get(), file.lowerBounds().get(1));
  }

  /** A data file's layout, from its footer as parquet-mr reads it (from a local copy). */
  private record Layout(
      long length, long indexStart, List<BlockMetaData> groups, List<OffsetIndex[]> offsets) {
    static Layout of(DataFile file, Table table) throws Exception {
      Path copy = Files.createTempFile(dir, "layout", ".parquet");
      try (InputStream in = table.io().newInputFile(file.location()).newStream()) {
        Files.copy(in, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      try (ParquetFileReader reader =
          ParquetFileReader.open(
              HadoopInputFile.fromPath(
                  new org.apache.hadoop.fs.Path(copy.toUri()), new Configuration()))) {
        long indexStart = file.fileSizeInBytes();
        List<OffsetIndex[]> offsets = new ArrayList<>();
        for (BlockMetaData group : reader.getFooter().getBlocks()) {
          OffsetIndex[] columns = new OffsetIndex[group.getColumns().size()];
          for (int c = 0; c < columns.length; c++) {
            ColumnChunkMetaData chunk = group.getColumns().get(c);
            columns[c] = reader.readOffsetIndex(chunk);
            indexStart = Math.min(indexStart, chunk.getOffsetIndexReference().getOffset());
            indexStart = Math.min(indexStart, chunk.getColumnIndexReference().getOffset());
            if (chunk.getBloomFilterOffset() >= 0) {
              indexStart = Math.min(indexStart, chunk.getBloomFilterOffset());
            }
          }
          offsets.add(columns);
        }
        return new Layout(
            file.fileSizeInBytes(), indexStart, reader.getFooter().getBlocks(), offsets);
      }
    }

    /** The first read on open: the file's last {@link ProbeFile#REMOTE_TAIL} bytes. */
    long tailLength() {
      return Math.min(length, ProbeFile.REMOTE_TAIL);
    }

    /**
     * The one read of a cold probe of row {@code row}: in its row group, the pages of every column
     * over the rows of the key column's page holding it, and each column's dictionary; read as one
     * range, as they lie closer than {@link FileBytes#MAX_GAP}.
     */
    long pageRegion(long row) {
      int g = 0;
      while (row >= groups.get(g).getRowCount()) {
        row -= groups.get(g).getRowCount();
        g++;
      }
      BlockMetaData group = groups.get(g);
      OffsetIndex key = offsets.get(g)[0];
      int p = 0;
      while (p + 1 < key.getPageCount() && key.getFirstRowIndex(p + 1) <= row) {
        p++;
      }
      long from = key.getFirstRowIndex(p);
      long to = key.getLastRowIndex(p, group.getRowCount()) + 1;
      long start = Long.MAX_VALUE;
      long end = 0;
      for (int c = 0; c < group.getColumns().size(); c++) {
        ColumnChunkMetaData chunk = group.getColumns().get(c);
        OffsetIndex pages = offsets.get(g)[c];
        for (int q = 0; q < pages.getPageCount(); q++) {
          if (pages.getFirstRowIndex(q) < to
              && pages.getLastRowIndex(q, group.getRowCount()) >= from) {
            start = Math.min(start, pages.getOffset(q));
            end = Math.max(end, pages.getOffset(q) + pages.getCompressedPageSize(q));
          }
        }
        if (chunk.hasDictionaryPage() && chunk.getStartingPos() < chunk.getFirstDataPageOffset()) {
          start = Math.min(start, chunk.getStartingPos());
        }
      }
      assertThat(end - start).as("the pages lie within one read").isLessThan(64L << 10);
      return end - start;
    }
  }
}
