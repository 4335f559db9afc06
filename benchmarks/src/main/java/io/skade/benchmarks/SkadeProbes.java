package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.LookupStats;
import io.skade.lookup.PointLookup;
import io.skade.testing.S3FaultProxy;
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

  /** Probes over fresh caches, each charged with its own requests, on object storage. */
  static final int COLD_PROBE_COUNT = 500;

  private SkadeProbes() {}

  /**
   * Measures the passes on the table of the catalog of {@code properties}; on object storage {@code
   * proxy} (null otherwise) is the one its files are read through, whose requests each pass is
   * charged with.
   */
  static Properties measure(
      Map<String, String> properties, long rows, long probes, int threads, S3FaultProxy proxy)
      throws Exception {
    Properties out = new Properties();
    long bound = LookupJoinBenchmark.keyBound(rows);
    // Each pass's caches are dropped when it releases them, not kept for a restarted job.
    String kept = LookupCaches.KEPT_PROPERTY;
    String keptBefore = System.getProperty(kept);
    System.setProperty(kept, "0");
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("bench", properties);
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
            proxy,
            out);
      }
      fromEmptyCaches(table, random, bound, probes, threads, proxy, out);
      if (proxy != null) {
        coldProbes(table, random, bound, proxy, out);
      }
    } finally {
      if (keptBefore == null) {
        System.clearProperty(kept);
      } else {
        System.setProperty(kept, keptBefore);
      }
    }
    return out;
  }

  private static void fromEmptyCaches(
      Table table,
      SplittableRandom random,
      long bound,
      long probes,
      int threads,
      S3FaultProxy proxy,
      Properties out)
      throws Exception {
    try (LookupCaches.Handle caches = LookupCaches.acquire()) {
      PointLookup.Counters counters = new PointLookup.Counters();
      PointLookup lookup = new PointLookup(table, List.of("id"), caches.caches(), counters);
      long cold = Math.min(COLD_PROBES, probes);
      pass("cold", lookup, counters, keys(random, bound, cold), proxy, out);
      pass("filling", lookup, counters, keys(random, bound, probes - cold), proxy, out);
      pass("warm", lookup, counters, keys(random, bound, probes), proxy, out);
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

  /**
   * On object storage: {@value #COLD_PROBE_COUNT} probes over fresh caches, each charged with the
   * requests it made (untimed: the proxy's list is copied around each probe). A probe that made any
   * is a cold probe: its file or its page was read for the first time. The very first probe also
   * reads the snapshot's manifests, so it is counted apart. A ranged GET is bounded when it asks
   * for {@code bytes=a-b}; an open-ended one ({@code bytes=a-}, or a suffix) may stream the rest of
   * the file.
   */
  private static void coldProbes(
      Table table, SplittableRandom random, long bound, S3FaultProxy proxy, Properties out) {
    try (LookupCaches.Handle caches = LookupCaches.acquire()) {
      PointLookup lookup =
          new PointLookup(table, List.of("id"), caches.caches(), new PointLookup.Counters());
      long cold = 0;
      long gets = 0;
      long ranged = 0;
      long unbounded = 0;
      long whole = 0;
      long maxRanged = 0;
      long overTarget = 0;
      long firstGets = -1;
      long firstRanged = -1;
      for (long key : keys(random, bound, COLD_PROBE_COUNT)) {
        int before = proxy.requests().size();
        lookup.lookup(null, List.of(key));
        List<S3FaultProxy.Request> all = proxy.requests();
        List<S3FaultProxy.Request> made = all.subList(before, all.size());
        long madeGets = made.stream().filter(r -> r.method().equals("GET")).count();
        long madeRanged = made.stream().filter(S3FaultProxy.Request::rangedGet).count();
        if (firstGets < 0) {
          firstGets = madeGets;
          firstRanged = madeRanged;
          continue;
        }
        if (madeGets > 0) {
          cold++;
          gets += madeGets;
          ranged += madeRanged;
          whole += madeGets - madeRanged;
          unbounded += made.stream().filter(r -> r.rangedGet() && r.rangeLength() < 0).count();
          maxRanged = Math.max(maxRanged, madeRanged);
          if (madeRanged > LookupJoinS3Report.TARGET_COLD_GETS) {
            overTarget++;
          }
        }
      }
      out.setProperty("coldProbe.probes", Long.toString(COLD_PROBE_COUNT - 1));
      out.setProperty("coldProbe.cold", Long.toString(cold));
      out.setProperty("coldProbe.meanGets", Double.toString(cold == 0 ? 0 : (double) gets / cold));
      out.setProperty(
          "coldProbe.meanRangedGets", Double.toString(cold == 0 ? 0 : (double) ranged / cold));
      out.setProperty("coldProbe.maxRangedGets", Long.toString(maxRanged));
      out.setProperty("coldProbe.overTarget", Long.toString(overTarget));
      out.setProperty("coldProbe.unboundedGets", Long.toString(unbounded));
      out.setProperty("coldProbe.wholeGets", Long.toString(whole));
      out.setProperty("coldProbe.firstGets", Long.toString(firstGets));
      out.setProperty("coldProbe.firstRangedGets", Long.toString(firstRanged));
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
      String name,
      PointLookup lookup,
      PointLookup.Counters counters,
      long[] keys,
      S3FaultProxy proxy,
      Properties out) {
    int requestsBefore = proxy == null ? 0 : proxy.requests().size();
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
    out.setProperty(name + ".filesRead", Double.toString(cost.filesRead() / n));
    // The engine's own counters of remote storage, per probe: LookupJoinS3Report prints every
    // "<pass>.stats.*" key it finds.
    out.setProperty(name + ".stats.remoteReads", Double.toString(cost.remoteReads() / n));
    out.setProperty(name + ".stats.remoteBytes", Double.toString(cost.remoteBytes() / n));
    out.setProperty(name + ".stats.diskCacheHits", Double.toString(cost.diskCacheHits() / n));
    out.setProperty(name + ".stats.diskCacheMisses", Double.toString(cost.diskCacheMisses() / n));
    out.setProperty(
        name + ".stats.filesFetchedAhead", Double.toString(cost.filesFetchedAhead() / n));
    if (proxy != null) {
      List<S3FaultProxy.Request> span = proxy.requests();
      span = span.subList(Math.min(requestsBefore, span.size()), span.size());
      long gets = span.stream().filter(r -> r.method().equals("GET")).count();
      long ranged = span.stream().filter(S3FaultProxy.Request::rangedGet).count();
      long bytes =
          span.stream()
              .filter(S3FaultProxy.Request::rangedGet)
              .mapToLong(r -> Math.max(0, r.rangeLength()))
              .sum();
      long open = span.stream().filter(r -> r.rangedGet() && r.rangeLength() < 0).count();
      out.setProperty(name + ".openGets", Double.toString(open / n));
      out.setProperty(name + ".gets", Double.toString(gets / n));
      out.setProperty(name + ".rangedGets", Double.toString(ranged / n));
      out.setProperty(name + ".requests", Double.toString(span.size() / n));
      out.setProperty(name + ".rangedBytes", Double.toString(bytes / n));
    }
  }
}
