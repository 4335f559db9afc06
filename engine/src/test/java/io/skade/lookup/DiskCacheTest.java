package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk cache of byte ranges on its own: a read inside a kept range is served from it, the least
 * recently used range goes first past the bound, a damaged range is never served, and another
 * instance over the same directory (another process) finds what this one wrote.
 */
class DiskCacheTest {
  private static final String FILE = DiskCache.fileKey("s3://bucket/data/a.parquet", 4096);

  @TempDir Path dir;

  @Test
  void aReadInsideAKeptRangeIsServedAndOneBeyondItIsAMiss() {
    DiskCache cache = new DiskCache(dir, 1 << 20);
    cache.write(FILE, 100, bytes(100, 50));

    byte[] inside = new byte[10];
    assertThat(cache.read(FILE, 120, inside)).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(inside).isEqualTo(bytes(120, 10));
    assertThat(cache.read(FILE, 140, new byte[20])).isEqualTo(DiskCache.Outcome.MISS);
    assertThat(cache.read(FILE, 90, new byte[20])).isEqualTo(DiskCache.Outcome.MISS);
    assertThat(cache.read(DiskCache.fileKey("s3://bucket/data/a.parquet", 4097), 120, inside))
        .as("the same location with another length is another file")
        .isEqualTo(DiskCache.Outcome.MISS);
  }

  @Test
  void pastTheBoundTheLeastRecentlyUsedRangeIsEvicted() {
    DiskCache cache = new DiskCache(dir, 3 * (100 + 8));
    cache.write(FILE, 0, bytes(0, 100));
    cache.write(FILE, 1000, bytes(1000, 100));
    cache.write(FILE, 2000, bytes(2000, 100));
    assertThat(cache.read(FILE, 0, new byte[100])).isEqualTo(DiskCache.Outcome.HIT); // used
    cache.write(FILE, 3000, bytes(3000, 100)); // over the bound: 1000 was used least recently

    assertThat(cache.read(FILE, 1000, new byte[100])).isEqualTo(DiskCache.Outcome.MISS);
    assertThat(cache.read(FILE, 0, new byte[100])).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(cache.read(FILE, 2000, new byte[100])).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(cache.read(FILE, 3000, new byte[100])).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(cache.bytes()).isEqualTo(3 * (100 + 8));
    assertThat(rangeFiles()).hasSize(3);
  }

  @Test
  void aDamagedRangeIsAMissAndIsDropped() throws IOException {
    DiskCache cache = new DiskCache(dir, 1 << 20);
    cache.write(FILE, 0, bytes(0, 64));
    Path range = rangeFiles().get(0);
    byte[] damaged = Files.readAllBytes(range);
    damaged[10] ^= 1;
    Files.write(range, damaged);

    assertThat(cache.read(FILE, 0, new byte[64])).isEqualTo(DiskCache.Outcome.MISS);
    assertThat(rangeFiles()).isEmpty();
    assertThat(cache.bytes()).isZero();
  }

  @Test
  void anotherInstanceOverTheDirectoryFindsTheRangesWrittenBeforeAndAfterItOpened() {
    DiskCache first = new DiskCache(dir, 1 << 20);
    first.write(FILE, 0, bytes(0, 64));
    DiskCache second = new DiskCache(dir, 1 << 20); // knows the range from its scan
    first.write(FILE, 500, bytes(500, 64)); // learnt on its miss

    byte[] into = new byte[64];
    assertThat(second.read(FILE, 0, into)).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(into).isEqualTo(bytes(0, 64));
    assertThat(second.read(FILE, 500, into)).isEqualTo(DiskCache.Outcome.HIT);
    assertThat(into).isEqualTo(bytes(500, 64));
  }

  @Test
  void aRangeTheOtherInstanceEvictedIsAMissHere() {
    DiskCache first = new DiskCache(dir, 1 << 20);
    first.write(FILE, 0, bytes(0, 64));
    DiskCache second = new DiskCache(dir, 64 + 8);
    second.write(FILE, 100, bytes(100, 64)); // evicts the range first wrote, on disk

    assertThat(first.read(FILE, 0, new byte[64])).isEqualTo(DiskCache.Outcome.MISS);
    assertThat(first.read(FILE, 100, new byte[64])).isEqualTo(DiskCache.Outcome.HIT);
  }

  private List<Path> rangeFiles() {
    try (Stream<Path> paths = Files.walk(dir)) {
      return paths.filter(path -> path.toString().endsWith(".range")).toList();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The bytes a file holds at {@code [start, start + length)}: each its offset's low byte. */
  private static byte[] bytes(long start, int length) {
    byte[] bytes = new byte[length];
    for (int i = 0; i < length; i++) {
      bytes[i] = (byte) (start + i);
    }
    return bytes;
  }
}
