package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.server.ServerProcess;
import io.skade.sink.ThreeTables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.rest.RESTCatalog;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link io.skade.sink.SkadeMultiTableSink} on a Flink standalone cluster of two TaskManagers, each
 * its own JVM, writing three tables through a skade server: a TaskManager running the job is killed
 * with SIGKILL while it commits; after the job's restart on the other one, each checkpoint's tables
 * are one transaction on the server's log and every row is in them once.
 */
@ExtendWith(ClusterLogs.class)
class MultiTableSinkOnFlinkClusterTest {
  private static final long TRANSACTIONS = 4_000;

  @Test
  @Timeout(600)
  void eachCheckpointIsOneTransactionThroughATaskManagerKilled() throws Exception {
    Path root =
        ClusterLogs.of(getClass(), "eachCheckpointIsOneTransactionThroughATaskManagerKilled");
    Files.createDirectories(root.resolve("server"));
    try (ServerProcess server =
            ServerProcess.fromJar(root.resolve("server"), SkadeOnFlinkClusterTest.serverJar());
        FlinkCluster cluster =
            FlinkCluster.start(
                root.resolve("flink"),
                SkadeOnFlinkClusterTest.libWithConnector(),
                2,
                4,
                SkadeOnFlinkClusterTest.RESTARTS);
        RESTCatalog rest = SkadeOnFlinkClusterTest.rest(server)) {
      rest.createNamespace(Namespace.of("shop"));
      ThreeTables.create(rest);
      String job = submit(cluster, root, server.uri());
      cluster.waitUntil(
          "the job running", Duration.ofMinutes(2), () -> cluster.allTasksRunning(job));
      cluster.waitUntil(
          "transactions committed",
          Duration.ofMinutes(2),
          () -> SkadeOnFlinkClusterTest.snapshots(rest, ThreeTables.AUDIT) >= 3);

      cluster.killTaskManager(cluster.taskManagersOf(job).iterator().next());
      cluster.awaitTaskManagers(1);
      cluster.waitUntil(
          "the job finished after its restart",
          Duration.ofMinutes(4),
          () -> cluster.jobState(job).equals("FINISHED"));
      assertThat(cluster.restarts(job)).as("the job's restarts").isPositive();

      try (CatalogConnection connection =
          CatalogConnection.open(Map.of("uri", server.uri(), "token", ServerProcess.TOKEN))) {
        int multiTable =
            ThreeTables.assertWrittenOnceInOneTransactionPerCheckpoint(
                rest, connection::commitOf, TRANSACTIONS);
        assertThat(multiTable).as("checkpoints that wrote several tables").isGreaterThan(3);
      }
    }
  }

  /**
   * Submits the job from a client JVM on Flink's lib/ and the connector jar, shipping the job's own
   * classes ({@link ThreeTables}, in the connector's test jar, and AssertJ, which it links to).
   */
  private static String submit(FlinkCluster cluster, Path root, String uri) throws Exception {
    String jobJar = DataStreamClient.jarOf(ThreeTables.class);
    String assertj = DataStreamClient.jarOf(Assertions.class);
    return DataStreamClient.submit(
        cluster,
        root,
        SubmitThreeTables.class,
        List.of(jobJar, assertj),
        List.of(
            uri,
            ServerProcess.TOKEN,
            Long.toString(TRANSACTIONS),
            "200",
            "execution.checkpointing.interval=500ms",
            "pipeline.jars=" + Path.of(jobJar).toUri() + ";" + Path.of(assertj).toUri()));
  }
}
