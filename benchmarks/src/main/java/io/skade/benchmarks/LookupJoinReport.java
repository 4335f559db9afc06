package io.skade.benchmarks;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The tables {@link LookupJoinBenchmark} prints from what its forked JVMs reported: the tables
 * written, skade's engine alone, the variants side by side with each run's figures, and skade's
 * figures against Paimon's best.
 */
final class LookupJoinReport {
  private LookupJoinReport() {}

  static String describePrepared(Properties p, String table) {
    if (!"ok".equals(p.getProperty("status"))) {
      return "failed: " + p.getProperty("message");
    }
    String k = table.isEmpty() ? "" : table + ".";
    StringBuilder s = new StringBuilder();
    s.append(p.getProperty(k + "rows"))
        .append(" rows in ")
        .append(p.getProperty(k + "dataFiles"))
        .append(" data files, ")
        .append(mib(Long.parseLong(p.getProperty(k + "dataBytes", "0"))))
        .append(" MiB");
    if (!table.isEmpty()) {
      s.append("; bucket option ")
          .append(p.getProperty(k + "bucketOption"))
          .append(" -> bucket mode ")
          .append(p.getProperty(k + "bucketMode"))
          .append(", buckets ")
          .append(p.getProperty(k + "buckets"))
          .append(", LSM levels ")
          .append(p.getProperty(k + "levels"))
          .append(", format ")
          .append(p.getProperty(k + "fileFormat"));
    } else {
      s.append("; ").append(p.getProperty("layout"));
    }
    s.append(fmt(" (written in %.1f s", Double.parseDouble(p.getProperty("seconds", "0"))))
        .append(p.getProperty("reused") != null ? " by an earlier run, reused)" : ")");
    return s.toString();
  }

  /** The engine's figures (SkadeProbes): cold and warm sync passes, then async threads. */
  static void printEngine(Properties p, long probes) {
    if (p == null) {
      return;
    }
    System.out.println();
    if (!LookupJoinForks.ok(p)) {
      System.out.println("skade engine: failed: " + p.getProperty("message"));
      return;
    }
    System.out.printf(
        "skade's lookup engine alone (PointLookup, no Flink), random keys (90%%"
            + " hits), per probe:%n");
    String format = "%-28s %10s %9s %9s %10s %10s %8s %9s%n";
    System.out.printf(
        format,
        "pass",
        "probes/s",
        "p50 us",
        "p99 us",
        "bytes",
        "read calls",
        "opens",
        "rows dec.");
    System.out.println("-".repeat(100));
    for (String pass : List.of("first", "cold", "warm")) {
      System.out.printf(
          format,
          switch (pass) {
            case "first" -> "sync, fresh JVM: " + fmt("%,d", probes);
            case "cold" -> "sync, cold: first " + fmt("%,d", SkadeProbes.COLD_PROBES);
            default -> "sync, warm: " + fmt("%,d", probes);
          },
          rate(Double.parseDouble(p.getProperty(pass + ".probesPerSecond"))),
          fmt("%.1f", Double.parseDouble(p.getProperty(pass + ".p50Micros"))),
          fmt("%.1f", Double.parseDouble(p.getProperty(pass + ".p99Micros"))),
          fmt("%,.0f", Double.parseDouble(p.getProperty(pass + ".bytes"))),
          fmt("%.3f", Double.parseDouble(p.getProperty(pass + ".reads"))),
          fmt("%.4f", Double.parseDouble(p.getProperty(pass + ".opens"))),
          fmt("%.1f", Double.parseDouble(p.getProperty(pass + ".rowsDecoded"))));
    }
    System.out.printf(
        format,
        "async " + p.getProperty("async.threads") + " threads, warm",
        rate(Double.parseDouble(p.getProperty("async.probesPerSecond"))),
        "",
        "",
        "",
        "",
        "",
        "");
    System.out.println(
        "fresh JVM: the first pass, code not yet compiled, its caches then"
            + " dropped; cold: the first probes over fresh caches (files opened, most pages read the"
            + " first time); warm: after as many probes as the join makes, as many again; async:"
            + " threads sharing one lookup, as lookup.async runs probes, warm. Heap used after the"
            + " passes and a GC (page cache included): "
            + mib(p, "heapBytes")
            + " MiB.");
  }

