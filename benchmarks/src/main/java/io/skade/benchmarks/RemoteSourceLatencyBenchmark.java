package io.skade.benchmarks;

import static io.skade.benchmarks.SourceLatencyRun.SEEN_TIMEOUT;
import static io.skade.benchmarks.SourceLatencyRun.fmt;
import static io.skade.benchmarks.SourceLatencyRun.label;
import static io.skade.benchmarks.SourceLatencyRun.ms;
import static io.skade.benchmarks.SourceLatencyRun.quantile;

import io.skade.benchmarks.SourceLatencyRun.Latency;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.server.ServerProcess;
import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * Prints, side by side in one run, how soon a row committed through a skade server reaches a Flink
 * job in another JVM: skade's {@code SkadeSource} in remote mode (its enumerator woken by the
 * server's long-poll commit feed), the same source on a catalog embedded in the job's JVM, and
 * Iceberg's own {@code IcebergSource} streaming over the server's Iceberg REST catalog (monitor
 * interval 100 ms and 1 s). It asserts nothing.
 *
 * <p>The server is a child JVM ({@link ServerProcess}) owning a RocksDB catalog on a temporary
 * warehouse. The committer is this JVM's main thread, an Iceberg {@link RESTCatalog} client of the
 * server ({@link ServerClients#committer}), appending one row (a small Parquet file) per commit
 * through {@code TableWriter} on the table it loaded over REST. The jobs run in a local MiniCluster
 * of this JVM, at parallelism 1, with only the server's {@code uri} and token: enumerator and
 * reader reach the catalog over HTTP, not in process. The remote source's poll interval is 10
 * minutes, longer than the run, so only the feed wakes it. Each configuration has a fresh table.
 *
 * <p>Each row's latency is printed from two moments of its commit ({@link SourceLatencyRun}): the
 * commit call returning to the committer (the commit acknowledged), and the catalog's committer
 * stamping the commit (the start of its group commit, before the fsync; the same moment for every
 * configuration, on this machine's wall clock, in whichever process owns the catalog). Iceberg's
 * REST client returns from a commit some 20 ms after the server made it durable (it parses the
 * answer, then loads the table again), and the remote source often emits the row before that, so
 * the figure from the acknowledgement can be negative. Ratios are of the figures from the
 * committer's stamp. A breakdown shows, after that stamp, when a commit feed subscriber in this JVM
 * heard of the commit (embedded: the batch durable, the moment {@link SourceLatencyBenchmark}
 * counts from), and when the commit call returned.
 *
 * <p>Object storage ({@code skade.bench.storage=s3}, see {@link ObjectStorage}): after the local
 * figures, a second server (the shaded jar, {@link ServerProcess#fromJar(Path, Path, String, List,
 * List)}) owns a catalog whose warehouse is on S3, its file IO ({@code -P}) pointed at the proxy,
 * which its {@code /v1/config} hands to the clients (given only {@code uri} and token; checked
 * before the figures: a client's write goes through the proxy), and the same code runs at each of
 * {@code skade.bench.s3.delays} (Iceberg's 1 s interval only locally), with each source's requests
 * per commit (the server's own included) and skade's p50 set against its target, the local p50 plus
 * three requests' delay, and beside it the local p50 plus three GETs as they cost there in all
 * ({@link ObjectStorage#measuredGetMillis}).
 *
 * <p>System properties (defaults in brackets; on S3 where it differs): {@code skade.bench.commits}
 * measured commits per source [200; 100], {@code skade.bench.slowCommits} for Iceberg's 1 s monitor
 * interval [60], {@code skade.bench.warmupCommits} per source, at the least [300; 100], then more
 * until this JVM's JIT is quiet, at most {@code skade.bench.maxWarmupCommits} in all [3000], {@code
 * skade.bench.pauseMillis} the least gap between commits, the most being 2.5 times it [20].
 */
public final class RemoteSourceLatencyBenchmark {
  private static final String NAMESPACE = "bench";

  /** The remote source's poll interval: longer than the run, so only the feed wakes it. */
  private static final Duration POLL_INTERVAL = Duration.ofMinutes(10);

  private static final double TARGET_P50_MS = 10;
  private static final double TARGET_P99_MS = 30;

  private RemoteSourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    // Every MiniCluster warns of its missing Hadoop config, and every REST client that its token
    // implies OAuth2; keep the tables readable.
    Harness.quietLogs("org.apache.flink", "org.apache.iceberg.rest.auth");
    SourceLatencyRun.traceStages();
    boolean s3 = ObjectStorage.s3();
    int commits = Integer.getInteger("skade.bench.commits", s3 ? 100 : 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", s3 ? 100 : 300);
    long pause = SourceLatencyRun.pauseMillis();
    Harness.printHeader(
        "skade remote source latency benchmark | load average " + Harness.loadAverage());
    System.out.printf(
        "per source a fresh LOG table (id bigint, ts_nanos bigint, payload string),"
            + " at least %d warm-up (until the JIT is quiet) then %d measured one-row appends"
            + " %d-%d ms apart (%d for a 1 s monitor interval, on local disk only), committed by"
            + " this JVM through the skade server (a child JVM) over REST, or into the embedded catalog; jobs at parallelism 1 in this"
            + " JVM's MiniCluster.%n",
        warmupCommits, commits, pause, pause * 5 / 2, slowCommits);

    Path root = Files.createTempDirectory("skade-remote-latency-bench-");
    Map<String, List<Latency>> latencies = new LinkedHashMap<>();
    Map<String, Storage> delays = new LinkedHashMap<>();
    try {
      try (ServerProcess server = new ServerProcess(root)) {
        System.out.println("skade server: " + server.uri() + " (warehouse " + root + ")");
        latencies.put(
            "local disk",
            run(
                ServerClients.properties(server),
                Map.of("warehouse", root.resolve("embedded").toString()),
                "",
                warmupCommits,
                commits,
                slowCommits,
                null));
        delays.put("local disk", new Storage(0, 0));
      }
      if (s3) {
        Path serverRoot = Files.createDirectories(root.resolve("s3-server"));
        try (ObjectStorage storage = ObjectStorage.start(root.resolve("s3"));
            // The server's own requests (metadata files) go through the proxy too, and its
            // /v1/config hands the proxy's endpoint to its clients, which are given only uri and
            // token: their reads and writes are held and counted as well.
            ServerProcess server =
                ServerProcess.fromJar(
                    serverRoot,
                    ServerClients.serverJar(),
                    ObjectStorage.warehouse("remote"),
                    ObjectStorage.CHILD_JVM_OPTIONS,
                    ServerClients.propertyFlags(storage.fileIoProperties()))) {
          System.out.println(
              "skade server on S3: "
                  + server.uri()
                  + " (warehouse "
                  + ObjectStorage.warehouse("remote")
                  + ", file IO through the proxy, handed to its clients)");
          for (long delay : ObjectStorage.delays()) {
            storage.delay(delay);
            System.out.println("measuring on " + storage.describe() + " ...");
            String label = "S3 " + delay + " ms";
            latencies.put(
                label,
                run(
                    ServerClients.properties(server),
                    storage.catalogProperties(
                        "embedded_" + delay, root.resolve("s3-embedded-" + delay)),
                    "_" + delay + "ms",
                    warmupCommits,
                    commits,
                    slowCommits,
                    storage));
            delays.put(label, new Storage(delay, storage.measuredGetMillis()));
          }
        }
      }
    } finally {
      Harness.deleteTree(root);
    }
    print(latencies, delays);
    System.out.println("load average at the end (1, 5, 15 min): " + Harness.loadAverage());
  }

  /**
   * The sources' latencies through the server {@code remote} names, and the embedded catalog's of
   * {@code embeddedProperties}; clients get only {@code remote} (uri, token), and on S3 their file
   * IO from the server. Table names end in {@code suffix}. On S3 ({@code s3} not null) each line's
   * requests per commit are printed, warm-up included, the server's own among them, after a check
   * that a client's writes go through the proxy; Iceberg's 1 s interval runs only locally.
   */
  private static List<Latency> run(
      Map<String, String> remote,
      Map<String, String> embeddedProperties,
      String suffix,
      int warmupCommits,
      int commits,
      int slowCommits,
      ObjectStorage s3)
      throws Exception {
    Map<String, String> client = new HashMap<>(remote);
    List<Latency> latencies = new ArrayList<>();
    try (RESTCatalog committer = ServerClients.committer("committer", client);
        CatalogConnection stamps = CatalogConnection.open(remote)) {
      if (!committer.namespaceExists(Namespace.of(NAMESPACE))) {
        committer.createNamespace(Namespace.of(NAMESPACE));
      }
      if (s3 != null) {
        clientsThroughProxy(committer, s3, suffix);
      }
      String table = NAMESPACE + ".skade_remote" + suffix;
      ObjectStorage.Requests before = s3 == null ? null : s3.requests();
      latencies.add(
          SourceLatencyRun.measure(
              "skade remote (server feed)",
              writer(committer, table),
              table,
              stamps.feed().subscribeCommits(),
              warmupCommits,
              commits,
              (env, name) ->
                  env.fromSource(
                      SkadeSource.builder()
                          .catalogProperties(client)
                          .table(name)
                          .startupMode(StartupMode.LATEST)
                          .pollInterval(POLL_INTERVAL)
                          .build(),
                      WatermarkStrategy.noWatermarks(),
                      "skade remote")));
      requests(s3, before, "skade remote", warmupCommits + commits);

      before = s3 == null ? null : s3.requests();
      latencies.add(embedded(embeddedProperties, warmupCommits, commits));
      requests(s3, before, "skade in-process", warmupCommits + commits);

      List<Duration> intervals =
          s3 == null
              ? List.of(Duration.ofMillis(100), Duration.ofSeconds(1))
              : List.of(Duration.ofMillis(100));
      for (Duration interval : intervals) {
        String icebergTable = NAMESPACE + ".iceberg_" + interval.toMillis() + "ms" + suffix;
        TableLoader loader =
            TableLoader.fromCatalog(
                CatalogLoader.rest("iceberg", new Configuration(), new HashMap<>(client)),
                TableIdentifier.parse(icebergTable));
        int n = interval.toMillis() < 1000 ? commits : slowCommits;
        before = s3 == null ? null : s3.requests();
        latencies.add(
            SourceLatencyRun.measure(
                "IcebergSource monitor " + label(interval) + " (REST)",
                writer(committer, icebergTable),
                icebergTable,
                stamps.feed().subscribeCommits(),
                warmupCommits,
                n,
                (env, name) -> SourceLatencyRun.icebergStream(env, loader, interval)));
        requests(s3, before, "IcebergSource " + label(interval), warmupCommits + n);
      }
    }
    return latencies;
  }

  private static void requests(
      ObjectStorage s3, ObjectStorage.Requests before, String source, int commits) {
    if (s3 != null) {
      System.out.println(
          "  " + source + ": requests " + s3.requests().minus(before).per(commits, "commit"));
    }
  }

  /**
   * Checks that a client given only the server's uri and token writes through the proxy: the file
   * IO the server handed it (its {@code -P} properties, the proxy's endpoint) and not the S3
   * server's own address or the AWS SDK's defaults, so that its requests are held and counted.
   */
  private static void clientsThroughProxy(RESTCatalog client, ObjectStorage s3, String suffix)
      throws java.io.IOException {
    TableIdentifier id = TableIdentifier.of(NAMESPACE, "io_check" + suffix);
    org.apache.iceberg.Table table = SourceLatencyRun.createTable(client, id.toString());
    try {
      ObjectStorage.Requests before = s3.requests();
      table.io().newOutputFile(table.location() + "/data/io-check").createOrOverwrite().close();
      long puts = s3.requests().minus(before).puts();
      if (puts < 1) {
        throw new IllegalStateException(
            "a client of the server wrote a file without a request through the proxy: its file"
                + " IO does not come from the server's /v1/config (-P s3.endpoint=<proxy>)");
      }
      System.out.println(
          "  a client given only uri and token wrote through the proxy ("
              + puts
              + " PUT): its file IO is the server's");
    } finally {
      client.dropTable(id, true);
    }
  }

  /** A fresh table of the server's catalog, and a writer on it as loaded over REST. */
  static TableWriter writer(Catalog catalog, String name) {
    return new TableWriter(SourceLatencyRun.createTable(catalog, name));
  }

  /**
   * A storage's per-request delay and what a small GET costs there in all ({@link
   * ObjectStorage#measuredGetMillis}; 0 on disk).
   */
  private record Storage(long delayMillis, double getMillis) {}

  /** The in-process figure: a catalog embedded in this JVM, its source woken in process. */
  private static Latency embedded(Map<String, String> properties, int warmup, int commits)
      throws Exception {
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of(NAMESPACE));
      return SourceLatencyRun.measureEmbedded(
          "skade in-process (commit feed)",
          catalog,
          NAMESPACE + ".skade_embedded",
          warmup,
          commits,
          SourceLatencyRun.skadeInProcess(properties));
    }
  }

  private static void print(Map<String, List<Latency>> latencies, Map<String, Storage> delays) {
    latencies.forEach(
        (storage, list) ->
            print(storage, list, storage.equals(latencies.keySet().iterator().next())));
    Iterator<List<Latency>> all = latencies.values().iterator();
    List<Latency> local = all.next();
    System.out.println();
    for (Map.Entry<String, List<Latency>> e : latencies.entrySet()) {
      if (e.getValue() == local) {
        continue;
      }
      long delay = delays.get(e.getKey()).delayMillis();
      double get = delays.get(e.getKey()).getMillis();
      for (int i = 0; i < 2; i++) { // skade remote, skade in-process
        Latency on = e.getValue().get(i);
        double target = local.get(i).committedMillis(0.50) + 3 * delay;
        double measured = local.get(i).committedMillis(0.50) + 3 * get;
        double p50 = on.committedMillis(0.50);
        System.out.printf(
            "target, %s on %s: p50 from commit <= local p50 + 3 GETs (%s + 3 x %d ms = %s ms):"
                + " p50 %s ms, %s; a GET measured there costs %s ms: local p50 + 3 measured GETs"
                + " = %s ms, %s%n",
            on.source(),
            e.getKey(),
            ms(local.get(i).committedMillis(0.50)),
            delay,
            ms(target),
            ms(p50),
            verdict(p50, target),
            ms(get),
            ms(measured),
            verdict(p50, measured));
      }
    }
  }

  /** One storage's tables; the absolute target ({@code withTarget}) only for the local figures. */
  private static void print(String storage, List<Latency> latencies, boolean withTarget) {
    Latency remote = latencies.get(0);
    System.out.println();
    System.out.println("== " + storage);
    String format = "%-36s %7s %6s | %8s %8s %8s %9s %9s | %8s %8s %8s%n";
    System.out.printf("%52s| %-47s| %s%n", "", "from commit", "from ack");
    System.out.printf(
        format,
        "commit -> row (ms)",
        "commits",
        "missed",
        "p50",
        "p99",
        "max",
        "p50 ratio",
        "p99 ratio",
        "p50",
        "p99",
        "max");
    System.out.println("-".repeat(129));
    for (Latency l : latencies) {
      System.out.printf(
          format,
          l.source(),
          l.commits(),
          l.missed(),
          ms(l.committedMillis(0.50)),
          ms(l.committedMillis(0.99)),
          ms(l.committedMillis(1.0)),
          fmt("%.2fx", l.committedMillis(0.50) / remote.committedMillis(0.50)),
          fmt("%.2fx", l.committedMillis(0.99) / remote.committedMillis(0.99)),
          ms(l.ackMillis(0.50)),
          ms(l.ackMillis(0.99)),
          ms(l.ackMillis(1.0)));
    }
    System.out.printf(
        "from commit = from the catalog's committer stamping the commit (the start"
            + " of its group commit, before the fsync; the server's clock is this machine's); from"
            + " ack = from the committer's commit call returning (negative: the row came first)."
            + " ratio = the source's latency from commit / skade remote's. missed = measured rows"
            + " not seen within %d s of the last commit.%n",
        SEEN_TIMEOUT.toSeconds());

    System.out.println();
    format = "%-36s %10s %10s %10s %10s | %11s %11s | %10s %10s | %8s %6s%n";
    System.out.printf(
        format,
        "breakdown (ms)",
        "feed p50",
        "feed p99",
        "ack p50",
        "ack p99",
        "feed->row50",
        "feed->row99",
        "call p50",
        "call p99",
        "warm-up",
        "JIT %");
    System.out.println("-".repeat(145));
    for (Latency l : latencies) {
      System.out.printf(
          format,
          l.source(),
          ms(l.feedAfterCommittedMillis(0.50)),
          ms(l.feedAfterCommittedMillis(0.99)),
          ms(l.ackAfterCommittedMillis(0.50)),
          ms(l.ackAfterCommittedMillis(0.99)),
          ms(l.millis(0.50)),
          ms(l.millis(0.99)),
          ms(quantile(l.commitCallNanos(), 0.50) / 1e6),
          ms(quantile(l.commitCallNanos(), 0.99) / 1e6),
          l.warmupCommits(),
          fmt("%.1f", 100 * l.jitShare()));
    }
    System.out.println(
        "feed, ack = after the commit was stamped, when a commit feed subscriber in"
            + " this JVM heard of it (embedded: its batch durable; through the server: this JVM's"
            + " long-poll answered), and when the commit call returned; feed->row = from the former"
            + " to the row (for the embedded catalog the figure SourceLatencyBenchmark prints);"
            + " commit call = writing the Parquet file and committing, not in any latency."
            + " warm-up, JIT % = the commits before the measured ones (at least the set number,"
            + " then more until this JVM's JIT is quiet) and this JVM's compilation time over the"
            + " measured commits, a share of their time.");
    latencies.forEach(l -> SourceLatencyRun.printStages(l.source() + " on " + storage, l));

    if (!withTarget) {
      return;
    }
    System.out.println();
    System.out.printf(
        "target, skade remote, p50 <= %.0f ms and p99 <= %.0f ms: from ack p50 %s"
            + " (%s), p99 %s (%s); from commit p50 %s (%s), p99 %s (%s).%n",
        TARGET_P50_MS,
        TARGET_P99_MS,
        ms(remote.ackMillis(0.50)),
        verdict(remote.ackMillis(0.50), TARGET_P50_MS),
        ms(remote.ackMillis(0.99)),
        verdict(remote.ackMillis(0.99), TARGET_P99_MS),
        ms(remote.committedMillis(0.50)),
        verdict(remote.committedMillis(0.50), TARGET_P50_MS),
        ms(remote.committedMillis(0.99)),
        verdict(remote.committedMillis(0.99), TARGET_P99_MS));
  }

  private static String verdict(double millis, double target) {
    if (Double.isNaN(millis)) {
      return "n/a";
    }
    return millis <= target ? "met" : "missed by " + ms(millis - target);
  }
}
