package io.skade.maintenance;

import static io.skade.maintenance.KeyValue.SCHEMA;
import static io.skade.maintenance.KeyValue.env;
import static io.skade.maintenance.KeyValue.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.MaintenanceLock;
import io.skade.sink.SinkMaintenance;
import io.skade.sink.SkadeSink;
import io.skade.sink.TableCompaction;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.List;
import java.util.stream.StreamSupport;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The catalog is the lock of table maintenance across jobs: while another holder has a table's
 * maintenance lock, neither a compaction call nor a streaming sink's maintenance touches the table;
 * once it is released, both do.
 */
class MaintenanceLockTest {
  private static final TableIdentifier ORDERS = TableIdentifier.of("db", "orders");
  private static final String LOCK = MaintenanceLock.MAINTENANCE;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aCompactionCallIsRefusedWhileAnotherHoldsTheTableAndRunsOnceItIsFree() throws Exception {
    Table orders = catalog.get().createTable(ORDERS, SCHEMA);
    TableWriter writer = new TableWriter(orders);
    for (int commit = 0; commit < 3; commit++) {
      writer.upsert(List.of(row(1, "v" + commit), row(2 + commit, "w")));
    }
    assertThat(catalog.get().tryLock(ORDERS, LOCK, "another job", Duration.ofHours(1))).isTrue();

    assertThatThrownBy(() -> TableCompaction.run(env(), catalog.properties(), ORDERS))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("table db.orders is being maintained by another job since");
    orders.refresh();
    assertThat(orders.currentSnapshot().operation()).isNotEqualTo(DataOperations.REPLACE);

    assertThat(catalog.get().unlock(ORDERS, LOCK, "another job")).isTrue();
    TableCompaction.Result result = TableCompaction.run(env(), catalog.properties(), ORDERS);
    orders.refresh();
    assertThat(orders.currentSnapshot().snapshotId()).isEqualTo(result.snapshotId());
    assertThat(orders.currentSnapshot().operation()).isEqualTo(DataOperations.REPLACE);
    assertThat(catalog.get().lock(ORDERS, LOCK)).as("released when done").isEmpty();
  }

  @Test
  void aSinksMaintenanceCompactsNothingWhileAnotherJobHoldsTheTable() throws Exception {
    Table orders = catalog.get().createTable(ORDERS, SCHEMA);
    assertThat(catalog.get().tryLock(ORDERS, LOCK, "another job", Duration.ofHours(1))).isTrue();
    JobClient job = startWriter();
    try {
      await("commits of the writer while the lock is held")
          .atMost(Duration.ofSeconds(90))
          .until(() -> snapshots(orders).size() >= 12);
      assertThat(snapshots(orders))
          .as("compactions while another job holds the table")
          .noneMatch(s -> DataOperations.REPLACE.equals(s.operation()));

      assertThat(catalog.get().unlock(ORDERS, LOCK, "another job")).isTrue();
      await("a compaction once the lock is free")
          .atMost(Duration.ofSeconds(60))
          .until(
              () ->
                  snapshots(orders).stream()
                      .anyMatch(s -> DataOperations.REPLACE.equals(s.operation())));
      Snapshot compaction =
          snapshots(orders).stream()
              .filter(s -> DataOperations.REPLACE.equals(s.operation()))
              .findFirst()
              .orElseThrow();
      for (DataFile file : compaction.addedDataFiles(orders.io())) {
        assertThat(KeyValue.fileKeys(orders, file))
            .as("%s, written by the sink's compaction, is in key order", file.location())
            .isSorted();
      }
    } finally {
      job.cancel().get();
    }
  }

  /** An endless upsert job at parallelism 2 whose sink compacts every 2 files. */
  private JobClient startWriter() throws Exception {
    Configuration conf = new Configuration();
    conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(2);
    env.fromSequence(1, Long.MAX_VALUE)
        .map(MaintenanceLockTest::upsert, InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)))
        .sinkTo(
            SkadeSink.builder()
                .catalogProperties(catalog.properties())
                .table("db.orders")
                .upsertKey(List.of("id"))
                .maintenance(
                    SinkMaintenance.defaults()
                        .withCompaction(2, 2)
                        .withInterval(Duration.ofMillis(200)))
                .build());
    return env.executeAsync("orders writer");
  }

  private static RowData upsert(long n) throws InterruptedException {
    Thread.sleep(5); // paces the unbounded writer: about 200 rows a second per subtask
    return GenericRowData.of(n % 20, StringData.fromString("v" + n));
  }

  private static List<Snapshot> snapshots(Table table) {
    table.refresh();
    return StreamSupport.stream(table.snapshots().spliterator(), false).toList();
  }
}
