package io.skade.source.database;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.SkadeCatalog;
import io.skade.sink.SkadeMultiTableSink;
import io.skade.sink.TableRow;
import io.skade.testing.LocalCluster;
import io.skade.testing.ShopHistory;
import io.skade.testing.TestCatalog;
import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The replication example of the database source's docs, run: a namespace's history (upserts,
 * deletes, atomic commits of several tables, a rollback) replicated into another catalog by a
 * {@link SkadeDatabaseSource} in consistent mode feeding a {@link SkadeMultiTableSink}; the replica
 * ends equal to the primary, table by table.
 */
class ReplicationExampleTest {
  private static final List<TableIdentifier> TABLES =
      List.of(ShopHistory.ORDERS, ShopHistory.CUSTOMERS, ShopHistory.AUDIT, ShopHistory.LATE);

  @RegisterExtension static final LocalCluster CLUSTER = new LocalCluster(4);
  @RegisterExtension final TestCatalog primary = new TestCatalog();
  @RegisterExtension final TestCatalog replica = new TestCatalog();

  @Test
  void theReplicaEndsEqualToThePrimary() throws Exception {
    SkadeCatalog source = primary.get();
    ShopHistory history = new ShopHistory(source, 7);
    while (history.steps() < 60) {
      history.step();
    }
    SkadeCatalog target = replica.get();
    target.createNamespace(ShopHistory.SHOP);
    for (TableIdentifier table : TABLES) {
      target.createTable(table, source.loadTable(table).schema());
    }

    StreamExecutionEnvironment env = LocalCluster.environment(2);
    env.enableCheckpointing(200);
    // The example of docs/database-source.md, with the test's catalogs.
    SkadeDatabaseSource<TableRow> changes =
        SkadeDatabaseSource.builder()
            .catalogProperties(primary.properties())
            .tables("shop.orders", "shop.customers", "shop.audit", "shop.late")
            .consistency(Consistency.COMMIT)
            .startFromEarliest()
            .build();
    env.fromSource(changes, WatermarkStrategy.noWatermarks(), "shop changes")
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(replica.properties())
                .table("shop.orders")
                .table("shop.customers")
                .table("shop.audit", List.of())
                .table("shop.late", List.of())
                .build());
    JobID job = CLUSTER.submit(env, "replicate shop", null);
    try {
      await()
          .atMost(Duration.ofMinutes(2))
          .until(
              () -> {
                CLUSTER.requireNotFailed(job);
                for (TableIdentifier table : TABLES) {
                  if (!ShopHistory.rows(target.loadTable(table))
                      .equals(ShopHistory.rows(source.loadTable(table)))) {
                    return false;
                  }
                }
                return true;
              });
    } finally {
      CLUSTER.cancel(job);
    }
    assertThat(ShopHistory.rows(target.loadTable(ShopHistory.ORDERS))).isNotEmpty();
  }
}
