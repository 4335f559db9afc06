package io.skade.benchmarks;

import io.skade.catalog.CatalogConnection;
import io.skade.server.ServerGroupProcess;
import io.skade.server.ServerProcess;
import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.test.TestingServer;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

/**
 * Prints, side by side in one run, what a replicated server group costs and gives beside a single
 * server: commit latency and commits/s at 1, 4 and 16 committers (each committer on a table of its
 * own), commit → row on a skade CDC source, and the failover time over ten leader kills. It asserts
 * nothing.
 *
 * <p>The single server and the group's three members are child JVMs ({@link ServerProcess}) on this
 * machine, the group on a ZooKeeper in this JVM (Curator's {@code TestingServer}), with one
 * synchronous standby ({@code --replication-acks 1}), each member's copy of the catalog on the same
 * local disk as the single server's catalog. Committers are Iceberg {@code RESTCatalog}s of the
 * leader (the group's commit path is what is measured; skade's own clients follow the leader given
 * every member's address), each appending a data file's metadata per commit. The CDC source is
 * given every member's address.
 *
 * <p>Failover: a committer commits through the group (every member's address) without pause;
 * SIGKILL to the leader, then the time until the first commit acknowledged after the kill, per kill
 * (the killed member is restarted as a standby before the next). ZooKeeper's session timeout is
 * part of it ({@code skade.bench.sessionTimeout} [PT6S], the default).
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.seconds} per commit cell [10],
 * {@code skade.bench.committers} [1,4,16], {@code skade.bench.commits} measured CDC commits [200],
 * {@code skade.bench.warmupCommits} [300], {@code skade.bench.kills} [10].
 */
public final class ServerGroupBenchmark {
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  private ServerGroupBenchmark() {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs(
        "org.apache.flink",
        "org.apache.iceberg.rest.auth",
        "org.apache.zookeeper",
        "org.apache.curator");
    int seconds = Integer.getInteger("skade.bench.seconds", 10);
    int[] committerCounts = CommitBenchmark.ints("skade.bench.committers", "1,4,16");
    int commits = Integer.getInteger("skade.bench.commits", 200);
    int warmup = Integer.getInteger("skade.bench.warmupCommits", 300);
    int kills = Integer.getInteger("skade.bench.kills", 10);
    String sessionTimeout = System.getProperty("skade.bench.sessionTimeout", "PT6S");
    List<String> parts =
        List.of(System.getProperty("skade.bench.parts", "commits,cdc,failover").split(","));
    Harness.printHeader("skade server group benchmark | load average " + Harness.loadAverage());

    Path root = Files.createTempDirectory("skade-group-bench-");
    try (TestingServer zookeeper = new TestingServer(true);
        ServerProcess single = new ServerProcess(Files.createDirectories(root.resolve("single")));
        ServerGroupProcess group =
            new ServerGroupProcess(
                root.resolve("group"),
                "bench",
                zookeeper.getConnectString(),
                3,
                "--zookeeper-session-timeout",
                sessionTimeout)) {
      System.out.println(
          "single server "
              + single.uri()
              + "; group "
              + group.uri()
              + " (ZooKeeper session "
              + sessionTimeout
              + ", one synchronous standby)");

      if (parts.contains("commits")) {
        commits(single, group, committerCounts, seconds);
      }
      if (parts.contains("cdc")) {
        cdc(single, group, warmup, commits);
      }
      if (parts.contains("failover")) {
        failover(group, kills, sessionTimeout);
      }
    } finally {
      Harness.deleteTree(root);
    }
    System.out.println("load average at the end (1, 5, 15 min): " + Harness.loadAverage());
  }

  private static void commits(
      ServerProcess single, ServerGroupProcess group, int[] committerCounts, int seconds)
      throws Exception {
    List<String[]> rows = new ArrayList<>();
    rows.add(
        new String[] {
          "committers",
          "design",
          "commits",
          "commits/s",
          "p50 ms",
          "p99 ms",
          "group / single commits/s"
        });
    warmCommits(single.uri(), group.leader().uri(), seconds);
    for (int committers : committerCounts) {
      Cell one = commitCell(single.uri(), "single_" + committers, committers, seconds);
      Cell replicated =
          commitCell(group.leader().uri(), "group_" + committers, committers, seconds);
      rows.add(one.row(committers, "single server", ""));
      rows.add(
          replicated.row(
              committers,
              "group (acks 1)",
              fmt("%.2fx", replicated.perSecond() / one.perSecond())));
    }
    CommitBenchmark.printAligned(rows);
  }

