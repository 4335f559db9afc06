package io.skade.benchmarks;

import io.skade.testing.S3FaultProxy;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.util.ArrayList;
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
 * [no-join,empty-join,skade,skade-connector,paimon-default,paimon-bucket1; skade-memory-only can be
 * asked for too], {@code skade.bench.warmup} [true], {@code skade.bench.sampleMillis} [100], {@code
 * skade.bench.childTimeoutSeconds} per forked JVM [1200], {@code skade.bench.skadeOptions} appended
 * to the skade table's WITH clause (a table hint's OPTIONS through the catalog), e.g. {@code ,
 * 'lookup.async' = 'true'} [none], {@code skade.bench.dir} working directory, kept [a fresh
 * temporary one, deleted at the end unless {@code skade.bench.keep=true}]; tables an earlier run
 * wrote there for the same rows and files are reused (not once the directory has moved: Iceberg's
 * metadata holds absolute paths).
 *
 * <p>Object storage, {@code skade.bench.storage=s3} ({@link ObjectStorage}): both systems' tables
 * are written to an S3 server on loopback (skade's catalog stays on local disk), and every figure
 * is taken at each of {@code skade.bench.s3.delays}, each forked JVM reading through a proxy of its
 * own that holds every request that long and counts them: the engine alone (requests per probe,
 * cold and warm, with the engine's own counters: remote reads and bytes, disk-cache hits and
 * misses, files fetched ahead), then the variants (requests per probe of each run). Paimon reads
 * through its S3 file system ({@code paimon-s3}); skade's SQL variants open the same embedded
 * catalog as on local disk, its file IO given as SQL options ({@code io-impl}, {@code s3.*}, {@code
 * client.region}), so that local and S3 differ only in storage. {@code skade} keeps the ranges it
 * reads in its default disk cache, under its JVM's {@code java.io.tmpdir} (counted in its lookup
 * disk figure): from its warm-up job on, probes read what earlier ones kept there; {@code
 * skade-memory-only} is {@code skade} with {@code 'lookup.disk-cache.enabled' = 'false'}. After
 * each delay's tables, {@link LookupJoinS3Report} prints the requests and the targets on object
 * storage. Defaults on S3: {@code rows} 100000, {@code variants}
 * skade,skade-memory-only,paimon-default,paimon-bucket1.
 */
public final class LookupJoinBenchmark {
  private static final double HIT_RATIO = 0.9;

  /** Where skade's table lives in the bucket on S3, and its local catalog. */
  private static final String SKADE_WAREHOUSE = "skade";

  private static final String SKADE_CATALOG = "skade-catalog";

