package io.skade.e2e;

import static io.skade.e2e.SkadeOnFlinkClusterTest.exceptionsOf;
import static io.skade.e2e.SkadeOnFlinkClusterTest.jobIds;
import static io.skade.e2e.SkadeOnFlinkClusterTest.libWithConnector;
import static io.skade.e2e.SkadeOnFlinkClusterTest.read;
import static io.skade.e2e.SkadeOnFlinkClusterTest.rest;
import static io.skade.e2e.SkadeOnFlinkClusterTest.restarts;
import static io.skade.e2e.SkadeOnFlinkClusterTest.serverJar;
import static io.skade.e2e.SkadeOnFlinkClusterTest.snapshots;
import static io.skade.e2e.SkadeOnFlinkClusterTest.submit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.server.ServerProcess;
import io.skade.testing.S3FaultProxy;
import io.skade.testing.S3Server;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * skade on a cluster with its warehouse on S3 (a real S3-compatible server on loopback, behind a
 * {@link S3FaultProxy}): the skade server's shaded jar with {@code --warehouse s3://...} and the
 * file-IO properties as {@code -P} (its RocksDB catalog on its local disk), a Flink session cluster
 * of a JobManager and two TaskManagers with skade's connector jar and Iceberg's AWS bundle in
 * {@code lib/}, Flink's S3 file system in {@code plugins/s3-fs-hadoop/} and the checkpoints on S3.
 * Jobs name the catalog by {@code uri} and {@code token} only: the file-IO properties reach the
 * TaskManagers from the server's {@code /v1/config}. One cluster and server serve both tests, the
 * fault injection first (the other kills a TaskManager). See docs/cluster.md.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SkadeOnFlinkClusterS3Test {
  /** What a JVM talking to s3proxy asks of the AWS SDK (s3proxy predates its default checksums). */
  private static final List<String> CHECKSUMS =
      List.of(
          "-Daws.requestChecksumCalculation=when_required",
          "-Daws.responseChecksumValidation=when_required");

  private static final TableIdentifier EVENTS = TableIdentifier.of("faults", "events");
  private static final TableIdentifier EVENTS_COPY = TableIdentifier.of("faults", "events_copy");
  private static final long ROWS = 2_000;
  private static final long KEYS = 200;

  /** Rounds of faults injected while the jobs run: each a connection reset and two 503s. */
  private static final int FAULT_ROUNDS = 10;

  private static Path root;
  private static S3Server s3;
  private static S3FaultProxy proxy;
  private static ServerProcess server;
  private static FlinkCluster cluster;
  private static boolean failed;

  @RegisterExtension
  static final TestWatcher FAILURES =
      new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
          failed = true;
        }
      };

  @BeforeAll
  static void start() throws Exception {
    root = ClusterLogs.of(SkadeOnFlinkClusterS3Test.class, "cluster");
    s3 = S3Server.start(root.resolve("s3"));
    s3.bucket("lake");
    proxy = new S3FaultProxy(s3.endpoint());
    List<String> flags = new ArrayList<>();
    S3Server.fileIoProperties(proxy.endpoint())
        .forEach((key, value) -> flags.addAll(List.of("-P", key + "=" + value)));
    Files.createDirectories(root.resolve("server"));
    server =
        ServerProcess.fromJar(
            root.resolve("server"), serverJar(), "s3://lake/warehouse", CHECKSUMS, flags);
    Map<String, String> settings = new HashMap<>(SkadeOnFlinkClusterTest.RESTARTS);
    settings.put("execution.checkpointing.dir", "s3://lake/checkpoints");
    settings.put("s3.endpoint", proxy.endpoint().toString());
    settings.put("s3.endpoint.region", S3Server.REGION);
    settings.put("s3.path.style.access", "true");
    settings.put("s3.connection.ssl.enabled", "false");
    settings.put("s3.access-key", S3Server.ACCESS_KEY);
    settings.put("s3.secret-key", S3Server.SECRET_KEY);
    // Hadoop's S3A deletes directory markers with multi-object deletes, which s3proxy's
    // file-system store does not answer as S3A expects: one object at a time, markers kept.
    settings.put("s3.multiobjectdelete.enable", "false");
    settings.put("s3.directory.marker.retention", "keep");
    // In parallel mode (Flink's default) an aborted checkpoint's directory is deleted on the
    // JobMaster's main thread, under its checkpoint lock, whenever its states are discarded
    // first. Against s3proxy's file-system store that delete fails once a TaskManager wrote a
    // file into the directory, and S3A's retries of it then stall the JobMaster for minutes.
    // Serial mode deletes on Flink's I/O threads.
    settings.put("execution.checkpointing.cleaner.parallel-mode", "false");
    settings.put("env.java.opts.all", String.join(" ", CHECKSUMS));
    List<String> lib = new ArrayList<>(libWithConnector());
    lib.add(awsBundle().toString());
    cluster = FlinkCluster.start(root.resolve("flink"), lib, plugins(), 2, 4, settings);
  }

  @AfterAll
  static void stop() throws Exception {
    try (AutoCloseable s3Server = s3;
        AutoCloseable faults = proxy;
        AutoCloseable skade = server;
        AutoCloseable flink = cluster) {
      // closed in reverse order: Flink, the skade server, the proxy, S3
    }
    if (!failed) {
      ClusterLogs.delete(root);
    }
  }

  /** Iceberg's AWS bundle (the AWS SDK), as a user puts it into Flink's lib/. */
  private static Path awsBundle() throws Exception {
    Path jar = Path.of(S3Client.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    assertThat(jar.getFileName().toString()).startsWith("iceberg-aws-bundle-");
    return jar;
  }

  /** Flink's plugins/ with its S3 file system in s3-fs-hadoop/ (copied there by the build). */
  private static Path plugins() {
    Path plugins = Path.of(System.getProperty("skade.flinkPlugins")).toAbsolutePath();
    assertThat(plugins.resolve("s3-fs-hadoop"))
        .as("Flink's S3 plugin; copied by the build's generate-test-resources phase")
        .isDirectoryContaining("glob:**/flink-s3-fs-hadoop-*.jar");
    return plugins;
  }

  @Test
  @Order(1)
  @Timeout(300)
  void s3SlowDownsAndResetsDuringRunningJobsAreRetriedAndTheOutputStaysExactlyOnce()
      throws Exception {
    Path dir = Files.createDirectories(root.resolve("faults"));
    String script =
        String.join(
            "\n",
            "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '" + server.uri() + "',",
            "  'token' = '" + ServerProcess.TOKEN + "');",
            "CREATE DATABASE lake.faults;",
            "CREATE TABLE lake.faults.events (id BIGINT, version BIGINT,",
            "  PRIMARY KEY (id) NOT ENFORCED);",
            "CREATE TABLE lake.faults.events_copy (id BIGINT, version BIGINT,",
            "  PRIMARY KEY (id) NOT ENFORCED);",
            "CREATE TEMPORARY TABLE feed (seq BIGINT) WITH ('connector' = 'datagen',",
            "  'rows-per-second' = '100', 'fields.seq.kind' = 'sequence',",
            "  'fields.seq.start' = '1', 'fields.seq.end' = '" + ROWS + "');",
            "SET 'execution.checkpointing.interval' = '1s';",
            "SET 'parallelism.default' = '2';",
            "INSERT INTO lake.faults.events SELECT seq % " + KEYS + ", seq FROM feed;",
            "SET 'parallelism.default' = '1';",
            "INSERT INTO lake.faults.events_copy SELECT * FROM lake.faults.events;",
            "");
    List<String> jobs = jobIds(submit(cluster, dir, script, List.of()));
    try (RESTCatalog rest = rest(server)) {
      assertThat(jobs).hasSize(2);
      for (String job : jobs) {
        await("job " + job + " running")
            .atMost(Duration.ofMinutes(2))
            .pollInterval(Duration.ofMillis(500))
            .until(() -> cluster.allTasksRunning(job));
      }
      await("commits flowing")
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> snapshots(rest, EVENTS) >= 2);
      Map<String, Long> restartsBefore = restarts(cluster, jobs);

      // Faults while both jobs write, read and checkpoint: each round injected once the last
      // one was taken by some request (of a TaskManager, the JobManager or the server). Only a
      // call's first attempt is faulted, so that each fault is one the SDK retries once, as a
      // transient one: rounds come back to back, and a call retried into the next round after
      // round would meet more faults than its retries (a sustained outage, which fails a job).
      int requestsBefore = proxy.requests().size();
      AtomicInteger rounds = new AtomicInteger();
      proxy.faultOnly(request -> request.attempt() <= 1);
      try {
        await("faults taken by S3 requests")
            .atMost(Duration.ofMinutes(1))
            .pollInterval(Duration.ofMillis(100))
            .until(
                () -> {
                  if (proxy.faultsPending() == 0 && rounds.get() < FAULT_ROUNDS) {
                    proxy.reset(1).slowDown(2);
                    rounds.incrementAndGet();
                  }
                  return rounds.get() == FAULT_ROUNDS && proxy.faultsPending() == 0;
                });
      } finally {
        proxy.faultOnly(request -> true);
      }
      int requestsInFaults = proxy.requests().size() - requestsBefore;
      assertThat(cluster.jobState(jobs.get(0)))
          .as("the writer after the faults")
          .isIn("RUNNING", "FINISHED");

      await("the writer finished")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofSeconds(1))
          .until(() -> cluster.jobState(jobs.get(0)).equals("FINISHED"));
      Map<Long, Record> events =
          MirrorCheck.awaitCaughtUp(rest, EVENTS, EVENTS_COPY, "id", Duration.ofMinutes(1));
      // Only the mirror reads the data files of events (the check below reads them later).
      List<S3FaultProxy.Request> mirrorReads =
          proxy.requests().stream()
              .filter(request -> request.method().equals("GET"))
              .filter(request -> request.path().contains("/faults/events/data/"))
              .toList();
      Map<String, Long> restartsAfter = restarts(cluster, jobs);
      assertThat(restartsAfter)
          .as("restarts per job across the faults (exceptions: %s)", exceptionsOf(cluster, jobs))
          .isEqualTo(restartsBefore);

      // Exactly once: every version in one committed data file, the last per key in the table.
      List<Long> versions = new ArrayList<>();
      Table table = rest.loadTable(EVENTS);
      for (Snapshot snapshot : table.snapshots()) {
        for (DataFile file : snapshot.addedDataFiles(table.io())) {
          assertThat(file.location()).startsWith("s3://lake/warehouse/");
          read(table, file).forEach(row -> versions.add((Long) row.getField("version")));
        }
      }
      versions.sort(null);
      assertThat(versions)
          .as("the versions in the committed data files")
          .isEqualTo(LongStream.rangeClosed(1, ROWS).boxed().toList());
      assertThat(events.values().stream().map(row -> (Long) row.getField("version")))
          .as("the table's rows: the last version of each key")
          .containsExactlyInAnyOrderElementsOf(
              LongStream.rangeClosed(ROWS - KEYS + 1, ROWS).boxed().toList());
      try (Stream<Path> checkpoints = Files.walk(root.resolve("s3/lake/checkpoints"))) {
        assertThat(checkpoints.map(Path::getFileName).map(Path::toString))
            .as("Flink's checkpoints in the bucket")
            .contains("_metadata");
      }
      System.out.printf(
          "cluster on S3: %d fault rounds (a reset, two 503s) taken among %d S3 requests;"
              + " restarts %s; the mirror read %d commits of events with %d GETs of its data"
              + " files (%d ranged)%n",
          FAULT_ROUNDS,
          requestsInFaults,
          restartsAfter,
          snapshots(rest, EVENTS),
          mirrorReads.size(),
          mirrorReads.stream().filter(S3FaultProxy.Request::rangedGet).count());
    } finally {
      for (String job : jobs) { // its slots are free for the next test, whatever happened
        if (cluster.jobState(job).equals("RUNNING")) {
          cluster.cancel(job);
        }
      }
    }
  }

  /**
   * The local run's exactly-once case, on S3: a TaskManager killed with SIGKILL, then the skade
   * server, under three jobs (an upsert, its changelog mirrored, a lookup join).
   */
  @Test
  @Order(2)
  @Timeout(600)
  void threeJobsStayExactOnS3ThroughATaskManagerAndTheServerKilled() throws Exception {
    SkadeOnFlinkClusterTest.threeJobsStayExact(
        cluster, server, Files.createDirectories(root.resolve("three-jobs")));
  }
}