  private static void cdc(ServerProcess single, ServerGroupProcess group, int warmup, int commits)
      throws Exception {
    SourceLatencyRun.Latency alone =
        cdc(ServerClients.properties(single), single.uri(), "single", warmup, commits);
    SourceLatencyRun.Latency grouped =
        cdc(
            Map.of(
                CatalogConnection.URI, group.uri(), CatalogConnection.TOKEN, ServerProcess.TOKEN),
            group.leader().uri(),
            "group",
            warmup,
            commits);
    List<String[]> cdc = new ArrayList<>();
    cdc.add(
        new String[] {
          "CDC source through",
          "rows",
          "commit → row p50 ms",
          "p99 ms",
          "feed → row p50 ms",
          "p99 ms",
          "ack → row p50 ms",
          "p99 ms",
          "group / single p50"
        });
    cdc.add(latencyRow("single server", alone, ""));
    cdc.add(
        latencyRow(
            "group (acks 1)",
            grouped,
            fmt("%.2fx", grouped.committedMillis(0.5) / alone.committedMillis(0.5))));
    CommitBenchmark.printAligned(cdc);
    System.out.printf(
        "target, commit → row through the group within 1.2x the single server's: from the"
            + " commit's stamp p50 %.2fx, p99 %.2fx; from the commit on the feed (acknowledged:"
            + " replicated) p50 %.2fx, p99 %.2fx%n",
        grouped.committedMillis(0.5) / alone.committedMillis(0.5),
        grouped.committedMillis(0.99) / alone.committedMillis(0.99),
        grouped.millis(0.5) / alone.millis(0.5),
        grouped.millis(0.99) / alone.millis(0.99));
  }

  private static void failover(ServerGroupProcess group, int kills, String sessionTimeout)
      throws Exception {
    long[] failovers = failovers(group, kills);
    Arrays.sort(failovers);
    System.out.println(
        "failover, leader SIGKILLed → first commit acknowledged after it, ms, sorted: "
            + Arrays.toString(failovers));
    double p99 = SourceLatencyRun.quantile(failovers, 0.99);
    System.out.printf(
        "target, failover p99 <= 10 s (session timeout %s included): p50 %.2f s, p99 %.2f s: %s%n",
        sessionTimeout,
        SourceLatencyRun.quantile(failovers, 0.5) / 1e3,
        p99 / 1e3,
        p99 <= 10_000 ? "met" : "missed");
  }

  private static String fmt(String format, double value) {
    return CommitBenchmark.fmt(format, value);
  }

  private static String[] latencyRow(String design, SourceLatencyRun.Latency l, String ratio) {
    return new String[] {
      design,
      Integer.toString(l.row().length),
      fmt("%.2f", l.committedMillis(0.5)),
      fmt("%.2f", l.committedMillis(0.99)),
      fmt("%.2f", l.millis(0.5)),
      fmt("%.2f", l.millis(0.99)),
      fmt("%.2f", l.ackMillis(0.5)),
      fmt("%.2f", l.ackMillis(0.99)),
      ratio
    };
  }

  /** One commit cell's figures. */
  private record Cell(int commits, double seconds, long[] sortedNanos) {
    double perSecond() {
      return commits / seconds;
    }

    String[] row(int committers, String design, String ratio) {
      return new String[] {
        Integer.toString(committers),
        design,
        Integer.toString(commits),
        fmt("%.0f", perSecond()),
        fmt("%.2f", SourceLatencyRun.quantile(sortedNanos, 0.5) / 1e6),
        fmt("%.2f", SourceLatencyRun.quantile(sortedNanos, 0.99) / 1e6),
        ratio
      };
    }
  }

  private static void warmCommits(String single, String leader, int seconds) throws Exception {
    commitCell(single, "warm_single", 4, seconds);
    commitCell(leader, "warm_group", 4, seconds);
  }