  private LookupJoinBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      child(args);
      return;
    }
    boolean s3 = ObjectStorage.s3();
    // The S3 server runs in this JVM: its Jetty warns of every request it failed.
    Harness.quietLogs("org.gaul");
    long rows = Long.getLong("skade.bench.rows", s3 ? 100_000 : 1_000_000);
    long probes = Long.getLong("skade.bench.probes", rows / 5);
    int files = Integer.getInteger("skade.bench.files", 32);
    List<LookupJoinVariant> variants =
        Arrays.stream(
                System.getProperty(
                        "skade.bench.variants",
                        s3
                            ? "skade,skade-memory-only,paimon-default,paimon-bucket1"
                            : "no-join,empty-join,skade,skade-connector,paimon-default,"
                                + "paimon-bucket1")
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
            + " sink; %d runs per JVM.%n",
        rows, files, probes, keyBound(rows), HIT_RATIO * 100, runs());
    System.out.println("working directory: " + work);

    LookupJoinForks forks = new LookupJoinForks(work, rows, probes, files, timeoutSeconds);
    // Where the figures are taken: local disk, or S3 at each delay (the key: its suffix).
    Map<String, Long> settings = new LinkedHashMap<>();
    if (s3) {
      for (long delay : ObjectStorage.delays()) {
        settings.put(".s3-" + delay + "ms", delay);
      }
    } else {
      settings.put("", -1L);
    }
    Map<String, Map<LookupJoinVariant, Properties>> results = new LinkedHashMap<>();
    Map<String, Properties> engines = new LinkedHashMap<>();
    ObjectStorage storage = null;
    try {
      if (s3) {
        storage = ObjectStorage.start(work.resolve("s3"));
        System.out.println(
            "storage: "
                + ObjectStorage.describe(0).replace(" 0 ms per request,", "")
                + " at "
                + ObjectStorage.delays()
                + " ms per request; skade's table on "
                + ObjectStorage.warehouse(SKADE_WAREHOUSE)
                + ", Paimon's on s3://"
                + ObjectStorage.PAIMON_BUCKET
                + "/"
                + " (Paimon's S3 file system, paimon-s3 "
                + "1.2.0: Hadoop's S3A)");
        System.out.println(
            "skade's SQL variants open the same embedded catalog as on local disk (its RocksDB"
                + " store on local disk), the file IO given as SQL options ('io-impl', 's3.*',"
                + " 'client.region'); the engine alone opens it in its JVM.");
      }
      List<String> writeOptions = s3 ? storageOptions(storage, 0) : List.of();
      Properties skadeTable = null;
      Properties paimonTables = null;
      if (variants.stream().anyMatch(LookupJoinVariant::isSkade)) {
        skadeTable =
            forks.prepare(
                "prepare-skade",
                s3
                    ? List.of(
                        work.resolve("s3").resolve(ObjectStorage.BUCKET).resolve(SKADE_WAREHOUSE),
                        work.resolve(SKADE_CATALOG))
                    : List.of(work.resolve("skade-warehouse")),
                LookupJoinVariant.Stack.SKADE,
                writeOptions);
        System.out.println("skade table: " + LookupJoinReport.describePrepared(skadeTable, ""));
      }
      if (variants.stream().anyMatch(LookupJoinVariant::isPaimon)) {
        paimonTables =
            forks.prepare(
                "prepare-paimon",
                s3
                    ? children(work.resolve("s3").resolve(ObjectStorage.PAIMON_BUCKET))
                    : List.of(work.resolve("paimon-warehouse")),
                LookupJoinVariant.Stack.PAIMON,
                writeOptions);
        for (String table : List.of("dim_default", "dim_bucket1")) {
          System.out.println(
              "Paimon " + table + ": " + LookupJoinReport.describePrepared(paimonTables, table));
        }
      }
      boolean skadeOk = LookupJoinForks.ok(skadeTable);
      if (skadeOk) {
        for (Map.Entry<String, Long> setting : settings.entrySet()) {
          System.out.println("running skade's lookup engine alone" + label(setting) + " ...");
          engines.put(
              setting.getKey(),
              forks.fork(
                  "probe-skade",
                  LookupJoinVariant.Stack.SKADE,
                  setting.getKey(),
                  s3 ? storageOptions(storage, setting.getValue()) : List.of()));
        }
      }
      for (Map.Entry<String, Long> setting : settings.entrySet()) {
        Map<LookupJoinVariant, Properties> byVariant = new LinkedHashMap<>();
        results.put(setting.getKey(), byVariant);
        List<String> options = new ArrayList<>();
        if (s3) {
          options.addAll(storageOptions(storage, setting.getValue()));
        }
        for (LookupJoinVariant variant : variants) {
          if (variant.isSkade() && !skadeOk
              || variant.isPaimon() && !LookupJoinForks.ok(paimonTables)) {
            Properties skipped = new Properties();
            skipped.setProperty("status", "failed");
            skipped.setProperty("message", "its table could not be written");
            byVariant.put(variant, skipped);
            continue;
          }
          System.out.printf("running %s%s ...%n", variant.id, label(setting));
          Properties result =
              forks.fork("run-" + variant.id, variant.stack, setting.getKey(), options);
          byVariant.put(variant, result);
          if (!"ok".equals(result.getProperty("status"))) {
            System.out.printf("%s: failed: %s%n", variant.id, result.getProperty("message"));
          }
        }
      }
    } finally {
      if (storage != null) {
        storage.close();
      }
      if (!keep) {
        LookupJoinForks.delete(work);
      }
    }
    for (Map.Entry<String, Long> setting : settings.entrySet()) {
      if (s3) {
        System.out.println();
        System.out.println("==== " + ObjectStorage.describe(setting.getValue()));
      }
      LookupJoinReport.printEngine(engines.get(setting.getKey()), probes);
      LookupJoinReport.print(results.get(setting.getKey()), rows, probes);
      if (s3) {
        LookupJoinS3Report.print(
            setting.getValue(), engines.get(setting.getKey()), results.get(setting.getKey()));
      }
    }
    System.out.println(
        "load average at the end (1, 5, 15 min): "
            + Harness.loadAverage()
            + "; other work on the machine slows every variant and spreads the runs.");
  }

  /** What is in {@code dir} (a bucket's directory on the S3 server: the bucket itself stays). */
  private static List<Path> children(Path dir) throws java.io.IOException {
    try (java.util.stream.Stream<Path> entries = Files.list(dir)) {
      return entries.toList();
    }
  }

  /** {@code " on S3 at 10 ms"}, or nothing on local disk. */
  private static String label(Map.Entry<String, Long> setting) {
    return setting.getValue() < 0 ? "" : " on S3 at " + setting.getValue() + " ms";
  }

  /**
   * The JVM options of a forked JVM on object storage: the S3 server, the delay its own proxy holds
   * each request, and where skade's catalog is.
   */
  private static List<String> storageOptions(ObjectStorage storage, long delay) {
    List<String> options = new ArrayList<>(ObjectStorage.CHILD_JVM_OPTIONS);
    options.add("-Dskade.bench.s3.endpoint=" + storage.serverEndpoint());
    options.add("-Dskade.bench.s3.delay=" + delay);
    options.add("-Dskade.bench.s3.bandwidth=" + ObjectStorage.bandwidth());
    return options;
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
    // On object storage every JVM reads through a proxy of its own (the delay it was given), so
    // that the requests it counts are its own.
    S3FaultProxy proxy = ObjectStorage.s3() ? ObjectStorage.childProxy() : null;
    Map<String, String> skadeCatalog =
        proxy == null
            ? Map.of("warehouse", skadeWarehouse.toString())
            : ObjectStorage.catalogProperties(
                proxy.endpoint(), SKADE_WAREHOUSE, skadeWarehouse.resolveSibling(SKADE_CATALOG));
    String paimonLocation =
        proxy == null
            ? paimonWarehouse.toUri().toString()
            : "s3://" + ObjectStorage.PAIMON_BUCKET + "/";
    Map<String, String> paimonOptions =
        proxy == null ? Map.of() : PaimonDim.s3Options(proxy.endpoint().toString());
    Properties out;
    try {
      if (role.equals("prepare-skade")) {
        out = SkadeDim.prepare(skadeCatalog, rows, files);
      } else if (role.equals("probe-skade")) {
        out =
            SkadeProbes.measure(
                skadeCatalog,
                rows,
                probes,
                Integer.getInteger("skade.bench.asyncThreads", 4),
                proxy);
      } else if (role.equals("prepare-paimon")) {
        out = PaimonDim.prepare(paimonLocation, paimonOptions, flinkTmp, rows, files);
      } else if (role.startsWith("run-")) {
        out =
            LookupJoinRun.run(
                LookupJoinVariant.of(role.substring(4)),
                rows,
                probes,
                flinkTmp,
                skadeSqlCatalog(skadeWarehouse, proxy),
                PaimonDim.catalogDdl(paimonLocation, paimonOptions),
                proxy);
      } else {
        throw new IllegalArgumentException("unknown role " + role);
      }
      out.putIfAbsent("status", "ok");
      out.setProperty("requestedRows", Long.toString(rows));
      out.setProperty("requestedFiles", Integer.toString(files));
      out.setProperty("requestedStorage", LookupJoinForks.storage());
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
   * The options of skade's SQL catalog and connector table: an embedded catalog in either case; on
   * object storage its warehouse on S3 and its RocksDB store in the run's directory, with the file
   * IO (endpoint: this JVM's proxy, credentials, region) as SQL options, so that the local and the
   * S3 variants differ only in where the files are.
   */
  private static String skadeSqlCatalog(Path skadeWarehouse, S3FaultProxy proxy) {
    if (proxy == null) {
      return "'warehouse' = '" + skadeWarehouse + "'";
    }
    Map<String, String> options =
        new java.util.TreeMap<>(
            ObjectStorage.catalogProperties(
                proxy.endpoint(), SKADE_WAREHOUSE, skadeWarehouse.resolveSibling(SKADE_CATALOG)));
    return options.entrySet().stream()
        .map(e -> "'" + e.getKey() + "' = '" + e.getValue().replace("'", "''") + "'")
        .collect(java.util.stream.Collectors.joining(", "));
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
