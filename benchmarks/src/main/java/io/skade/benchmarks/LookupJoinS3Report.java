package io.skade.benchmarks;

import static io.skade.benchmarks.LookupJoinReport.fmt;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * What {@link LookupJoinBenchmark} prints on object storage after each delay's tables: the requests
 * a probe made (skade's engine alone, cold and warm; each variant's runs in the SQL join), and the
 * targets at that delay, each beside its figure.
 */
final class LookupJoinS3Report {
  /** skade's steady probes/s over Paimon's best, at least. */
  static final double TARGET_THROUGHPUT = 1.5;

  /** Paimon's best start-up cost over skade's, at least. */
  static final double TARGET_START_UP = 10;

  /** Ranged GETs of a cold probe, at most; a warm probe makes none. */
  static final double TARGET_COLD_GETS = 2;

  private LookupJoinS3Report() {}

  static void print(long delay, Properties engine, Map<LookupJoinVariant, Properties> results) {
    System.out.println();
    System.out.printf("requests at %d ms per request:%n", delay);
    if (LookupJoinForks.ok(engine)) {
      for (String pass : List.of("first", "cold", "warm")) {
        System.out.printf(
            "  skade engine alone, %-5s pass: per probe %s GET (%s ranged, of which %s"
                + " open-ended, mostly the manifests Iceberg reads; %s bytes asked by the closed"
                + " ranges), %s requests; read calls %s,"
                + " file opens %s%s%n",
            pass,
            number(engine, pass + ".gets"),
            number(engine, pass + ".rangedGets"),
            number(engine, pass + ".openGets"),
            fmt("%,.0f", parse(engine, pass + ".rangedBytes")),
            number(engine, pass + ".requests"),
            number(engine, pass + ".reads"),
            number(engine, pass + ".opens"),
            engineCounters(engine, pass));
      }
    }
    for (Map.Entry<LookupJoinVariant, Properties> e : results.entrySet()) {
      Properties p = e.getValue();
      if (!LookupJoinForks.ok(p) || p.getProperty("0.gets") == null) {
        continue;
      }
      int runs = Integer.parseInt(p.getProperty("runs"));
      System.out.printf(
          "  %s, SQL join: GETs per probe in each run (the first on a fresh JVM's caches): %s"
              + " (ranged: %s; ranged GETs not bounded bytes=a-b, all runs: %d of data files,"
              + " %d of skade's metadata/ files)%n",
          e.getKey().id,
          IntStream.range(0, runs)
              .mapToObj(i -> perProbe(p, i + ".gets", i + ".rows"))
              .collect(Collectors.joining(", ")),
          IntStream.range(0, runs)
              .mapToObj(i -> perProbe(p, i + ".rangedGets", i + ".rows"))
              .collect(Collectors.joining(", ")),
          IntStream.range(0, runs)
              .mapToLong(i -> Long.parseLong(p.getProperty(i + ".unboundedGets", "0")))
              .sum(),
          IntStream.range(0, runs)
              .mapToLong(i -> Long.parseLong(p.getProperty(i + ".unboundedMetadataGets", "0")))
              .sum());
    }
    targets(delay, engine, results);
  }

