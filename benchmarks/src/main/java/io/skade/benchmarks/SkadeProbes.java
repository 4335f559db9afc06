package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.LookupStats;
import io.skade.lookup.PointLookup;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * skade's lookup engine alone, without Flink, on {@link SkadeDim}'s table: {@link PointLookup}
 * probes of random keys drawn as the join's probe stream draws them (90% hits). First: a pass of as
 * many probes as the join makes in a fresh JVM, whose caches are then dropped. Cold: the first
 * {@value #COLD_PROBES} probes over fresh caches (files opened, pages read for the first time), the
 * code compiled. Warm: after as many probes as the join makes, as many again. Sync: one thread.
 * Async: {@code threads} threads sharing one lookup, as {@code lookup.async}'s executor runs
 * probes. Runs in the benchmark's skade JVM.
 */
final class SkadeProbes {
  /** Probes measured over fresh caches: most of them read a page for the first time. */
  static final int COLD_PROBES = 2_000;

  private SkadeProbes() {}

  static Properties measure(Path warehouse, long rows, long probes, int threads) throws Exception {
    Properties out = new Properties();
    long bound = LookupJoinBenchmark.keyBound(rows);
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("bench", Map.of("warehouse", warehouse.toString()));
      Table table = catalog.loadTable(TableIdentifier.of(SkadeDim.NAMESPACE, SkadeDim.TABLE));
      SplittableRandom random = new SplittableRandom(42);
      // A first pass compiles the code; its caches are then dropped, so that the cold pass
      // measures cold caches, not a cold JVM.
      try (LookupCaches.Handle first = LookupCaches.acquire()) {
        PointLookup.Counters counters = new PointLookup.Counters();
        pass(
            "first",
            new PointLookup(table, List.of("id"), first.caches(), counters),
            counters,
            keys(random, bound, probes),
            out);
      }
      fromEmptyCaches(table, random, bound, probes, threads, out);
    }
    return out;
  }

  private static void fromEmptyCaches(
      Table table, SplittableRandom random, long bound, long probes, int threads, Properties out)
      throws Exception {
    try (LookupCaches.Handle caches = LookupCaches.acquire()) {
      PointLookup.Counters counters = new PointLookup.Counters();
      PointLookup lookup = new PointLookup(table, List.of("id"), caches.caches(), counters);
      long cold = Math.min(COLD_PROBES, probes);
      pass("cold", lookup, counters, keys(random, bound, cold), out);
      pass("filling", lookup, counters, keys(random, bound, probes - cold), out);
      pass("warm", lookup, counters, keys(random, bound, probes), out);
      // Async: the threads share the lookup and its caches; every page is warm by now.
      long[] keys = keys(random, bound, probes);
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        long started = System.nanoTime();
        List<Future<?>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int first = t;
          parts.add(
              pool.submit(
                  () -> {
                    for (int i = first; i < keys.length; i += threads) {
                      lookup.lookup(null, List.of(keys[i]));
                    }
                  }));
        }
        for (Future<?> part : parts) {
          part.get();
        }
        out.setProperty(
            "async.probesPerSecond",
            Double.toString(keys.length / ((System.nanoTime() - started) / 1e9)));
        out.setProperty("async.threads", Integer.toString(threads));
      } finally {
        pool.shutdownNow();
      }
      System.gc();
      Runtime runtime = Runtime.getRuntime();
      out.setProperty("heapBytes", Long.toString(runtime.totalMemory() - runtime.freeMemory()));
    }
  }

  private static long[] keys(SplittableRandom random, long bound, long count) {
    long[] keys = new long[Math.toIntExact(count)];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = random.nextLong(bound);
    }
    return keys;
  }

  private static void pass(
      String name, PointLookup lookup, PointLookup.Counters counters, long[] keys, Properties out) {
    long[] nanos = new long[keys.length];
    long hits = 0;
    LookupStats before = counters.stats();
    long started = System.nanoTime();
    for (int i = 0; i < keys.length; i++) {
      long start = System.nanoTime();
      hits += lookup.lookup(null, List.of(keys[i])).size();
      nanos[i] = System.nanoTime() - start;
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    LookupStats cost = counters.stats().minus(before);
    Arrays.sort(nanos);
    double n = keys.length;
    out.setProperty(name + ".probesPerSecond", Double.toString(n / seconds));
    out.setProperty(name + ".p50Micros", Double.toString(nanos[keys.length / 2] / 1e3));
    out.setProperty(name + ".p99Micros", Double.toString(nanos[(int) (keys.length * 0.99)] / 1e3));
    out.setProperty(name + ".hitPercent", Double.toString(100.0 * hits / n));
    out.setProperty(name + ".bytes", Double.toString(cost.bytesRead() / n));
    out.setProperty(name + ".reads", Double.toString(cost.readCalls() / n));
    out.setProperty(name + ".opens", Double.toString(cost.fileOpens() / n));
    out.setProperty(name + ".rowsDecoded", Double.toString(cost.rowsDecoded() / n));
  }
}