  static void print(Map<LookupJoinVariant, Properties> results, long rows, long probes) {
    Map<LookupJoinVariant, LookupJoinFigures> figures = new LinkedHashMap<>();
    results.forEach(
        (v, p) -> {
          if (LookupJoinForks.ok(p)) {
            figures.put(v, LookupJoinFigures.of(p));
          }
        });
    int runs = LookupJoinBenchmark.runs();
    System.out.println();
    System.out.printf(
        "Medians of %d runs per JVM (after one warm-up job), each paired with a"
            + " no-join run; hits, memory and disk over all runs.%n",
        runs);
    String format = "%-29s %9s %9s %9s %8s %18s %9s %9s %9s %9s%n";
    System.out.printf(
        format,
        "variant",
        "first row",
        "start-up",
        "probes/s",
        "total",
        "hits",
        "heap peak",
        "live heap",
        "RSS peak",
        "lookup");
    System.out.printf(
        format, "", "s", "cost s", "steady", "s", "(% of rows)", "MiB", "MiB", "MiB", "disk MiB");
    System.out.println("-".repeat(130));
    for (Map.Entry<LookupJoinVariant, Properties> e : results.entrySet()) {
      LookupJoinVariant v = e.getKey();
      Properties p = e.getValue();
      LookupJoinFigures f = figures.get(v);
      if (f == null) {
        System.out.printf("%-29s failed: %s%n", v.label, p.getProperty("message"));
        continue;
      }
      LookupJoinFigures.Run firstRun = f.runs().get(0);
      System.out.printf(
          format,
          v.label,
          fmt("%.2f", f.firstRow()),
          fmt("%.2f", f.startUpCost()),
          rate(f.probesPerSecond()),
          fmt("%.2f", f.total()),
          !v.joinsData()
              ? "-"
              : fmt("%,d", firstRun.hits())
                  + fmt(" (%.1f%%)", 100.0 * firstRun.hits() / Math.max(1, firstRun.rows())),
          mib(p, "heapPeakBytes"),
          f.liveHeap() < 0 ? "?" : mib(f.liveHeap()),
          mib(p, "vmHwmBytes"),
          mib(p, "lookupDiskPeakBytes"));
    }
    System.out.println();
    for (Map.Entry<LookupJoinVariant, LookupJoinFigures> e : figures.entrySet()) {
      LookupJoinVariant v = e.getKey();
      LookupJoinFigures f = e.getValue();
      Properties p = results.get(v);
      StringBuilder line =
          new StringBuilder(v.id)
              .append(": per run, first row emitted ")
              .append(f.each(LookupJoinFigures.Run::firstEmitted, "%.2f"))
              .append(" s, the paired no-join run's ")
              .append(
                  f.baselines().stream()
                      .map(r -> fmt("%.2f", r.firstEmitted()))
                      .collect(Collectors.joining(", ")))
              .append(" s, start-up cost ")
              .append(
                  IntStream.range(0, f.runs().size())
                      .mapToObj(i -> fmt("%.3f", f.startUpCost(i)))
                      .collect(Collectors.joining(", ")))
              .append(" s, in the task ")
              .append(
                  IntStream.range(0, f.runs().size())
                      .mapToObj(i -> fmt("%.4f", f.taskStartUpCost(i)))
                      .collect(Collectors.joining(", ")))
              .append(" s; 10% of the rows emitted ")
              .append(f.each(LookupJoinFigures.Run::tenthEmitted, "%.2f"))
              .append(" s; probes/s emitted ")
              .append(f.each(LookupJoinFigures.Run::probesPerSecond, "%,.0f"))
              .append("; submitted after ")
              .append(fmt("%.2f s", f.submit()));
      LookupJoinFigures.Run r = f.runs().get(0);
      line.append(
          fmt(
              "; keys below %,d: %,d of %,d probes (%.2f%%)",
              rows, r.expectedHits(), r.rows(), 100.0 * r.expectedHits() / Math.max(1, r.rows())));
      if (v.joinsData()) {
        boolean right =
            f.runs().stream()
                .allMatch(
                    run ->
                        run.rows() == probes
                            && run.hits() == run.expectedHits()
                            && run.wrong() == 0);
        line.append(
            right
                ? "; every run: one row per probe, each of those keys a hit with the" + " right row"
                : "; MISMATCH: "
                    + f.runs().stream()
                        .map(
                            run ->
                                fmt(
                                    "%,d rows, %,d hits for %,d keys, %,d wrong",
                                    run.rows(), run.hits(), run.expectedHits(), run.wrong()))
                        .collect(Collectors.joining(" | ")));
      }
      line.append("; io.tmp.dirs peak ")
          .append(mib(p, "flinkTmpPeakBytes"))
          .append(" MiB (lookup files ")
          .append(mib(p, "lookupDiskPeakBytes"))
          .append(" MiB), java.io.tmpdir peak ")
          .append(mib(p, "jvmTmpPeakBytes"))
          .append(" MiB");
      if (p.getProperty("lookupTable") != null) {
        line.append("; Paimon created its ").append(p.getProperty("lookupTable"));
        if (p.getProperty("partialRefused") != null) {
          line.append(" (partial lookup refused: ")
              .append(p.getProperty("partialRefused"))
              .append(")");
        }
      }
      System.out.println(line);
    }
    ratios(results, figures);
    System.out.println(
        "first row: from just before executeSql (planning, submission to the"
            + " JVM's session cluster, lookup open/bootstrap) to the job's sink receiving its first"
            + " row, on this JVM's clock."
            + " start-up cost: median over runs of (first row - the paired no-join run's first row)."
            + " probes/s: (rows - 1) / (last row - first row) as the sink received them,"
            + " less one mid-run full GC. live heap: heap used after that GC (max over runs). heap"
            + " peak: the heap pools' peaks. RSS peak: VmHWM. lookup disk: peak of io.tmp.dirs"
            + " without Flink's own entries (minicluster_*, flink-*), and of skade's default disk"
            + " cache in java.io.tmpdir, sampled every "
            + Long.getLong("skade.bench.sampleMillis", 100)
            + " ms.");
  }

