package io.skade.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A variant's runs of {@link LookupJoinBenchmark} and the no-join run paired with each, as its JVM
 * reported them, summarised by medians.
 */
record LookupJoinFigures(List<Run> runs, List<Run> baselines) {
  /**
   * One measured run of a variant's job, in seconds from just before {@code executeSql}: rows
   * emitted by the job ({@code emitted}, ms precision) and received from the collect iterator.
   */
  record Run(
      double submit,
      double firstEmitted,
      double taskFirst,
      double tenthEmitted,
      double lastEmitted,
      double total,
      double gcStart,
      double gcPause,
      long rows,
      long hits,
      long wrong,
      long expectedHits,
      long liveHeap) {
    static Run of(Properties p, String k) {
      return new Run(
          seconds(p, k + "submitNanos"),
          seconds(p, k + "firstEmittedNanos"),
          seconds(p, k + "taskFirstNanos"),
          seconds(p, k + "tenthEmittedNanos"),
          seconds(p, k + "lastEmittedNanos"),
          seconds(p, k + "totalNanos"),
          seconds(p, k + "gcStartNanos"),
          seconds(p, k + "gcPauseNanos"),
          number(p, k + "rows"),
          number(p, k + "hits"),
          number(p, k + "wrong"),
          number(p, k + "expectedHits"),
          number(p, k + "liveHeapBytes"));
    }

    /** Probes/s the job emitted after its first row, the mid-run GC's pause left out. */
    double probesPerSecond() {
      return rate(firstEmitted, lastEmitted);
    }

    /** (rows - 1) / the span, less the part of the GC pause inside it (the JVM stood still). */
    private double rate(double from, double to) {
      double pause = Math.max(0, Math.min(to, gcStart + gcPause) - Math.max(from, gcStart));
      double seconds = to - from - pause;
      return seconds > 0 ? (rows - 1) / seconds : Double.NaN; // all within one ms
    }
  }

  static LookupJoinFigures of(Properties p) {
    int n = Integer.parseInt(p.getProperty("runs"));
    List<Run> runs = new ArrayList<>();
    List<Run> baselines = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      runs.add(Run.of(p, i + "."));
      baselines.add(Run.of(p, i + ".baseline."));
    }
    return new LookupJoinFigures(runs, baselines);
  }

  double firstRow() {
    return Harness.median(runs.stream().mapToDouble(Run::firstEmitted).toArray());
  }

  /** The run's first row less its paired no-join run's. */
  double startUpCost(int i) {
    return runs.get(i).firstEmitted() - baselines.get(i).firstEmitted();
  }

  double startUpCost() {
    return Harness.median(IntStream.range(0, runs.size()).mapToDouble(this::startUpCost).toArray());
  }

  /**
   * The run's first row in the task (from the sink's open, which comes before the lookup's, so
   * without planning and deployment) less its paired no-join run's.
   */
  double taskStartUpCost(int i) {
    return runs.get(i).taskFirst() - baselines.get(i).taskFirst();
  }

  double taskStartUpCost() {
    return Harness.median(
        IntStream.range(0, runs.size()).mapToDouble(this::taskStartUpCost).toArray());
  }

  double probesPerSecond() {
    return Harness.median(runs.stream().mapToDouble(Run::probesPerSecond).toArray());
  }

  double total() {
    return Harness.median(runs.stream().mapToDouble(Run::total).toArray());
  }

  double submit() {
    return Harness.median(runs.stream().mapToDouble(Run::submit).toArray());
  }

  long liveHeap() {
    return runs.stream().mapToLong(Run::liveHeap).max().orElse(-1);
  }

  String each(ToDoubleFunction<Run> figure, String format) {
    return runs.stream()
        .map(r -> figure.applyAsDouble(r))
        .map(x -> Double.isNaN(x) ? "-" : LookupJoinReport.fmt(format, x))
        .collect(Collectors.joining(", "));
  }

  private static double seconds(Properties p, String key) {
    return number(p, key) / 1e9;
  }

  private static long number(Properties p, String key) {
    return Long.parseLong(p.getProperty(key));
  }
}
