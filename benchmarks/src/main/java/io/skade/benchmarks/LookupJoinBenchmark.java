package io.skade.benchmarks;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Prints, side by side in one run, what a Flink SQL lookup join costs over skade and over Apache
 * Paimon: the same pipeline, {@code SELECT p.k, c.id, c.name, c.city, c.score FROM probes AS p LEFT
 * JOIN dim FOR SYSTEM_TIME AS OF p.proc_time AS c ON p.k = c.id}, over the same dimension table
 * {@code (id BIGINT PRIMARY KEY NOT ENFORCED, name STRING, city STRING, score INT)} of {@code rows}
 * rows with deterministic values (name-&lt;id&gt;, city-&lt;id mod 1000&gt;, id mod 100000) in
 * {@code files} data files of consecutive id ranges. The probes come from Flink's {@code datagen}
 * connector: {@code probes} uniformly random keys in {@code [0, rows / 0.9)}, so 90% hit, with
 * {@code proc_time AS PROCTIME()}; the job runs at parallelism 1, submitted to a session cluster (a
 * MiniCluster its JVM started once, reached over REST as a deployed one is), and its rows go into a
 * {@link MeasuringSinkFactory measuring sink} in the same JVM (rows collected to the client instead
 * made the client's fetching the limit of every variant). It asserts nothing.
 *
 * <p>Variants: (c) {@code no-join}, {@code SELECT p.k FROM probes AS p}: Flink's own start-up and
 * throughput; (a) {@code skade}, the table through skade's catalog ({@code CREATE CATALOG ...
 * 'type' = 'skade'}, made before the runs as Paimon's), and {@code skade-connector}, the same table
 * declared with {@code 'connector' = 'skade'} (whose planning opens the catalog, and the job's
 * lookup opens it again); (b) Paimon 1.3 through its catalog, {@code paimon-default} (a primary-key
 * table with Paimon's defaults: {@code 'bucket'} unset, i.e. -1, dynamic bucket mode) and {@code
 * paimon-bucket1} ({@code 'bucket' = '1'}). A variant that fails (skade, until its lookup source
 * exists) prints its error as its result; the others still run.
 *
 * <p>Every variant runs in its own forked JVM (this JVM's options), so its memory figures are its
 * own; the tables are written beforehand by forked JVMs too ({@link SkadeDim}, {@link PaimonDim}).
 * Classpaths: skade's JVMs get this module's runtime classpath; Paimon's and the baseline's get it
 * without skade's stack (skade, Iceberg, Parquet, Arrow, ORC, Avro, RocksDB, zstd-jni), plus for
 * Paimon {@code paimon-flink-2.1} and Flink's {@code frocksdbjni} (from {@code
 * target/paimon.classpath}), like a Flink deployment with the Paimon jar in lib/.
 *
 * <p>In its JVM a variant first runs a warm-up job (1,000 rows, no join) so that Flink's planner,
 * runtime and the measuring sink are loaded, then its job {@code runs} times, each run paired with
 * a run of the no-join pipeline just before it or just after it (in turn). Per run: <i>first
 * row</i>, from just before {@code executeSql} (planning, submission, the lookup source's open and
 * bootstrap) to the sink receiving the job's first row, on this JVM's clock; <i>probes/s</i>, (rows
 * - 1) / (last row - first row) as received, without the pause of one full GC taken at the middle
 * row; <i>total</i>, to the job's end; hits, rows whose {@code name} is set, checked against the
 * keys below {@code rows} and against the values the key implies. The table shows medians;
 * <i>start-up cost</i>, the median over runs of a run's first row less its paired no-join run's (a
 * difference within one JVM and one cluster, so their drift cancels; the no-join variant's own
 * figure is the measure's floor, and the empty join's is Flink's own lookup join); the same <i>in
 * the task</i>, from the sink's open (which Flink does before the lookup's) to the first row, so
 * without planning and deployment, whose spread is larger than a lookup's start. Memory, over all
 * runs: <i>heap peak</i>, the sum of the heap pools' peaks; <i>live heap</i>, heap used right after
 * the mid-run full GC (the lookup structures with Flink's and the planner's live objects); <i>RSS
 * peak</i>, VmHWM of the JVM (native memory such as RocksDB's included). <i>Lookup disk</i>: the
 * peak size, sampled every {@code sampleMillis}, of what lies in Flink's {@code io.tmp.dirs} (a
 * fresh directory per JVM, where Paimon puts its lookup directory) besides Flink's own entries
 * ({@code minicluster_*}, {@code flink-*}).
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.rows} [1000000], {@code
 * skade.bench.probes} [rows / 5], {@code skade.bench.files} [32], {@code skade.bench.runs} per JVM
 * [9], {@code skade.bench.variants} comma-separated
 * [no-join,empty-join,skade,skade-connector,paimon-default,paimon-bucket1], {@code
 * skade.bench.warmup} [true], {@code skade.bench.sampleMillis} [100], {@code
 * skade.bench.childTimeoutSeconds} per forked JVM [1200], {@code skade.bench.skadeOptions} appended
 * to the skade table's WITH clause (a table hint's OPTIONS through the catalog), e.g. {@code ,
 * 'lookup.async' = 'true'} [none], {@code skade.bench.dir} working directory, kept [a fresh
 * temporary one, deleted at the end unless {@code skade.bench.keep=true}]; tables an earlier run
 * wrote there for the same rows and files are reused (not once the directory has moved: Iceberg's
 * metadata holds absolute paths).
 */
