package io.skade.benchmarks;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;

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

  /** The pipeline, into the measuring sink. */
  private static final String JOIN_QUERY =
      "SELECT p.k, c.id, c.name, c.city, c.score"
          + " FROM probes AS p LEFT JOIN %s FOR SYSTEM_TIME AS OF p.proc_time AS c ON p.k = c.id";

  private static final String NO_JOIN_QUERY = "SELECT p.k FROM probes AS p";

  /**
   * Jars of skade's stack, kept off the JVMs of Paimon and of the baseline. Hadoop's client jars
   * stay: Paimon's catalog needs {@code org.apache.hadoop.conf.Configuration} even on a local
   * warehouse (a Flink deployment adds a Hadoop jar to lib/ for it).
   */
  private static final List<String> SKADE_STACK =
      List.of(
          "skade-", "iceberg-", "parquet-", "arrow-", "orc-", "avro-", "rocksdbjni-", "zstd-jni-");

  /** Which libraries a forked JVM gets. */
  private enum Stack {
    FLINK,
    SKADE,
    PAIMON
  }

  private enum Variant {
    NO_JOIN("no-join", "(c) no join: Flink alone", Stack.FLINK),
    EMPTY_JOIN("empty-join", "(c) join to an empty table", Stack.FLINK),
    SKADE("skade", "(a) skade lookup join", Stack.SKADE),
    SKADE_CONNECTOR("skade-connector", "(a) skade, connector table", Stack.SKADE),
    PAIMON_DEFAULT("paimon-default", "(b) Paimon, table defaults", Stack.PAIMON),
    PAIMON_BUCKET1("paimon-bucket1", "(b) Paimon, 'bucket'='1'", Stack.PAIMON);

    final String id;
    final String label;
    final Stack stack;

    Variant(String id, String label, Stack stack) {
      this.id = id;
      this.label = label;
      this.stack = stack;
    }

    boolean isPaimon() {
      return stack == Stack.PAIMON;
    }

    boolean isSkade() {
      return stack == Stack.SKADE;
    }

    /** Whether its join finds rows (a dimension table of the benchmark's rows). */
    boolean joinsData() {
      return stack != Stack.FLINK;
    }

    static Variant of(String id) {
      for (Variant v : values()) {
        if (v.id.equals(id.trim())) {
          return v;
        }
      }
      throw new IllegalArgumentException(
          "unknown variant '"
              + id
              + "'; known: "
              + Arrays.stream(values()).map(v -> v.id).collect(Collectors.joining(", ")));
    }
  }

  private LookupJoinBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      child(args);
      return;
    }
    long rows = Long.getLong("skade.bench.rows", 1_000_000);
    long probes = Long.getLong("skade.bench.probes", rows / 5);
    int files = Integer.getInteger("skade.bench.files", 32);
    List<Variant> variants =
        Arrays.stream(
                System.getProperty(
                        "skade.bench.variants",
                        "no-join,empty-join,skade,skade-connector,paimon-default,paimon-bucket1")
                    .split(","))
            .map(Variant::of)
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
        loadAverage(),
        String.join(" ", childJvmOptions()),
        ZonedDateTime.now());
    System.out.printf(
        "dimension: %,d rows (id bigint key, name, city, score) in %d data files of"
            + " consecutive id ranges; probes: %,d random keys in [0, %,d) from datagen (%.0f%% hit),"
            + " LEFT JOIN ... FOR SYSTEM_TIME AS OF p.proc_time, parallelism 1, rows into a measuring"
            + " sink.%n",
        rows, files, probes, keyBound(rows), HIT_RATIO * 100);
    System.out.println("working directory: " + work);

    Map<Variant, Properties> results = new LinkedHashMap<>();
    Properties skadeTable = null;
    Properties paimonTables = null;
    Properties engine = null;
    try {
      if (variants.stream().anyMatch(Variant::isSkade)) {
        skadeTable =
            prepare(
                "prepare-skade",
                "skade-warehouse",
                Stack.SKADE,
                work,
                rows,
                probes,
                files,
                timeoutSeconds);
        System.out.println("skade table: " + describePrepared(skadeTable, ""));
        if ("ok".equals(skadeTable.getProperty("status"))) {
          System.out.println("running skade's lookup engine alone ...");
          engine = fork("probe-skade", Stack.SKADE, work, rows, probes, files, timeoutSeconds);
        }
      }
      if (variants.stream().anyMatch(Variant::isPaimon)) {
        paimonTables =
            prepare(
                "prepare-paimon",
                "paimon-warehouse",
                Stack.PAIMON,
                work,
                rows,
                probes,
                files,
                timeoutSeconds);
        for (String table : List.of("dim_default", "dim_bucket1")) {
          System.out.println("Paimon " + table + ": " + describePrepared(paimonTables, table));
        }
      }
      for (Variant variant : variants) {
        if (variant.isSkade() && !"ok".equals(skadeTable.getProperty("status"))
            || variant.isPaimon() && !"ok".equals(paimonTables.getProperty("status"))) {
          Properties skipped = new Properties();
          skipped.setProperty("status", "failed");
          skipped.setProperty("message", "its table could not be written");
          results.put(variant, skipped);
          continue;
        }
        System.out.printf("running %s ...%n", variant.id);
        Properties result =
            fork("run-" + variant.id, variant.stack, work, rows, probes, files, timeoutSeconds);
        results.put(variant, result);
        if (!"ok".equals(result.getProperty("status"))) {
          System.out.printf("%s: failed: %s%n", variant.id, result.getProperty("message"));
        }
      }
    } finally {
      if (!keep) {
        delete(work);
      }
    }
    printEngine(engine, probes);
    print(results, rows, probes);
    System.out.println(
        "load average at the end (1, 5, 15 min): "
            + loadAverage()
            + "; other work on the machine slows every variant and spreads the runs.");
  }

  /** The 1, 5 and 15 minute load averages (Linux), or "?". */
  private static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException | RuntimeException e) {
      return "?";
    }
  }

  // ---------------------------------------------------------------- the parent: forks and table

  /**
   * Writes a system's tables in a forked JVM, or reuses those an earlier run with {@code
   * skade.bench.keep=true} left in the working directory for the same rows and files.
   */
  private static Properties prepare(
      String role,
      String warehouse,
      Stack stack,
      Path work,
      long rows,
      long probes,
      int files,
      long timeoutSeconds)
      throws IOException, InterruptedException {
    Path earlier = work.resolve(role).resolve("result.properties");
    if (Files.exists(earlier)) {
      Properties p = new Properties();
      try (InputStream in = Files.newInputStream(earlier)) {
        p.load(in);
      }
      if (ok(p)
          && Long.toString(rows).equals(p.getProperty("requestedRows"))
          && Integer.toString(files).equals(p.getProperty("requestedFiles"))) {
        p.setProperty("reused", "true");
        return p;
      }
    }
    delete(work.resolve(warehouse));
    return fork(role, stack, work, rows, probes, files, timeoutSeconds);
  }

  /**
   * Runs {@code role} in a forked JVM and returns the properties it wrote ({@code status} ok or
   * failed, with a {@code message}). Its output goes to {@code <work>/<role>.log}.
   */
  private static Properties fork(
      String role, Stack stack, Path work, long rows, long probes, int files, long timeoutSeconds)
      throws IOException, InterruptedException {
    delete(work.resolve(role));
    Path dir = Files.createDirectories(work.resolve(role));
    Path jvmTmp = Files.createDirectories(dir.resolve("jvm-tmp"));
    Path flinkTmp = Files.createDirectories(dir.resolve("flink-tmp"));
    Path resultFile = dir.resolve("result.properties");
    Path log = work.resolve(role + ".log");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(childJvmOptions());
    command.add("-Djava.io.tmpdir=" + jvmTmp);
    command.add("-Dskade.bench.rows=" + rows);
    command.add("-Dskade.bench.probes=" + probes);
    command.add("-Dskade.bench.files=" + files);
    command.add("-Dskade.bench.flinkTmp=" + flinkTmp);
    command.add("-Dskade.bench.skadeWarehouse=" + work.resolve("skade-warehouse"));
    command.add("-Dskade.bench.paimonWarehouse=" + work.resolve("paimon-warehouse"));
    command.add("-Dskade.bench.sampleMillis=" + Long.getLong("skade.bench.sampleMillis", 100));
    command.add("-Dskade.bench.warmup=" + System.getProperty("skade.bench.warmup", "true"));
    command.add("-Dskade.bench.runs=" + runs());
    command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    command.add("-Dorg.slf4j.simpleLogger.log.org.apache.flink=error");
    // Paimon logs which lookup table it created (and why not the partial one) at INFO.
    command.add(
        "-Dorg.slf4j.simpleLogger.log.org.apache.paimon.flink.lookup"
            + ".FileStoreLookupFunction=info");
    command.add("-cp");
    command.add(classpath(stack));
    command.add(LookupJoinBenchmark.class.getName());
    command.add(role);
    command.add(resultFile.toString());
    Process process =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    Properties result = new Properties();
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
      result.setProperty("status", "failed");
      result.setProperty("message", "no result within " + timeoutSeconds + " s");
      return withLog(result, log);
    }
    if (Files.exists(resultFile)) {
      try (InputStream in = Files.newInputStream(resultFile)) {
        result.load(in);
      }
    }
    if (result.getProperty("status") == null) {
      result.setProperty("status", "failed");
      result.setProperty(
          "message",
          "the JVM exited with " + process.exitValue() + " and no result: " + lastError(log));
    }
    return withLog(result, log);
  }

  /** Adds what the child logged that the table needs: Paimon's choice of lookup table. */
  private static Properties withLog(Properties result, Path log) throws IOException {
    String text = Files.exists(log) ? Files.readString(log) : "";
    Matcher created = Pattern.compile("Created (\\w+)").matcher(text);
    if (created.find()) {
      result.setProperty("lookupTable", created.group(1));
    }
    Matcher refused =
        Pattern.compile(
                "Cannot create PrimaryKeyPartialLookupTable with LocalQueryExecutor because (.*?)\\."
                    + " Will create")
            .matcher(text);
    if (refused.find()) {
      result.setProperty("partialRefused", refused.group(1));
    }
    return result;
  }

  private static String lastError(Path log) throws IOException {
    if (!Files.exists(log)) {
      return "(no log)";
    }
    List<String> lines = Files.readAllLines(log);
    for (int i = lines.size() - 1; i >= 0; i--) {
      if (lines.get(i).contains("Exception") || lines.get(i).contains("Error")) {
        return lines.get(i).trim() + " (see " + log + ")";
      }
    }
    return "see " + log;
  }

  /** This JVM's options for the forked ones (heap, --add-opens, ...), without agents. */
  private static List<String> childJvmOptions() {
    return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(
            a ->
                !a.startsWith("-agentlib")
                    && !a.startsWith("-javaagent")
                    && !a.startsWith("-Djava.io.tmpdir")
                    && !a.startsWith("-Dskade.bench.paimon"))
        .toList();
  }

  /** The classpath of a forked JVM of {@code stack}. */
  private static String classpath(Stack stack) throws IOException {
    String own;
    try {
      own =
          Path.of(
                  LookupJoinBenchmark.class
                      .getProtectionDomain()
                      .getCodeSource()
                      .getLocation()
                      .toURI())
              .toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    List<String> entries =
        new ArrayList<>(
            Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator)));
    if (stack != Stack.SKADE) {
      entries.removeIf(
          entry -> {
            Path path = Path.of(entry);
            if (entry.equals(own)) {
              return false;
            }
            // Other reactor modules' classes directories are skade's.
            if (Files.isDirectory(path)) {
              return true;
            }
            String name = path.getFileName().toString();
            return SKADE_STACK.stream().anyMatch(name::startsWith);
          });
    }
    if (stack == Stack.PAIMON) {
      String file = System.getProperty("skade.bench.paimon.classpath");
      if (file == null || !Files.exists(Path.of(file))) {
        throw new IllegalStateException(
            "no Paimon classpath file (-Dskade.bench.paimon.classpath"
                + "="
                + file
                + "); run through the benchmarks module's exec:exec, which writes"
                + " target/paimon.classpath");
      }
      String paimon = Files.readString(Path.of(file)).trim();
      entries.addAll(0, Arrays.asList(paimon.split(File.pathSeparator)));
    }
    return String.join(File.pathSeparator, entries);
  }

  private static String describePrepared(Properties p, String table) {
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

  /**
   * One measured run of a variant's job, in seconds from just before {@code executeSql}: rows
   * emitted by the job ({@code emitted}, ms precision) and received from the collect iterator.
   */
  private record Run(
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

  /** A variant's runs and the no-join run paired with each, summarised by medians. */
  private record Figures(List<Run> runs, List<Run> baselines) {
    static Figures of(Properties p) {
      int n = Integer.parseInt(p.getProperty("runs"));
      List<Run> runs = new ArrayList<>();
      List<Run> baselines = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        runs.add(Run.of(p, i + "."));
        baselines.add(Run.of(p, i + ".baseline."));
      }
      return new Figures(runs, baselines);
    }

    double firstRow() {
      return median(runs.stream().mapToDouble(Run::firstEmitted).toArray());
    }

    /** The run's first row less its paired no-join run's. */
    double startUpCost(int i) {
      return runs.get(i).firstEmitted() - baselines.get(i).firstEmitted();
    }

    double startUpCost() {
      return median(IntStream.range(0, runs.size()).mapToDouble(this::startUpCost).toArray());
    }

    /**
     * The run's first row in the task (from the sink's open, which comes before the lookup's, so
     * without planning and deployment) less its paired no-join run's.
     */
    double taskStartUpCost(int i) {
      return runs.get(i).taskFirst() - baselines.get(i).taskFirst();
    }

    double taskStartUpCost() {
      return median(IntStream.range(0, runs.size()).mapToDouble(this::taskStartUpCost).toArray());
    }

    double probesPerSecond() {
      return median(runs.stream().mapToDouble(Run::probesPerSecond).toArray());
    }

    double total() {
      return median(runs.stream().mapToDouble(Run::total).toArray());
    }

    double submit() {
      return median(runs.stream().mapToDouble(Run::submit).toArray());
    }

    long liveHeap() {
      return runs.stream().mapToLong(Run::liveHeap).max().orElse(-1);
    }

    String each(java.util.function.ToDoubleFunction<Run> figure, String format) {
      return runs.stream()
          .map(r -> figure.applyAsDouble(r))
          .map(x -> Double.isNaN(x) ? "-" : fmt(format, x))
          .collect(Collectors.joining(", "));
    }
  }

  /** The engine's figures (SkadeProbes): cold and warm sync passes, then async threads. */
  private static void printEngine(Properties p, long probes) {
    if (p == null) {
      return;
    }
    System.out.println();
    if (!ok(p)) {
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

  private static void print(Map<Variant, Properties> results, long rows, long probes) {
    Map<Variant, Figures> figures = new LinkedHashMap<>();
    results.forEach(
        (v, p) -> {
          if (ok(p)) {
            figures.put(v, Figures.of(p));
          }
        });
    int runs = runs();
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
    for (Map.Entry<Variant, Properties> e : results.entrySet()) {
      Variant v = e.getKey();
      Properties p = e.getValue();
      Figures f = figures.get(v);
      if (f == null) {
        System.out.printf("%-29s failed: %s%n", v.label, p.getProperty("message"));
        continue;
      }
      Run firstRun = f.runs().get(0);
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
    for (Map.Entry<Variant, Figures> e : figures.entrySet()) {
      Variant v = e.getKey();
      Figures f = e.getValue();
      Properties p = results.get(v);
      StringBuilder line =
          new StringBuilder(v.id)
              .append(": per run, first row emitted ")
              .append(f.each(Run::firstEmitted, "%.2f"))
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
              .append(f.each(Run::tenthEmitted, "%.2f"))
              .append(" s; probes/s emitted ")
              .append(f.each(Run::probesPerSecond, "%,.0f"))
              .append("; submitted after ")
              .append(fmt("%.2f s", f.submit()));
      Run r = f.runs().get(0);
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
            + " without Flink's own entries (minicluster_*, flink-*), sampled every "
            + Long.getLong("skade.bench.sampleMillis", 100)
            + " ms.");
  }

  private static void ratios(Map<Variant, Properties> results, Map<Variant, Figures> figures) {
    System.out.println();
    List<Figures> paimon =
        figures.entrySet().stream()
            .filter(e -> e.getKey().isPaimon())
            .map(Map.Entry::getValue)
            .toList();
    if (!results.containsKey(Variant.SKADE) || paimon.isEmpty()) {
      System.out.println("ratios: need the skade and a Paimon variant.");
      return;
    }
    Figures skade = figures.get(Variant.SKADE);
    if (skade == null) {
      System.out.println(
          "ratios: n/a, skade failed: " + results.get(Variant.SKADE).getProperty("message"));
      return;
    }
    double skadeCost = skade.startUpCost();
    double paimonCost = paimon.stream().mapToDouble(Figures::startUpCost).min().orElseThrow();
    double skadeRate = skade.probesPerSecond();
    double paimonRate = paimon.stream().mapToDouble(Figures::probesPerSecond).max().orElseThrow();
    System.out.println(
        skadeCost <= 0
            ? fmt("start-up cost: skade %.3f s (no more than the no-join pipeline's),", skadeCost)
                + fmt(" Paimon's best %.3f s (target: skade at least 5x below)", paimonCost)
            : fmt(
                "start-up cost: skade %.3f s, Paimon's best %.3f s: Paimon / skade = %.1fx"
                    + " (target: >= 5x)",
                skadeCost, paimonCost, paimonCost / skadeCost));
    System.out.println(
        fmt(
            "steady probes/s: skade %,.0f, Paimon's best %,.0f: skade / Paimon ="
                + " %.2fx (target: >= 1x)",
            skadeRate, paimonRate, skadeRate / paimonRate));
    Figures noJoin = figures.get(Variant.NO_JOIN);
    Figures empty = figures.get(Variant.EMPTY_JOIN);
    if (noJoin != null && empty != null) {
      double flinkCost = empty.startUpCost();
      System.out.println(
          fmt(
              "the measure's floor: the no-join pipeline against itself %.3f s;"
                  + " Flink's own lookup join (to an empty table) %.3f s; over the latter: skade %.3f s,"
                  + " Paimon's best %.3f s",
              noJoin.startUpCost(), flinkCost, skadeCost - flinkCost, paimonCost - flinkCost));
      double skadeTask = skade.taskStartUpCost();
      double paimonTask = paimon.stream().mapToDouble(Figures::taskStartUpCost).min().orElseThrow();
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

  /** Measured runs per JVM ({@code skade.bench.runs}). */
  private static int runs() {
    return Integer.getInteger("skade.bench.runs", 9);
  }

  private static boolean ok(Properties p) {
    return p != null && "ok".equals(p.getProperty("status"));
  }

  private static double seconds(Properties p, String key) {
    return number(p, key) / 1e9;
  }

  private static long number(Properties p, String key) {
    return Long.parseLong(p.getProperty(key));
  }

  /** The median, NaN values (rates of runs within one ms) left out; NaN if none is left. */
  private static double median(double[] values) {
    double[] sorted = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
    int n = sorted.length;
    return n == 0
        ? Double.NaN
        : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
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
            run(
                Variant.of(role.substring(4)),
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

  /**
   * Runs one variant's job {@code skade.bench.runs} times in this JVM, after a warm-up job, and
   * measures each run; the disk and memory peaks cover all of them.
   */
  private static Properties run(
      Variant variant,
      long rows,
      long probes,
      Path flinkTmp,
      Path skadeWarehouse,
      Path paimonWarehouse)
      throws Exception {
    Sampler sampler =
        new Sampler(
            flinkTmp,
            Path.of(System.getProperty("java.io.tmpdir")),
            Long.getLong("skade.bench.sampleMillis", 100));
    sampler.start();
    Properties out = new Properties();
    Configuration clusterConf = new Configuration();
    clusterConf.set(CoreOptions.TMP_DIRS, flinkTmp.toString());
    // A session cluster, as jobs are submitted in production: a job's start is its own, not a
    // cluster's (a MiniCluster per job adds its start, 0.2-0.4 s apart from one job to the next).
    MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setConfiguration(clusterConf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(2)
                .build());
    try {
      cluster.start();
      URI rest = cluster.getRestAddress().get();
      Configuration conf = new Configuration(clusterConf);
      conf.set(CoreOptions.DEFAULT_PARALLELISM, 1);
      conf.set(DeploymentOptions.TARGET, "remote");
      conf.set(RestOptions.ADDRESS, rest.getHost());
      conf.set(RestOptions.PORT, rest.getPort());
      TableEnvironment env =
          TableEnvironment.create(
              EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
      env.executeSql(
          "CREATE TEMPORARY TABLE probes (k BIGINT, proc_time AS PROCTIME()) WITH ("
              + "'connector' = 'datagen', 'number-of-rows' = '"
              + probes
              + "',"
              + " 'rows-per-second' = '1000000000', 'fields.k.kind' = 'random',"
              + " 'fields.k.min' = '0', 'fields.k.max' = '"
              + (keyBound(rows) - 1)
              + "')");
      String query =
          switch (variant) {
            case NO_JOIN -> NO_JOIN_QUERY;
            case EMPTY_JOIN -> {
              env.executeSql(
                  "CREATE TEMPORARY TABLE dim (id BIGINT, name STRING, city STRING,"
                      + " score INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'empty-lookup')");
              yield String.format(JOIN_QUERY, "dim");
            }
            case SKADE -> {
              // Through skade's catalog, as Paimon's variants go through Paimon's.
              env.executeSql(
                  "CREATE CATALOG skade_lake WITH ('type' = 'skade', 'warehouse' = '"
                      + skadeWarehouse
                      + "')");
              String options =
                  System.getProperty("skade.bench.skadeOptions", "")
                      .replaceFirst("^\\s*,", "")
                      .trim();
              yield String.format(
                  JOIN_QUERY,
                  "skade_lake."
                      + SkadeDim.NAMESPACE
                      + "."
                      + SkadeDim.TABLE
                      + (options.isEmpty() ? "" : " /*+ OPTIONS(" + options + ") */"));
            }
            case SKADE_CONNECTOR -> {
              env.executeSql(
                  "CREATE TABLE dim (id BIGINT, name STRING, city STRING, score INT,"
                      + " PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'skade', 'warehouse' = '"
                      + skadeWarehouse
                      + "', 'database' = '"
                      + SkadeDim.NAMESPACE
                      + "', 'table' = '"
                      + SkadeDim.TABLE
                      + "'"
                      + System.getProperty("skade.bench.skadeOptions", "")
                      + ")");
              yield String.format(JOIN_QUERY, "dim");
            }
            case PAIMON_DEFAULT, PAIMON_BUCKET1 -> {
              env.executeSql(PaimonDim.catalogDdl(paimonWarehouse));
              yield String.format(
                  JOIN_QUERY,
                  PaimonDim.CATALOG
                      + ".bench."
                      + (variant == Variant.PAIMON_DEFAULT
                          ? PaimonDim.DEFAULT_TABLE
                          : PaimonDim.BUCKET1_TABLE));
            }
          };
      if (Boolean.parseBoolean(System.getProperty("skade.bench.warmup", "true"))) {
        // Flink's planner, runtime and the measuring sink, loaded and exercised once
        // beforehand, so the measured jobs' first rows show the job's cost, not the JVM's cold
        // start.
        env.executeSql(
            "CREATE TEMPORARY TABLE warmup (k BIGINT) WITH ('connector' = 'datagen',"
                + " 'number-of-rows' = '1000', 'rows-per-second' = '1000000000')");
        env.executeSql(
            "CREATE TEMPORARY TABLE warmed (k BIGINT) WITH ('connector' ="
                + " 'bench-measure', 'run' = 'warmup', 'dim-rows' = '0', 'probes' = '1000',"
                + " 'joined' = 'false', 'check' = 'false')");
        env.executeSql("INSERT INTO warmed SELECT k FROM warmup").await();
        MeasuringSinkFactory.take("warmup");
      }
      int runs = runs();
      for (int i = 0; i < runs; i++) {
        // Each run is paired with a run of the no-join pipeline right before or after it (in
        // turn), in the same JVM and cluster: their difference is the run's start-up cost.
        if (i % 2 == 0) {
          measure(env, NO_JOIN_QUERY, false, rows, probes, i + ".baseline.", out);
        }
        measure(env, query, variant.joinsData(), rows, probes, i + ".", out);
        if (i % 2 == 1) {
          measure(env, NO_JOIN_QUERY, false, rows, probes, i + ".baseline.", out);
        }
      }
      out.setProperty("runs", Integer.toString(runs));
    } finally {
      sampler.finish();
      cluster.close();
    }
    out.setProperty("flinkTmpPeakBytes", Long.toString(sampler.flinkTmpPeak));
    out.setProperty("lookupDiskPeakBytes", Long.toString(sampler.lookupPeak));
    out.setProperty("jvmTmpPeakBytes", Long.toString(sampler.jvmTmpPeak));
    out.setProperty(
        "heapPeakBytes",
        Long.toString(
            ManagementFactory.getMemoryPoolMXBeans().stream()
                .filter(pool -> pool.getType() == MemoryType.HEAP)
                .map(MemoryPoolMXBean::getPeakUsage)
                .mapToLong(MemoryUsage::getUsed)
                .sum()));
    long hwm = vmHwmBytes();
    if (hwm >= 0) {
      out.setProperty("vmHwmBytes", Long.toString(hwm));
    }
    return out;
  }

  /**
   * One run of the job: from just before {@code executeSql} to the job's end, its rows going into a
   * {@link MeasuringSinkFactory measuring sink} (which checks every joined row against its key and
   * takes a full GC at the middle row for the live heap). Writes its figures under {@code prefix}.
   */
  private static void measure(
      TableEnvironment env,
      String query,
      boolean check,
      long rows,
      long probes,
      String prefix,
      Properties out)
      throws Exception {
    boolean joined = !query.equals(NO_JOIN_QUERY);
    env.executeSql("DROP TEMPORARY TABLE IF EXISTS measured");
    env.executeSql(
        "CREATE TEMPORARY TABLE measured (k BIGINT"
            + (joined ? ", id BIGINT, name STRING, city STRING, score INT" : "")
            + ") WITH ('connector' = 'bench-measure', 'run' = '"
            + prefix
            + "', 'dim-rows' = '"
            + rows
            + "', 'probes' = '"
            + probes
            + "', 'joined' = '"
            + joined
            + "', 'check' = '"
            + check
            + "')");
    long start = System.nanoTime();
    TableResult result = env.executeSql("INSERT INTO measured " + query);
    long submitted = System.nanoTime();
    result.await();
    long end = System.nanoTime();
    MeasuringSinkFactory.Measurement m = MeasuringSinkFactory.take(prefix);
    if (m == null) {
      throw new IllegalStateException("the measuring sink of run " + prefix + " reported nothing");
    }
    out.setProperty(prefix + "submitNanos", Long.toString(submitted - start));
    out.setProperty(prefix + "totalNanos", Long.toString(end - start));
    out.setProperty(prefix + "gcPauseNanos", Long.toString(m.gcPauseNanos));
    out.setProperty(prefix + "gcStartNanos", Long.toString(since(start, m.gcStartNanos)));
    out.setProperty(prefix + "rows", Long.toString(m.rows));
    out.setProperty(prefix + "hits", Long.toString(m.hits));
    out.setProperty(prefix + "wrong", Long.toString(m.wrong));
    out.setProperty(prefix + "expectedHits", Long.toString(m.expectedHits));
    out.setProperty(prefix + "liveHeapBytes", Long.toString(m.liveHeapBytes));
    out.setProperty(prefix + "firstEmittedNanos", Long.toString(since(start, m.firstNanos)));
    out.setProperty(prefix + "taskFirstNanos", Long.toString(since(m.openNanos, m.firstNanos)));
    out.setProperty(prefix + "tenthEmittedNanos", Long.toString(since(start, m.tenthNanos)));
    out.setProperty(prefix + "lastEmittedNanos", Long.toString(since(start, m.lastNanos)));
  }

  /** Nanoseconds from {@code start} to {@code nanos}, or 0 when {@code nanos} never came. */
  private static long since(long start, long nanos) {
    return nanos == 0 ? 0 : nanos - start;
  }

  /** Peak resident set size of this JVM ({@code VmHWM} of /proc/self/status), or -1. */
  private static long vmHwmBytes() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
      }
    } catch (IOException | RuntimeException e) {
      // Not Linux.
    }
    return -1;
  }

  /** Samples the size of the two temporary directories, keeping the peaks. */
  private static final class Sampler extends Thread {
    private final Path flinkTmp;
    private final Path jvmTmp;
    private final long millis;
    private volatile boolean running = true;
    volatile long flinkTmpPeak;
    volatile long lookupPeak;
    volatile long jvmTmpPeak;

    Sampler(Path flinkTmp, Path jvmTmp, long millis) {
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
      flinkTmpPeak = Math.max(flinkTmpPeak, all);
      lookupPeak = Math.max(lookupPeak, all - flinkOwn);
      jvmTmpPeak = Math.max(jvmTmpPeak, size(jvmTmp));
    }

    void finish() throws InterruptedException {
      running = false;
      interrupt();
      join();
      sample();
    }
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

  private static void delete(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (UncheckedIOException e) {
      System.err.println("could not delete all of " + dir + ": " + e.getMessage());
    }
  }

  private static String fmt(String format, Object... values) {
    return String.format(Locale.ROOT, format, values);
  }
}
