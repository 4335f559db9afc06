package io.skade.benchmarks;

import static io.skade.benchmarks.SourceLatencyRun.SCHEMA;
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
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * Prints, side by side in one run, how soon a row committed through a skade server reaches a
 * Flink job in another JVM: skade's {@code SkadeSource} in remote mode (its enumerator woken by
 * the server's long-poll commit feed), the same source on a catalog embedded in the job's JVM,
 * and Iceberg's own {@code IcebergSource} streaming over the server's Iceberg REST catalog
 * (monitor interval 100 ms and 1 s). It asserts nothing.
 *
 * <p>The server is a child JVM ({@link ServerProcess}) owning a RocksDB catalog on a temporary
 * warehouse. The committer is this JVM's main thread, an Iceberg {@link RESTCatalog} client of
 * the server, appending one row (a small Parquet file) per commit through {@code TableWriter} on
 * the table it loaded over REST. The jobs run in a local MiniCluster of this JVM, at
 * parallelism 1, with only the server's {@code uri} and token: enumerator and reader reach the
 * catalog over HTTP, not in process. The remote source's poll interval is 10 minutes, longer
 * than the run, so only the feed wakes it. Each configuration has a fresh table.
 *
 * <p>Latency through the server = the committer's commit call returned (the commit acknowledged)
 * → the row reached the job's last step before its sink; the embedded figure is measured as
 * {@link SourceLatencyBenchmark} measures it, from the commit's batch becoming durable (earlier
 * than its acknowledgement; its from-acknowledgement figure is printed too). A breakdown shows
 * when a commit feed subscriber in this JVM heard of each commit, relative to its
 * acknowledgement.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.commits} measured commits per
 * source [200], {@code skade.bench.slowCommits} for Iceberg's 1 s monitor interval [60], {@code
 * skade.bench.warmupCommits} per source [300], {@code skade.bench.pauseMillis} the least gap
 * between commits, the most being 2.5 times it [20].
 */
public final class RemoteSourceLatencyBenchmark {
  private static final String NAMESPACE = "bench";
  /** The remote source's poll interval: longer than the run, so only the feed wakes it. */
  private static final Duration POLL_INTERVAL = Duration.ofMinutes(10);
  private static final double TARGET_P50_MS = 15;
  private static final double TARGET_P99_MS = 50;

  /** One configuration's latencies and the moment its latency is counted from. */
  private record Figures(Latency latency, String from) {
    double millis(double quantile) {
      return from.equals("ack") ? latency.ackMillis(quantile) : latency.millis(quantile);
    }
  }

