package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.server.ServerProcess;
import io.skade.testing.ShopHistory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link io.skade.source.database.SkadeDatabaseSource} on a Flink standalone cluster of two
 * TaskManagers, each its own JVM: a job replicates three tables of one skade server into another
 * (consistent mode into the multi-table sink) while a writer changes them — upserts, deletes,
 * atomic commits of the three, a rollback, a column added — and a TaskManager running the job is
 * killed with SIGKILL; after the job's restart the replica ends equal to the primary, row for row.
 */
@ExtendWith(ClusterLogs.class)
class DatabaseReplicationOnFlinkClusterTest {
  private static final List<TableIdentifier> TABLES =
      List.of(ShopHistory.ORDERS, ShopHistory.CUSTOMERS, ShopHistory.AUDIT);

  @Test
  @Timeout(600)
  void theReplicaEndsEqualThroughATaskManagerKilled() throws Exception {
    Path root = ClusterLogs.of(getClass(), "theReplicaEndsEqualThroughATaskManagerKilled");
    Files.createDirectories(root.resolve("primary"));
    Files.createDirectories(root.resolve("replica"));
    try (ServerProcess primary =
            ServerProcess.fromJar(root.resolve("primary"), SkadeOnFlinkClusterTest.serverJar());
        ServerProcess replica =
            ServerProcess.fromJar(root.resolve("replica"), SkadeOnFlinkClusterTest.serverJar());
        FlinkCluster cluster =
            FlinkCluster.start(
                root.resolve("flink"),
                SkadeOnFlinkClusterTest.libWithConnector(),
                2,
                4,
                SkadeOnFlinkClusterTest.RESTARTS);
        RESTCatalog source = SkadeOnFlinkClusterTest.rest(primary);
        RESTCatalog target = SkadeOnFlinkClusterTest.rest(replica)) {
      ShopHistory history = new ShopHistory(source, source, source::commitTransaction, 11);
      target.createNamespace(ShopHistory.SHOP);
      for (TableIdentifier table : TABLES) {
        target.createTable(table, source.loadTable(table).schema());
      }
      while (history.steps() < 10) {
        history.step();
      }
      String job = submit(cluster, root, primary.uri(), replica.uri());
      cluster.waitUntil(
          "the job running", Duration.ofMinutes(2), () -> cluster.allTasksRunning(job));
      AtomicReference<Throwable> writerFailed = new AtomicReference<>();
      Thread writer =
          new Thread(
              () -> {
                try {
                  while (history.steps() < 70) {
                    history.step();
                  }
                } catch (Throwable e) {
                  writerFailed.set(e);
                }
              },
              "history writer");
      writer.start();
      cluster.waitUntil(
          "changes replicated",
          Duration.ofMinutes(2),
          () -> SkadeOnFlinkClusterTest.snapshots(target, ShopHistory.ORDERS) >= 3);
      cluster.killTaskManager(cluster.taskManagersOf(job).iterator().next());
      cluster.awaitTaskManagers(1);
      writer.join();
      assertThat(writerFailed.get()).as("the writer's failure").isNull();
      try {
        cluster.waitUntil(
            "the replica equal to the primary",
            Duration.ofMinutes(2),
            () -> {
              for (TableIdentifier table : TABLES) {
                if (!ShopHistory.rows(target.loadTable(table))
                    .equals(ShopHistory.rows(source.loadTable(table)))) {
                  return false;
                }
              }
              return true;
            });
      } catch (AssertionError notEqual) {
        for (TableIdentifier table : TABLES) { // names the table and the rows that differ
          assertThat(ShopHistory.rows(target.loadTable(table)))
              .as("%s of the replica", table)
              .isEqualTo(ShopHistory.rows(source.loadTable(table)));
        }
        throw notEqual;
      }
      assertThat(cluster.restarts(job)).as("the job's restarts").isPositive();
      assertThat(ShopHistory.rows(target.loadTable(ShopHistory.ORDERS))).isNotEmpty();
      cluster.cancel(job);
    }
  }

  /** Submits {@link SubmitReplication} from a client JVM on Flink's lib/ and the connector jar. */
  private static String submit(FlinkCluster cluster, Path root, String from, String to)
      throws Exception {
    return DataStreamClient.submit(
        cluster,
        root,
        SubmitReplication.class,
        List.of(),
        List.of(from, to, ServerProcess.TOKEN, "execution.checkpointing.interval=500ms"));
  }
}