public final class LookupJoinBenchmark {
  private static final double HIT_RATIO = 0.9;

  private LookupJoinBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      child(args);
      return;
    }
    long rows = Long.getLong("skade.bench.rows", 1_000_000);
    long probes = Long.getLong("skade.bench.probes", rows / 5);
    int files = Integer.getInteger("skade.bench.files", 32);
    List<LookupJoinVariant> variants =
        Arrays.stream(
                System.getProperty(
                        "skade.bench.variants",
                        "no-join,empty-join,skade,skade-connector,paimon-default,paimon-bucket1")
                    .split(","))
            .map(LookupJoinVariant::of)
            .toList();
    long timeoutSeconds = Long.getLong("skade.bench.childTimeoutSeconds", 1200);
    boolean keep =
        Boolean.getBoolean("skade.bench.keep") || System.getProperty("skade.bench.dir") != null;
    Path work =
        System.getProperty("skade.bench.dir") == null
            ? Files.createTempDirectory("skade-lookup-bench-")
            : Files.createDirectories(Path.of(System.getProperty("skade.bench.dir")));

    System.out.printf(
        "skade lookup join benchmark | JVM %s | cores %d | load average %s |"
            + " forked JVMs: %s | %s%n",
        System.getProperty("java.runtime.version"),
        Runtime.getRuntime().availableProcessors(),
        Harness.loadAverage(),
        String.join(" ", LookupJoinForks.childJvmOptions()),
        ZonedDateTime.now());
    System.out.printf(
        "dimension: %,d rows (id bigint key, name, city, score) in %d data files of"
            + " consecutive id ranges; probes: %,d random keys in [0, %,d) from datagen (%.0f%% hit),"
            + " LEFT JOIN ... FOR SYSTEM_TIME AS OF p.proc_time, parallelism 1, rows into a measuring"
            + " sink.%n",
        rows, files, probes, keyBound(rows), HIT_RATIO * 100);
    System.out.println("working directory: " + work);

    LookupJoinForks forks = new LookupJoinForks(work, rows, probes, files, timeoutSeconds);
    Map<LookupJoinVariant, Properties> results = new LinkedHashMap<>();
    Properties skadeTable = null;
    Properties paimonTables = null;
    Properties engine = null;
    try {
      if (variants.stream().anyMatch(LookupJoinVariant::isSkade)) {
        skadeTable =
            forks.prepare("prepare-skade", "skade-warehouse", LookupJoinVariant.Stack.SKADE);
        System.out.println("skade table: " + LookupJoinReport.describePrepared(skadeTable, ""));
        if ("ok".equals(skadeTable.getProperty("status"))) {
          System.out.println("running skade's lookup engine alone ...");
          engine = forks.fork("probe-skade", LookupJoinVariant.Stack.SKADE);
        }
      }
      if (variants.stream().anyMatch(LookupJoinVariant::isPaimon)) {
        paimonTables =
            forks.prepare("prepare-paimon", "paimon-warehouse", LookupJoinVariant.Stack.PAIMON);
        for (String table : List.of("dim_default", "dim_bucket1")) {
          System.out.println(
              "Paimon " + table + ": " + LookupJoinReport.describePrepared(paimonTables, table));
        }
      }
      for (LookupJoinVariant variant : variants) {
        if (variant.isSkade() && !"ok".equals(skadeTable.getProperty("status"))
            || variant.isPaimon() && !"ok".equals(paimonTables.getProperty("status"))) {
          Properties skipped = new Properties();
          skipped.setProperty("status", "failed");
          skipped.setProperty("message", "its table could not be written");
          results.put(variant, skipped);
          continue;
        }
        System.out.printf("running %s ...%n", variant.id);
        Properties result = forks.fork("run-" + variant.id, variant.stack);
        results.put(variant, result);
        if (!"ok".equals(result.getProperty("status"))) {
          System.out.printf("%s: failed: %s%n", variant.id, result.getProperty("message"));
        }
      }
    } finally {
      if (!keep) {
        LookupJoinForks.delete(work);
      }
    }
    LookupJoinReport.printEngine(engine, probes);
    LookupJoinReport.print(results, rows, probes);
    System.out.println(
        "load average at the end (1, 5, 15 min): "
            + Harness.loadAverage()
            + "; other work on the machine slows every variant and spreads the runs.");
  }

  /** Measured runs per JVM ({@code skade.bench.runs}). */
  static int runs() {
    return Integer.getInteger("skade.bench.runs", 9);
  }

  // ------------------------------------------------------------------------- the forked JVMs

  private static void child(String[] args) throws Exception {
    String role = args[0];
    Path resultFile = Path.of(args[1]);
    long rows = Long.getLong("skade.bench.rows", 1_000_000);
    long probes = Long.getLong("skade.bench.probes", 200_000);
    int files = Integer.getInteger("skade.bench.files", 32);
    Path flinkTmp = Path.of(System.getProperty("skade.bench.flinkTmp"));
    Path skadeWarehouse = Path.of(System.getProperty("skade.bench.skadeWarehouse"));
    Path paimonWarehouse = Path.of(System.getProperty("skade.bench.paimonWarehouse"));
    Properties out;
    try {
      if (role.equals("prepare-skade")) {
        out = SkadeDim.prepare(skadeWarehouse, rows, files);
      } else if (role.equals("probe-skade")) {
        out =
            SkadeProbes.measure(
                skadeWarehouse, rows, probes, Integer.getInteger("skade.bench.asyncThreads", 4));
      } else if (role.equals("prepare-paimon")) {
        out = PaimonDim.prepare(paimonWarehouse, flinkTmp, rows, files);
      } else if (role.startsWith("run-")) {
        out =
            LookupJoinRun.run(
                LookupJoinVariant.of(role.substring(4)),
                rows,
                probes,
                flinkTmp,
                skadeWarehouse,
                paimonWarehouse);
      } else {
        throw new IllegalArgumentException("unknown role " + role);
      }
      out.putIfAbsent("status", "ok");
      out.setProperty("requestedRows", Long.toString(rows));
      out.setProperty("requestedFiles", Integer.toString(files));
    } catch (Throwable e) {
      e.printStackTrace();
      out = new Properties();
      out.setProperty("status", "failed");
      out.setProperty("message", message(e));
    }
    try (OutputStream stream = Files.newOutputStream(resultFile)) {
      out.store(stream, role);
    }
    // Flink and Paimon leave non-daemon threads behind.
    System.exit(0);
  }

  // ------------------------------------------------------------------------------------ shared

  /** Probe keys are uniform in [0, keyBound): a HIT_RATIO share of them is below rows. */
  static long keyBound(long rows) {
    return Math.round(rows / HIT_RATIO);
  }

  /** The first id of data file {@code file} of {@code files} (consecutive ranges). */
  static long rangeStart(long rows, int files, int file) {
    return rows * file / files;
  }

  static String name(long id) {
    return "name-" + id;
  }

  static String city(long id) {
    return "city-" + (id % 1000);
  }

  static int score(long id) {
    return (int) (id % 100_000);
  }

  /** The exception's message and, if another, its root cause's: first lines, shortened. */
  private static String message(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String top = firstLine(e);
    String cause = firstLine(root);
    return top.equals(cause) || root == e ? top : top + " / cause: " + cause;
  }

  private static String firstLine(Throwable e) {
    String m = e.getMessage() == null ? "" : e.getMessage().strip();
    int nl = m.indexOf('\n');
    m = nl < 0 ? m : m.substring(0, nl);
    m = e.getClass().getSimpleName() + ": " + m;
    return m.length() > 400 ? m.substring(0, 400) + "..." : m;
  }
}
