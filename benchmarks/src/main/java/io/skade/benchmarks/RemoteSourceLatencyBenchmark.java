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

  private RemoteSourceLatencyBenchmark() {}

  public static void main(String[] args) throws Exception {
    // Every MiniCluster warns of its missing Hadoop config, and every REST client that its token
    // implies OAuth2; keep the tables readable.
    Harness.quietLogs("org.apache.flink", "org.apache.iceberg.rest.auth");
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int slowCommits = Integer.getInteger("skade.bench.slowCommits", 60);
    int warmupCommits = Integer.getInteger("skade.bench.warmupCommits", 300);
    long pause = SourceLatencyRun.pauseMillis();
    Harness.printHeader("skade remote source latency benchmark");
    System.out.printf(
        "per source a fresh LOG table (id bigint, ts_nanos bigint, payload string),"
            + " %d warm-up then %d measured one-row appends %d-%d ms apart (%d for a 1 s monitor"
            + " interval), committed by this JVM through the skade server (a child JVM) over REST,"
            + " or into the embedded catalog; jobs at parallelism 1 in this JVM's MiniCluster.%n",
        warmupCommits, commits, pause, pause * 5 / 2, slowCommits);

    Path root = Files.createTempDirectory("skade-remote-latency-bench-");
    List<Latency> latencies = new ArrayList<>();
    try (ServerProcess server = new ServerProcess(root)) {
      Map<String, String> remote = ServerClients.properties(server);
      System.out.println("skade server: " + server.uri() + " (warehouse " + root + ")");
      try (RESTCatalog committer = ServerClients.committer("committer", server);
          CatalogConnection stamps = CatalogConnection.open(remote)) {
        committer.createNamespace(Namespace.of(NAMESPACE));

        String table = NAMESPACE + ".skade_remote";
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
                            .catalogProperties(remote)
                            .table(name)
                            .startupMode(StartupMode.LATEST)
                            .pollInterval(POLL_INTERVAL)
                            .build(),
                        WatermarkStrategy.noWatermarks(),
                        "skade remote")));

        latencies.add(embedded(root.resolve("embedded"), warmupCommits, commits));

        for (Duration interval : new Duration[] {Duration.ofMillis(100), Duration.ofSeconds(1)}) {
          String icebergTable = NAMESPACE + ".iceberg_" + interval.toMillis() + "ms";
          TableLoader loader =
              TableLoader.fromCatalog(
                  CatalogLoader.rest("iceberg", new Configuration(), new HashMap<>(remote)),
                  TableIdentifier.parse(icebergTable));
          latencies.add(
              SourceLatencyRun.measure(
                  "IcebergSource monitor " + label(interval) + " (REST)",
                  writer(committer, icebergTable),
                  icebergTable,
                  stamps.feed().subscribeCommits(),
                  warmupCommits,
                  interval.toMillis() < 1000 ? commits : slowCommits,
                  (env, name) -> SourceLatencyRun.icebergStream(env, loader, interval)));
        }
      }
    } finally {
      Harness.deleteTree(root);
    }
    print(latencies);
  }

  /** A fresh table of the server's catalog, and a writer on it as loaded over REST. */
  private static TableWriter writer(Catalog catalog, String name) {
    return new TableWriter(SourceLatencyRun.createTable(catalog, name));
  }

  /** The in-process figure: a catalog embedded in this JVM, its source woken in process. */
  private static Latency embedded(Path warehouse, int warmup, int commits) throws Exception {
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
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

  private static void print(List<Latency> latencies) {
    Latency remote = latencies.get(0);
    System.out.println();
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
    format = "%-36s %10s %10s %10s %10s | %11s %11s | %10s %10s%n";
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
        "call p99");
    System.out.println("-".repeat(127));
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
          ms(quantile(l.commitCallNanos(), 0.99) / 1e6));
    }
    System.out.println(
        "feed, ack = after the commit was stamped, when a commit feed subscriber in"
            + " this JVM heard of it (embedded: its batch durable; through the server: this JVM's"
            + " long-poll answered), and when the commit call returned; feed->row = from the former"
            + " to the row (for the embedded catalog the figure SourceLatencyBenchmark prints);"
            + " commit call = writing the Parquet file and committing, not in any latency.");

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
    return millis <= target ? "met" : "missed by " + ms(millis - target);
  }
}
