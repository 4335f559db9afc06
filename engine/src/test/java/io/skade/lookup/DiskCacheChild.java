package io.skade.lookup;

import io.skade.testing.S3Server;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.FileIO;

/**
 * A process probing a table on S3 through a disk cache whose directory another process uses too:
 * args {@code <metadata location> <S3 endpoint> <disk cache dir> <disk cache bytes> <seed> <probes>
 * <files> <rows per file>}. It prints {@code ready}, waits for a line, probes random keys and
 * prints {@code done <wrong answers> <disk-cache hits> <disk-cache misses>}, then the wrong
 * answers, one a line. Its keys come from a pool the same in every process, so the processes read
 * (and evict) the same ranges.
 */
public final class DiskCacheChild {
  private DiskCacheChild() {}

  public static void main(String[] args) throws Exception {
    S3Server.relaxChecksums(); // before the SDK reads its settings
    Map<String, String> props = S3Server.fileIoProperties(URI.create(args[1]));
    FileIO io = CatalogUtil.loadFileIO(props.get("io-impl"), props, null);
    Table table = new BaseTable(new StaticTableOperations(args[0], io), "dim");
    LookupCaches caches = new LookupCaches(1L << 30);
    caches.useDiskCache(new DiskCache(Path.of(args[2]), Long.parseLong(args[3])));
    Random random = new Random(Long.parseLong(args[4]));
    int probes = Integer.parseInt(args[5]);
    int files = Integer.parseInt(args[6]);
    int rows = Integer.parseInt(args[7]);
    System.out.println("ready");
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    StringBuilder wrong = new StringBuilder();
    int mismatches = 0;
    PointLookup.Counters counters = new PointLookup.Counters();
    // Both processes probe keys of one pool (hits and misses), so they share ranges.
    Random pooled = new Random(7);
    long[] pool = new long[80];
    for (int k = 0; k < pool.length; k++) {
      pool[k] = pooled.nextInt(2 * files * rows + 10) - 5;
    }
    for (int i = 0; i < probes; i++) {
      // A fresh lookup (and in-memory cache) now and then: its reads go to the disk cache.
      if (i % 30 == 0) {
        caches = new LookupCaches(1L << 30);
        caches.useDiskCache(new DiskCache(Path.of(args[2]), Long.parseLong(args[3])));
      }
      PointLookup lookup = new PointLookup(table, List.of("id"), caches, counters);
      long key = pool[random.nextInt(pool.length)];
      List<String> found =
          IcebergReference.sortedCanonical(lookup.lookup(null, List.of(key)), S3Tables.SCHEMA);
      if (!found.equals(S3Tables.expected(key, files, rows))) {
        mismatches++;
        wrong.append(key).append(" -> ").append(found).append('\n');
      }
    }
    LookupStats stats = counters.stats();
    System.out.println(
        "done " + mismatches + " " + stats.diskCacheHits() + " " + stats.diskCacheMisses());
    System.out.print(wrong);
    System.out.flush();
    io.close();
  }
}