  private static void targets(
      long delay, Properties engine, Map<LookupJoinVariant, Properties> results) {
    System.out.printf("targets at %d ms per request:%n", delay);
    List<LookupJoinFigures> paimon =
        results.entrySet().stream()
            .filter(e -> e.getKey().isPaimon() && LookupJoinForks.ok(e.getValue()))
            .map(e -> LookupJoinFigures.of(e.getValue()))
            .toList();
    List<Map.Entry<LookupJoinVariant, Properties>> skade =
        results.entrySet().stream()
            .filter(e -> e.getKey().isSkade() && LookupJoinForks.ok(e.getValue()))
            .toList();
    if (skade.isEmpty() || paimon.isEmpty()) {
      System.out.println(
          "  steady probes/s and start-up cost: n/a (need a skade and a Paimon variant that ran)");
    }
    double paimonRate =
        paimon.stream().mapToDouble(LookupJoinFigures::probesPerSecond).max().orElse(Double.NaN);
    double paimonCost =
        paimon.stream().mapToDouble(LookupJoinFigures::startUpCost).min().orElse(Double.NaN);
    for (Map.Entry<LookupJoinVariant, Properties> e : skade) {
      if (paimon.isEmpty()) {
        break;
      }
      LookupJoinFigures figures = LookupJoinFigures.of(e.getValue());
      double rate = figures.probesPerSecond() / paimonRate;
      System.out.printf(
          "  %s: steady probes/s %s, Paimon's best %s: %sx (target >= %.1fx): %s%n",
          e.getKey().id,
          fmt("%,.0f", figures.probesPerSecond()),
          fmt("%,.0f", paimonRate),
          fmt("%.2f", rate),
          TARGET_THROUGHPUT,
          rate >= TARGET_THROUGHPUT ? "met" : "missed");
      double cost = figures.startUpCost();
      double below = cost <= 0 ? Double.POSITIVE_INFINITY : paimonCost / cost;
      System.out.printf(
          "  %s: start-up cost %s s, Paimon's best %s s: Paimon / skade = %s (target >= %.0fx):"
              + " %s%n",
          e.getKey().id,
          fmt("%.3f", cost),
          fmt("%.3f", paimonCost),
          cost <= 0 ? "skade's within the no-join run's" : fmt("%.1fx", below),
          TARGET_START_UP,
          below >= TARGET_START_UP ? "met" : "missed");
    }
    if (LookupJoinForks.ok(engine) && engine.getProperty("coldProbe.meanRangedGets") != null) {
      double ranged = parse(engine, "coldProbe.meanRangedGets");
      long unbounded = Long.parseLong(engine.getProperty("coldProbe.unboundedGets"));
      long whole = Long.parseLong(engine.getProperty("coldProbe.wholeGets"));
      double warm = parse(engine, "warm.gets");
      boolean met = ranged <= TARGET_COLD_GETS && unbounded == 0 && whole == 0;
      System.out.printf(
          "  a cold probe (skade's engine alone; of %s probes over fresh caches after the first,"
              + " the %s that made a request: the first to read their file or page): mean %s ranged"
              + " GETs (%s GETs in all), at most %s, %s above %.0f; ranged GETs not bounded"
              + " bytes=a-b: %d, GETs of a whole object: %d; the very first probe (the snapshot's"
              + " manifests too) %s GETs, %s ranged (target <= %.0f ranged, bounded): %s%n",
          engine.getProperty("coldProbe.probes"),
          engine.getProperty("coldProbe.cold"),
          fmt("%.2f", ranged),
          fmt("%.2f", parse(engine, "coldProbe.meanGets")),
          engine.getProperty("coldProbe.maxRangedGets"),
          engine.getProperty("coldProbe.overTarget"),
          TARGET_COLD_GETS,
          unbounded,
          whole,
          engine.getProperty("coldProbe.firstGets"),
          engine.getProperty("coldProbe.firstRangedGets"),
          TARGET_COLD_GETS,
          met ? "met" : "missed");
      System.out.printf(
          "  a warm probe: %s GETs (target 0): %s%n",
          fmt("%.4f", warm), warm == 0 ? "met" : "missed");
    } else {
      System.out.println("  GETs per cold and warm probe: n/a (the engine alone did not run)");
    }
  }

  /**
   * The engine's own counters of a pass beyond the file-read ones, as {@code SkadeProbes} stores
   * them ({@code <pass>.stats.<name>}, per probe): remote reads, disk-cache hits, ...
   */
  private static String engineCounters(Properties engine, String pass) {
    String prefix = pass + ".stats.";
    String counters =
        engine.stringPropertyNames().stream()
            .filter(k -> k.startsWith(prefix))
            .sorted()
            .map(k -> k.substring(prefix.length()) + " " + number(engine, k))
            .collect(Collectors.joining(", "));
    return counters.isEmpty() ? "" : "; " + counters;
  }

  private static String perProbe(Properties p, String count, String rows) {
    return fmt(
        "%.3f",
        Double.parseDouble(p.getProperty(count))
            / Math.max(1, Long.parseLong(p.getProperty(rows))));
  }

  private static String number(Properties p, String key) {
    return p.getProperty(key) == null ? "?" : fmt("%.3f", parse(p, key));
  }

  private static double parse(Properties p, String key) {
    return p.getProperty(key) == null ? Double.NaN : Double.parseDouble(p.getProperty(key));
  }
}