  private static void ratios(
      Map<LookupJoinVariant, Properties> results,
      Map<LookupJoinVariant, LookupJoinFigures> figures) {
    System.out.println();
    List<LookupJoinFigures> paimon =
        figures.entrySet().stream()
            .filter(e -> e.getKey().isPaimon())
            .map(Map.Entry::getValue)
            .toList();
    if (!results.containsKey(LookupJoinVariant.SKADE) || paimon.isEmpty()) {
      System.out.println("ratios: need the skade and a Paimon variant.");
      return;
    }
    LookupJoinFigures skade = figures.get(LookupJoinVariant.SKADE);
    if (skade == null) {
      System.out.println(
          "ratios: n/a, skade failed: "
              + results.get(LookupJoinVariant.SKADE).getProperty("message"));
      return;
    }
    double skadeCost = skade.startUpCost();
    double paimonCost =
        paimon.stream().mapToDouble(LookupJoinFigures::startUpCost).min().orElseThrow();
    double skadeRate = skade.probesPerSecond();
    double paimonRate =
        paimon.stream().mapToDouble(LookupJoinFigures::probesPerSecond).max().orElseThrow();
    // On object storage the targets are others, printed beside the requests (LookupJoinS3Report).
    boolean local = !ObjectStorage.s3();
    System.out.println(
        skadeCost <= 0
            ? fmt("start-up cost: skade %.3f s (no more than the no-join pipeline's),", skadeCost)
                + fmt(" Paimon's best %.3f s", paimonCost)
                + (local ? " (target: skade at least 5x below)" : "")
            : fmt(
                    "start-up cost: skade %.3f s, Paimon's best %.3f s: Paimon / skade = %.1fx",
                    skadeCost, paimonCost, paimonCost / skadeCost)
                + (local ? " (target: >= 5x)" : ""));
    System.out.println(
        fmt(
                "steady probes/s: skade %,.0f, Paimon's best %,.0f: skade / Paimon = %.2fx",
                skadeRate, paimonRate, skadeRate / paimonRate)
            + (local ? " (target: >= 2x)" : ""));
    LookupJoinFigures noJoin = figures.get(LookupJoinVariant.NO_JOIN);
    LookupJoinFigures empty = figures.get(LookupJoinVariant.EMPTY_JOIN);
    if (noJoin != null && empty != null) {
      double flinkCost = empty.startUpCost();
      System.out.println(
          fmt(
                  "the measure's floor: the no-join pipeline against itself %.3f s;"
                      + " Flink's own lookup join (to an empty table) %.3f s; over the latter: skade %.3f s,"
                      + " Paimon's best %.3f s",
                  noJoin.startUpCost(), flinkCost, skadeCost - flinkCost, paimonCost - flinkCost)
              + (local ? " (target: skade's at or below Paimon's)" : ""));
      // What the join adds per probe over Flink's own lookup join; the engine alone is above.
      System.out.println(
          fmt(
              "per probe, steady: skade's join %.2f us, Flink's own lookup join %.2f us;"
                  + " skade's over Flink's own %.2f us (the engine alone, warm, is in its table"
                  + " above)",
              1e6 / skadeRate,
              1e6 / empty.probesPerSecond(),
              1e6 / skadeRate - 1e6 / empty.probesPerSecond()));
      double skadeTask = skade.taskStartUpCost();
      double paimonTask =
          paimon.stream().mapToDouble(LookupJoinFigures::taskStartUpCost).min().orElseThrow();
      double flinkTask = empty.taskStartUpCost();
      System.out.println(
          fmt(
              "start-up cost in the task (first row from the sink's open, before"
                  + " the lookup's: no planning or deployment; less the paired no-join run's): skade"
                  + " %.4f s, Paimon's best %.4f s, Flink's own lookup join %.4f s; over the latter:"
                  + " skade %.4f s, Paimon's best %.4f s",
              skadeTask, paimonTask, flinkTask, skadeTask - flinkTask, paimonTask - flinkTask));
    }
  }

  private static String rate(double perSecond) {
    return Double.isNaN(perSecond) ? "-" : fmt("%,.0f", perSecond);
  }

  private static String mib(Properties p, String key) {
    return p.getProperty(key) == null ? "?" : mib(Long.parseLong(p.getProperty(key)));
  }

  private static String mib(long bytes) {
    return fmt("%.0f", bytes / 1048576.0);
  }

  static String fmt(String format, Object... values) {
    return String.format(Locale.ROOT, format, values);
  }
}
