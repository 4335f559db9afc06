package io.skade.benchmarks;

import io.skade.testing.S3FaultProxy;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
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
 * A variant's runs of {@link LookupJoinBenchmark}, in the variant's own forked JVM: a session
 * cluster its jobs are submitted to, a warm-up job, then each measured run paired with a run of the
 * no-join pipeline; its figures, and the JVM's memory and disk peaks, go into the properties the
 * parent reads.
 */
final class LookupJoinRun {
  private LookupJoinRun() {}

  /**
   * Runs one variant's job {@code skade.bench.runs} times in this JVM, after a warm-up job, and
   * measures each run; the disk and memory peaks cover all of them. {@code skadeCatalog} and {@code
   * paimonCatalog} are as {@link LookupJoinVariant#query} takes them; on object storage {@code
   * proxy} (null otherwise) is the one this JVM reads through, and each run is charged with its
   * requests.
   */
  static Properties run(
      LookupJoinVariant variant,
      long rows,
      long probes,
      Path flinkTmp,
      String skadeCatalog,
      String paimonCatalog,
      S3FaultProxy proxy)
      throws Exception {
    DiskSampler sampler =
        new DiskSampler(
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
              + (LookupJoinBenchmark.keyBound(rows) - 1)
              + "')");
      String query = variant.query(env, skadeCatalog, paimonCatalog);
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
      int runs = LookupJoinBenchmark.runs();
      for (int i = 0; i < runs; i++) {
        // Each run is paired with a run of the no-join pipeline right before or after it (in
        // turn), in the same JVM and cluster: their difference is the run's start-up cost.
        if (i % 2 == 0) {
          measure(env, LookupJoinVariant.NO_JOIN_QUERY, false, rows, probes, i + ".baseline.", out);
        }
        int requestsBefore = proxy == null ? 0 : proxy.requests().size();
        measure(env, query, variant.joinsData(), rows, probes, i + ".", out);
        if (proxy != null) {
          requests(proxy.requests(), requestsBefore, i + ".", out);
        }
        if (i % 2 == 1) {
          measure(env, LookupJoinVariant.NO_JOIN_QUERY, false, rows, probes, i + ".baseline.", out);
        }
      }
      out.setProperty("runs", Integer.toString(runs));
    } finally {
      sampler.finish();
      cluster.close();
    }
    out.setProperty("flinkTmpPeakBytes", Long.toString(sampler.flinkTmpPeak()));
    out.setProperty("lookupDiskPeakBytes", Long.toString(sampler.lookupPeak()));
    out.setProperty("jvmTmpPeakBytes", Long.toString(sampler.jvmTmpPeak()));
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
    boolean joined = !query.equals(LookupJoinVariant.NO_JOIN_QUERY);
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

  /** The requests of a run (those from {@code from} on), under {@code prefix}. */
  private static void requests(
      List<S3FaultProxy.Request> all, int from, String prefix, Properties out) {
    List<S3FaultProxy.Request> run = all.subList(Math.min(from, all.size()), all.size());
    out.setProperty(prefix + "requests", Integer.toString(run.size()));
    out.setProperty(
        prefix + "gets", Long.toString(run.stream().filter(r -> r.method().equals("GET")).count()));
    out.setProperty(
        prefix + "rangedGets",
        Long.toString(run.stream().filter(S3FaultProxy.Request::rangedGet).count()));
    // Iceberg's own stream reads metadata files (manifests) from an offset on, open-ended; the
    // bound that matters is that of the probes' reads of data files.
    out.setProperty(
        prefix + "unboundedGets",
        Long.toString(
            run.stream()
                .filter(r -> r.rangedGet() && r.rangeLength() < 0)
                .filter(r -> !r.path().contains("/metadata/"))
                .count()));
    out.setProperty(
        prefix + "unboundedMetadataGets",
        Long.toString(
            run.stream()
                .filter(r -> r.rangedGet() && r.rangeLength() < 0)
                .filter(r -> r.path().contains("/metadata/"))
                .count()));
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
}