  /**
   * {@code committers} threads, each a REST client of {@code uri} appending a data file's metadata
   * to a table of its own, for {@code seconds}; each commit call's latency.
   */
  private static Cell commitCell(String uri, String namespace, int committers, int seconds)
      throws Exception {
    List<RESTCatalog> clients = new ArrayList<>();
    List<Table> tables = new ArrayList<>();
    Map<String, String> properties =
        Map.of(CatalogConnection.URI, uri, CatalogConnection.TOKEN, ServerProcess.TOKEN);
    for (int c = 0; c < committers; c++) {
      RESTCatalog client = ServerClients.committer("committer-" + c, properties);
      clients.add(client);
      if (c == 0) {
        client.createNamespace(Namespace.of(namespace));
      }
      tables.add(client.createTable(TableIdentifier.of(namespace, "t" + c), SCHEMA));
    }
    List<long[]> latencies = new ArrayList<>();
    AtomicLong made = new AtomicLong();
    CountDownLatch start = new CountDownLatch(1);
    long[] window = new long[2];
    List<Thread> threads = new ArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    for (Table table : tables) {
      long[] mine = new long[1_000_000];
      latencies.add(mine);
      Thread thread =
          new Thread(
              () -> {
                try {
                  start.await();
                  int n = 0;
                  while (!stop.get()) {
                    long begin = System.nanoTime();
                    table.newFastAppend().appendFile(file(table, n)).commit();
                    mine[n++] = System.nanoTime() - begin;
                    made.incrementAndGet();
                  }
                  mine[n] = -1;
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              });
      thread.start();
      threads.add(thread);
    }
    window[0] = System.nanoTime();
    start.countDown();
    Thread.sleep(seconds * 1000L);
    stop.set(true);
    for (Thread thread : threads) {
      thread.join();
    }
    window[1] = System.nanoTime();
    for (RESTCatalog client : clients) {
      client.close();
    }
    long[] all =
        latencies.stream()
            .flatMapToLong(l -> Arrays.stream(l).takeWhile(v -> v > 0))
            .sorted()
            .toArray();
    return new Cell((int) made.get(), (window[1] - window[0]) / 1e9, all);
  }

  /** A data file's metadata (the file itself is not read by a commit). */
  private static DataFile file(Table table, int n) {
    return DataFiles.builder(PartitionSpec.unpartitioned())
        .withPath(table.location() + "/data/f-" + n + ".parquet")
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(1024)
        .withRecordCount(1)
        .build();
  }

  /** Commit → row on a skade source given {@code clients}, commits through {@code committerUri}. */
  private static SourceLatencyRun.Latency cdc(
      Map<String, String> clients, String committerUri, String label, int warmup, int commits)
      throws Exception {
    Map<String, String> source = new HashMap<>(clients);
    try (RESTCatalog committer =
            ServerClients.committer(
                "cdc-committer",
                Map.of(
                    CatalogConnection.URI,
                    committerUri,
                    CatalogConnection.TOKEN,
                    ServerProcess.TOKEN));
        CatalogConnection stamps = CatalogConnection.open(clients)) {
      committer.createNamespace(Namespace.of("cdc_" + label));
      String table = "cdc_" + label + ".log";
      return SourceLatencyRun.measure(
          "skade source through the " + label,
          RemoteSourceLatencyBenchmark.writer(committer, table),
          table,
          stamps.feed().subscribeCommits(),
          warmup,
          commits,
          (env, name) ->
              env.fromSource(
                  SkadeSource.builder()
                      .catalogProperties(source)
                      .table(name)
                      .startupMode(StartupMode.LATEST)
                      .pollInterval(Duration.ofMinutes(10))
                      .build(),
                  WatermarkStrategy.noWatermarks(),
                  "skade " + label));
    }
  }

  /** Per kill, ms from the leader's SIGKILL to the first commit acknowledged after it. */
  private static long[] failovers(ServerGroupProcess group, int kills) throws Exception {
    AtomicLong lastAck = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    Map<String, String> properties =
        Map.of(
            CatalogConnection.URI,
            group.uri(),
            CatalogConnection.TOKEN,
            ServerProcess.TOKEN,
            CatalogConnection.RETRY_TIMEOUT,
            "2 min");
    // A committer through the group (every member's address), committing without pause.
    Thread committer =
        new Thread(
            () -> {
              try (CatalogConnection connection = CatalogConnection.open(properties)) {
                ((SupportsNamespaces) connection.catalog())
                    .createNamespace(Namespace.of("failover"));
                Table table =
                    connection.catalog().createTable(TableIdentifier.of("failover", "t"), SCHEMA);
                for (int n = 0; !stop.get(); n++) {
                  try {
                    table.newFastAppend().appendFile(file(table, n)).commit();
                    lastAck.set(System.nanoTime());
                  } catch (RuntimeException notMade) {
                    // lost with the leader, or of unknown outcome: the next commit is new
                    table.refresh();
                  }
                }
              }
            },
            "failover-committer");
    committer.start();
    long[] failovers = new long[kills];
    try {
      for (int k = 0; k < kills; k++) {
        ServerProcess leader = group.leader();
        long before = lastAck.get();
        while (lastAck.get() == before) {
          Thread.sleep(10); // commits flow on this leader
        }
        Thread.sleep(500);
        leader.kill();
        long killed = System.nanoTime();
        while (lastAck.get() < killed) {
          Thread.sleep(1);
        }
        failovers[k] = (lastAck.get() - killed) / 1_000_000;
        System.out.println("  kill " + (k + 1) + ": " + failovers[k] + " ms");
        leader.restart();
      }
    } finally {
      stop.set(true);
      committer.join(120_000);
    }
    return failovers;
  }
}
