package io.skade.lookup;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The lookup law ({@link PointLookupLawTest}) on a warehouse in S3: a seeded history per key space,
 * shorter than the local one, each probe's rows equal to Iceberg's own reading of that snapshot.
 * Files are read in byte ranges, through a disk cache bounded far below what the probes read, so
 * ranges are evicted and read again while the history runs.
 */
class PointLookupOnS3LawTest {
  private static final long SEED = 20260611L;

  @TempDir static Path dir;
  static S3Tables s3;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3Tables.start(dir, "law");
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(PointLookupLawTest.KeySpace.class)
  void aProbeOnS3ReturnsExactlyTheRowsIcebergReadsForItsKeyAtItsSnapshot(
      PointLookupLawTest.KeySpace keys) {
    PointLookupLawTest law = new PointLookupLawTest();
    law.caches = LookupCaches.acquire();
    try {
      law.caches.caches().useDiskCache(new DiskCache(dir.resolve("disk-" + keys), 256L << 10));
      long started = System.nanoTime();
      PointLookupLawTest.History history = law.new History(s3.catalog, keys, SEED);
      history.run(8, 60, 500);
      history.report((System.nanoTime() - started) / 1_000_000);
    } finally {
      law.caches.close();
      s3.catalog.dropTable(PointLookupLawTest.ID, false);
    }
  }
}
