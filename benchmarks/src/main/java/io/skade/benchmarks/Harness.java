package io.skade.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * What every harness of this module does around its figures, done one way: logs kept quiet, the
 * header line naming the machine, its load, and the deletion of a run's warehouse.
 */
final class Harness {
  private Harness() {}

  /**
   * Keeps the tables readable unless told otherwise (a system property already set wins): every
   * logger at WARN, {@code loggersAtError} at ERROR.
   */
  static void quietLogs(String... loggersAtError) {
    System.getProperties().putIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    for (String logger : loggersAtError) {
      System.getProperties().putIfAbsent("org.slf4j.simpleLogger.log." + logger, "error");
    }
  }

  /** Prints the first line of a harness's output: {@code title}, the JVM, its cores, heap, date. */
  static void printHeader(String title) {
    System.out.printf(
        "%s | JVM %s | cores %d | max heap %d MiB | %s%n",
        title,
        System.getProperty("java.runtime.version"),
        Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() >> 20,
        ZonedDateTime.now());
  }

  /**
   * {@code argument}, a JVM option of this harness, for a JVM it forks under {@code name}: a flight
   * recording asked of the harness is taken in each forked JVM, to a file of its own.
   */
  static String forChild(String argument, String name) {
    return argument.replaceFirst(
        "(-XX:StartFlightRecording.*filename=[^,]*)\\.jfr", "$1-" + name + ".jfr");
  }

  /** The median, NaN values (rates of runs within one ms) left out; NaN if none is left. */
  static double median(double[] values) {
    double[] sorted = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
    int n = sorted.length;
    return n == 0
        ? Double.NaN
        : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /**
   * The machine's load average over 1, 5 and 15 minutes, for the header: on 2 cores, another
   * process's build can halve the figures.
   */
  static String loadAverage() {
    try {
      String[] fields = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return fields[0] + " " + fields[1] + " " + fields[2];
    } catch (IOException | RuntimeException e) {
      return "n/a"; // not Linux
    }
  }

  /** Deletes a benchmark's warehouse {@code root}, so that runs do not fill the disk. */
  static void deleteTree(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete benchmark warehouse " + root, e);
    }
  }
}
