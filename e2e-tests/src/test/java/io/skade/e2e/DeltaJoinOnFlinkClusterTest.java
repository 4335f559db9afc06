package io.skade.e2e;

import static io.skade.e2e.SkadeOnFlinkClusterTest.rest;
import static io.skade.e2e.SkadeOnFlinkClusterTest.rows;
import static io.skade.e2e.SkadeOnFlinkClusterTest.serverJar;
import static io.skade.e2e.SkadeOnFlinkClusterTest.submit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.server.ServerProcess;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Flink's delta join of two skade tables on a cluster of separate JVMs (a JobManager, two
 * TaskManagers) through a skade server: each side's rows, appended by writers in this JVM through
 * the server while the join runs, are found by the other side's probes from the TaskManagers (whose
 * lookups catch up with the server before each probe), through a TaskManager killed with SIGKILL.
 * The join's output, in a keyed table, must equal Flink's regular join of the final tables, run on
 * the same cluster.
 */
@ExtendWith(ClusterLogs.class)
class DeltaJoinOnFlinkClusterTest {
  private static final String HINT =
      "/*+ OPTIONS('scan.append-only' = 'true', 'lookup.async' = 'true') */";
  private static final String[] CARRIERS = {"post", "bring", "dhl", "ups"};
  private static final int ORDERS = 300;

