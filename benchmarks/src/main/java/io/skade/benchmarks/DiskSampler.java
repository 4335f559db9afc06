package io.skade.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.stream.Stream;

/**
 * Samples the size of a JVM's two temporary directories, keeping the peaks: Flink's {@code
 * io.tmp.dirs} (all of it, and without Flink's own entries, {@code minicluster_*} and {@code
 * flink-*}: what a lookup puts there) and {@code java.io.tmpdir}, whose {@code skade-lookup-cache*}
 * entries (skade's default lookup disk cache) count as a lookup's too.
 */
final class DiskSampler extends Thread {
  private final Path flinkTmp;
  private final Path jvmTmp;
  private final long millis;
  private volatile boolean running = true;
  private volatile long flinkTmpPeak;
  private volatile long lookupPeak;
  private volatile long jvmTmpPeak;

  DiskSampler(Path flinkTmp, Path jvmTmp, long millis) {
    super("disk-sampler");
    setDaemon(true);
    this.flinkTmp = flinkTmp;
    this.jvmTmp = jvmTmp;
    this.millis = millis;
  }

  @Override
  public void run() {
    while (running) {
      sample();
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void sample() {
    long flinkOwn = 0;
    long all = 0;
    try (Stream<Path> entries = Files.list(flinkTmp)) {
      for (Path entry : entries.toList()) {
        long bytes = size(entry);
        all += bytes;
        String name = entry.getFileName().toString();
        if (name.startsWith("minicluster_") || name.startsWith("flink-")) {
          flinkOwn += bytes;
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // Entries came or went meanwhile: the next sample counts them.
    }
    long diskCache = 0; // skade's default lookup disk cache, in java.io.tmpdir
    try (Stream<Path> entries = Files.list(jvmTmp)) {
      for (Path entry : entries.toList()) {
        if (entry.getFileName().toString().startsWith("skade-lookup-cache")) {
          diskCache += size(entry);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      // as above
    }
    flinkTmpPeak = Math.max(flinkTmpPeak, all);
    lookupPeak = Math.max(lookupPeak, all - flinkOwn + diskCache);
    jvmTmpPeak = Math.max(jvmTmpPeak, size(jvmTmp));
  }

  void finish() throws InterruptedException {
    running = false;
    interrupt();
    join();
    sample();
  }

  /** Peak bytes in Flink's {@code io.tmp.dirs}. */
  long flinkTmpPeak() {
    return flinkTmpPeak;
  }

  /**
   * Peak bytes in Flink's {@code io.tmp.dirs} besides Flink's own entries, and in skade's default
   * lookup disk cache.
   */
  long lookupPeak() {
    return lookupPeak;
  }

  /** Peak bytes in {@code java.io.tmpdir}. */
  long jvmTmpPeak() {
    return jvmTmpPeak;
  }

  /** Bytes of the regular files under {@code dir}; files vanishing meanwhile are skipped. */
  private static long size(Path dir) {
    long[] total = {0};
    try {
      Files.walkFileTree(
          dir,
          new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
              if (attrs.isRegularFile()) {
                total[0] += attrs.size();
              }
              return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
              return FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      // The directory went away: nothing there.
    }
    return total[0];
  }
}