  private RemoteSourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    // Every MiniCluster warns of its missing Hadoop config, and every REST client that its token
    // implies OAuth2; keep the tables readable.
    for (String quiet : new String[] {"org.apache.flink", "org.apache.iceberg.rest.auth"}) {
      if (System.getProperty("org.slf4j.simpleLogger.log." + quiet) == null) {
        System.setProperty("org.slf4j.simpleLogger.log." + quiet, "error");
      }
    }
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 300);
    long pause = SourceLatencyRun.pauseMillis();
    System.out.printf("skade remote source latency benchmark | JVM %s | cores %d | max heap %d"
        + " MiB | %s%n", System.getProperty("java.runtime.version"),
        Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20,
        ZonedDateTime.now());
    System.out.printf("per source a fresh LOG table (id bigint, ts_nanos bigint, payload string),"
        + " %d warm-up then %d measured one-row appends %d-%d ms apart (%d for a 1 s monitor"
        + " interval), committed by this JVM through the skade server (a child JVM) over REST,"
        + " or into the embedded catalog; jobs at parallelism 1 in this JVM's MiniCluster.%n",
        warmupCommits, commits, pause, pause * 5 / 2, slowCommits);

    Path root = Files.createTempDirectory("skade-remote-latency-bench-");
    List<Figures> figures = new ArrayList<>();
    try (ServerProcess server = new ServerProcess(root)) {
      Map<String, String> remote = Map.of(CatalogConnection.URI, server.uri(),
          CatalogConnection.TOKEN, ServerProcess.TOKEN);
      System.out.println("skade server: " + server.uri() + " (warehouse " + root + ")");
      try (RESTCatalog committer = new RESTCatalog();
          CatalogConnection stamps = CatalogConnection.open(remote)) {
        committer.initialize("committer", new HashMap<>(remote));
        committer.createNamespace(Namespace.of(NAMESPACE));

        String table = NAMESPACE + ".skade_remote";
        figures.add(new Figures(SourceLatencyRun.measure("skade remote (server feed)",
            writer(committer, table), table, stamps.feed().subscribeCommits(), warmupCommits,
            commits, (env, name) -> env.fromSource(SkadeSource.builder()
                .catalogProperties(remote).table(name).startupMode(StartupMode.LATEST)
                .pollInterval(POLL_INTERVAL).build(),
                WatermarkStrategy.noWatermarks(), "skade remote")), "ack"));

        figures.add(new Figures(embedded(root.resolve("embedded"), warmupCommits, commits),
            "durable"));

        for (Duration interval : new Duration[] {Duration.ofMillis(100), Duration.ofSeconds(1)}) {
          String icebergTable = NAMESPACE + ".iceberg_" + interval.toMillis() + "ms";
          TableLoader loader = TableLoader.fromCatalog(
              CatalogLoader.rest("iceberg", new Configuration(), new HashMap<>(remote)),
              TableIdentifier.parse(icebergTable));
          figures.add(new Figures(SourceLatencyRun.measure(
              "IcebergSource monitor " + label(interval) + " (REST)",
              writer(committer, icebergTable), icebergTable, stamps.feed().subscribeCommits(),
              warmupCommits, interval.toMillis() < 1000 ? commits : slowCommits,
              (env, name) -> SourceLatencyRun.icebergStream(env, loader, interval)), "ack"));
        }
      }
    } finally {
      try (Stream<Path> paths = Files.walk(root)) {
        paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    print(figures);
  }

  /** A fresh table of the server's catalog, and a writer on it as loaded over REST. */
  private static TableWriter writer(Catalog catalog, String name) {
    Table table = catalog.createTable(TableIdentifier.parse(name), SCHEMA,
        PartitionSpec.unpartitioned(), Map.of("format-version", "2"));
    return new TableWriter(table);
  }

  /** The in-process figure: a catalog embedded in this JVM, its source woken in process. */
  private static Latency embedded(Path warehouse, int warmup, int commits) throws Exception {
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of(NAMESPACE));
      String table = NAMESPACE + ".skade_embedded";
      // Subscribed before the table's first commit: the feed stamps when each became durable.
      var stamps = catalog.subscribeCommits();
      return SourceLatencyRun.measure("skade in-process (commit feed)", writer(catalog, table),
          table, stamps, warmup, commits, (env, name) -> env.fromSource(SkadeSource.builder()
              .catalogProperties(properties).table(name).startupMode(StartupMode.LATEST).build(),
              WatermarkStrategy.noWatermarks(), "skade"));
    }
  }

  private static void print(List<Figures> figures) {
    Figures remote = figures.get(0);
    System.out.println();
    String format = "%-36s %-8s %8s %7s %8s %8s %8s %10s %10s%n";
    System.out.printf(format, "commit -> row", "from", "commits", "missed", "p50 ms", "p99 ms",
        "max ms", "p50 ratio", "p99 ratio");
    System.out.println("-".repeat(111));
    for (Figures f : figures) {
      Latency l = f.latency();
      System.out.printf(format, l.source(), f.from(), l.commits(), l.missed(),
          ms(f.millis(0.50)), ms(f.millis(0.99)), ms(f.millis(1.0)),
          fmt("%.2fx", f.millis(0.50) / remote.millis(0.50)),
          fmt("%.2fx", f.millis(0.99) / remote.millis(0.99)));
    }
    System.out.printf("from: ack = the committer's commit call returned; durable = the commit's"
        + " batch became durable (the embedded feed's stamp, before the call returns). ratio ="
        + " the row's latency / skade remote's. missed = measured rows not seen within %d s of"
        + " the last commit.%n", SEEN_TIMEOUT.toSeconds());

    System.out.println();
    format = "%-36s %9s %9s %9s %11s %11s %11s %11s %9s %9s%n";
    System.out.printf(format, "breakdown (ms)", "ack p50", "ack p99", "ack max", "stamp p50",
        "stamp p99", "stamp-ack50", "stamp-ack99", "call p50", "call p99");
    System.out.println("-".repeat(140));
    for (Figures f : figures) {
      Latency l = f.latency();
      System.out.printf(format, l.source(), ms(l.ackMillis(0.50)), ms(l.ackMillis(0.99)),
          ms(l.ackMillis(1.0)), ms(l.millis(0.50)), ms(l.millis(0.99)),
          ms(l.stampAfterAckMillis(0.50)), ms(l.stampAfterAckMillis(0.99)),
          ms(quantile(l.commitCallNanos(), 0.50) / 1e6),
          ms(quantile(l.commitCallNanos(), 0.99) / 1e6));
    }
    System.out.println("ack = from the commit call's return to the row; stamp = from a commit"
        + " feed subscriber in this JVM hearing of the commit to the row (embedded: the batch"
        + " durable; through the server: its long-poll answered); stamp-ack = when that"
        + " subscriber heard of it, after the call returned (negative: before); call = the"
        + " commit call (writing the Parquet file and committing).");

    System.out.println();
    double p50 = remote.millis(0.50);
    double p99 = remote.millis(0.99);
    System.out.printf("target, skade remote: p50 <= %.0f ms: %s ms, %s; p99 <= %.0f ms: %s ms,"
        + " %s.%n", TARGET_P50_MS, ms(p50), verdict(p50, TARGET_P50_MS), TARGET_P99_MS,
        ms(p99), verdict(p99, TARGET_P99_MS));
    long[] calls = figures.stream().filter(f -> f.from().equals("ack"))
        .flatMapToLong(f -> Arrays.stream(f.latency().commitCallNanos())).toArray();
    System.out.printf("commit calls through REST: p50 %s ms, p99 %s ms (not in the latency).%n",
        ms(quantile(calls, 0.50) / 1e6), ms(quantile(calls, 0.99) / 1e6));
  }

  private static String verdict(double millis, double target) {
    return millis <= target ? "met" : "missed by " + ms(millis - target) + " ms";
  }
}