  @Test
  @Timeout(600)
  void theDeltaJoinIsExactAcrossProcessesThroughATaskManagerKilled() throws Exception {
    Path root =
        ClusterLogs.of(getClass(), "theDeltaJoinIsExactAcrossProcessesThroughATaskManagerKilled");
    Files.createDirectories(root.resolve("server"));
    try (ServerProcess server = ServerProcess.fromJar(root.resolve("server"), serverJar());
        FlinkCluster cluster =
            FlinkCluster.start(
                root.resolve("flink"),
                SkadeOnFlinkClusterTest.libWithConnector(),
                2,
                4,
                Map.of(
                    "taskmanager.load-balance.mode", "SLOTS",
                    "restart-strategy.type", "fixed-delay",
                    "restart-strategy.fixed-delay.attempts", "100",
                    "restart-strategy.fixed-delay.delay", "1 s"));
        RESTCatalog rest = rest(server)) {
      String catalog =
          "CREATE CATALOG lake WITH ('type' = 'skade', 'uri' = '"
              + server.uri()
              + "', 'token' = '"
              + ServerProcess.TOKEN
              + "', 'server.retry-timeout' = '2 min');";
      List<String> output =
          submit(
              cluster,
              root,
              String.join(
                  "\n",
                  catalog,
                  "CREATE DATABASE lake.shop;",
                  "CREATE TABLE lake.shop.orders (order_id BIGINT, customer STRING, amount INT,",
                  "  PRIMARY KEY (order_id) NOT ENFORCED) WITH ('bucket' = '4');",
                  "CREATE TABLE lake.shop.shipments (shipment_id BIGINT, order_id BIGINT,",
                  "  carrier STRING) WITH ('bucket' = '4', 'bucket-key' = 'order_id');",
                  "CREATE TABLE lake.shop.enriched (order_id BIGINT, shipment_id BIGINT,",
                  "  customer STRING, amount INT, carrier STRING,",
                  "  PRIMARY KEY (order_id, shipment_id) NOT ENFORCED);",
                  "SET 'execution.checkpointing.interval' = '1s';",
                  "SET 'parallelism.default' = '2';",
                  "INSERT INTO lake.shop.enriched SELECT o.order_id, s.shipment_id, o.customer,",
                  "  o.amount, s.carrier FROM lake.shop.orders " + HINT + " AS o",
                  "  JOIN lake.shop.shipments " + HINT + " AS s ON o.order_id = s.order_id;",
                  ""),
              List.of());
      String job =
          output.stream()
              .filter(line -> line.startsWith("JOB "))
              .findFirst()
              .orElseThrow()
              .substring(4);
      await("the join running")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> cluster.allTasksRunning(job));
      assertThat(cluster.vertexNames(job)).anyMatch(name -> name.startsWith("DeltaJoin["));

      // Two writers at once, shipments often before their order; a TaskManager dies meanwhile.
      Random random = new Random(20261202L);
      Table orders = rest.loadTable(TableIdentifier.of("shop", "orders"));
      Table shipments = rest.loadTable(TableIdentifier.of("shop", "shipments"));
      List<Record> orderRows = new ArrayList<>();
      List<Record> shipmentRows = new ArrayList<>();
      long shipmentId = 0;
      for (long order = 0; order < ORDERS * 11 / 10; order++) {
        if (order < ORDERS) {
          orderRows.add(row(orders, order, "c" + random.nextInt(40), random.nextInt(1_000)));
        }
        for (int i = random.nextInt(3); i > 0; i--) {
          shipmentRows.add(
              row(shipments, shipmentId++, order, CARRIERS[random.nextInt(CARRIERS.length)]));
        }
      }
      Collections.shuffle(shipmentRows, random);
      AtomicInteger commits = new AtomicInteger();
      CompletableFuture<Void> orderWriter =
          CompletableFuture.runAsync(() -> commitInSteps(orders, orderRows, commits));
      CompletableFuture<Void> shipmentWriter =
          CompletableFuture.runAsync(() -> commitInSteps(shipments, shipmentRows, commits));
      await("a few commits").atMost(Duration.ofMinutes(1)).until(() -> commits.get() >= 4);
      cluster.killTaskManager(cluster.taskManagersOf(job).iterator().next());
      cluster.awaitTaskManagers(1);
      orderWriter.join();
      shipmentWriter.join();
      cluster.waitUntil(
          "the join restarted",
          Duration.ofMinutes(2),
          () -> cluster.restarts(job) > 0 && cluster.allTasksRunning(job));

      List<String> expected = new ArrayList<>();
      for (String line :
          submit(
              cluster,
              root,
              String.join(
                  "\n",
                  catalog,
                  "SET 'parallelism.default' = '1';",
                  "SELECT o.order_id, s.shipment_id, o.customer, o.amount, s.carrier",
                  "  FROM lake.shop.orders /*+ OPTIONS('scan.bounded' = 'true') */ AS o",
                  "  JOIN lake.shop.shipments /*+ OPTIONS('scan.bounded' = 'true') */ AS s",
                  "  ON o.order_id = s.order_id;",
                  ""),
              List.of())) {
        if (line.startsWith("ROW ")) {
          expected.add(line.substring(4));
        }
      }
      Collections.sort(expected);
      assertThat(expected).as("the regular join of the final tables").hasSizeGreaterThan(200);
      await("the delta join's output caught up")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofSeconds(1))
          .untilAsserted(() -> assertThat(enriched(rest)).isEqualTo(expected));
      assertThat(cluster.jobState(job)).isEqualTo("RUNNING");
      cluster.cancel(job);
    }
  }

  /** The rows of {@code enriched} as Iceberg reads them, formatted as Flink prints rows. */
  private static List<String> enriched(RESTCatalog rest) throws Exception {
    List<String> rows = new ArrayList<>();
    for (Record r : rows(rest, TableIdentifier.of("shop", "enriched"))) {
      rows.add(
          "+I["
              + r.getField("order_id")
              + ", "
              + r.getField("shipment_id")
              + ", "
              + r.getField("customer")
              + ", "
              + r.getField("amount")
              + ", "
              + r.getField("carrier")
              + "]");
    }
    Collections.sort(rows);
    return rows;
  }

  /** {@code rows} in 8 commits, a random pause after each. */
  private static void commitInSteps(Table table, List<Record> rows, AtomicInteger commits) {
    Random pause = new Random(rows.size());
    for (int step = 0; step < 8; step++) {
      table.refresh();
      new TableWriter(table)
          .append(rows.subList(rows.size() * step / 8, rows.size() * (step + 1) / 8));
      commits.incrementAndGet();
      try {
        Thread.sleep(300 + pause.nextInt(700));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static Record row(Table table, Object... values) {
    GenericRecord row = GenericRecord.create(table.schema());
    for (int i = 0; i < values.length; i++) {
      row.set(i, values[i]);
    }
    return row;
  }
}
