package io.skade.sink;

import static io.skade.sink.ThreeTables.AUDIT;
import static io.skade.sink.ThreeTables.AUDIT_SCHEMA;
import static io.skade.sink.ThreeTables.LINES;
import static io.skade.sink.ThreeTables.ORDERS;
import static io.skade.sink.ThreeTables.ORDERS_SCHEMA;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.SkadeCatalog;
import io.skade.sink.ThreeTables.Expected;
import io.skade.sink.ThreeTables.Faults;
import io.skade.testing.LocalCluster;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.lineage.LineageGraph;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SkadeMultiTableSink} in a MiniCluster: three tables written by one job whose input fails
 * at random points and right after a transaction landed; each checkpoint's tables land in one
 * catalog transaction (consecutive {@code commit_seq}s, one transaction per checkpoint), exactly
 * once; the tables hold what the input says.
 */
class SkadeMultiTableSinkTest {
  /** Input transactions 1..TRANSACTIONS. */
  private static final int TRANSACTIONS = 3_000;

  @RegisterExtension static final LocalCluster CLUSTER = new LocalCluster(4);
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void eachCheckpointsTablesLandInOneTransactionExactlyOnceThroughFailures() throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    ThreeTables.create(skade);
    Faults.set(new Random(40).longs(3, 200, TRANSACTIONS).toArray(), skade::commitSeq);

    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 20);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
    env.enableCheckpointing(100);
    ThreeTables.job(env, catalog.properties(), TRANSACTIONS, 1_500, 2);
    CLUSTER.awaitFinished(CLUSTER.submit(env, "three tables", null));

    assertThat(Faults.thrown.get()).as("failures injected").isEqualTo(4);
    assertThat(Faults.afterCommit.get()).as("a failure right after a transaction").isTrue();
    assertThat(
            ThreeTables.assertWrittenOnceInOneTransactionPerCheckpoint(
                skade, skade::commitOf, TRANSACTIONS))
        .as("checkpoints that wrote several tables")
        .isGreaterThan(5);
  }

  @Test
  void tablesAnotherWriterMovesMeanwhileAreStagedAgain() throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    ThreeTables.create(skade);
    Faults.set(new long[0], null);
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger appended = new AtomicInteger();
    AtomicReference<RuntimeException> otherFailed = new AtomicReference<>();
    // Another writer appends to one of the tables all along, a commit every 300 ms; the sink's
    // transactions are staged again when it moved the table, as often as the table says.
    skade
        .loadTable(AUDIT)
        .updateProperties()
        .set(TableProperties.COMMIT_NUM_RETRIES, "20")
        .commit();
    Thread other =
        new Thread(
            () -> {
              try {
                while (!done.get()) {
                  GenericRecord row = GenericRecord.create(AUDIT_SCHEMA);
                  row.setField("txn", (long) -appended.incrementAndGet());
                  new TableWriter(skade.loadTable(AUDIT)).append(List.of(row));
                  LockSupport.parkNanos(Duration.ofMillis(300).toNanos());
                }
              } catch (RuntimeException e) {
                otherFailed.set(e);
              }
            },
            "another writer");
    other.start();
    long transactions = 3_000;
    StreamExecutionEnvironment env = LocalCluster.environment(1);
    env.enableCheckpointing(50);
    ThreeTables.job(env, catalog.properties(), transactions, 1_000, 2);
    try {
      CLUSTER.awaitFinished(CLUSTER.submit(env, "three tables beside another writer", null));
    } finally {
      done.set(true);
      other.join();
    }

    assertThat(otherFailed.get()).as("the other writer's failure").isNull();
    assertThat(appended.get()).as("the other writer's commits").isGreaterThan(5);
    ThreeTables.assertWrittenOnceInOneTransactionPerCheckpoint(
        skade, skade::commitOf, transactions);
  }

  @Test
  void aJobStoppedWithASavepointAndRestoredAtAnotherParallelismWritesEachRowOnce(
      @TempDir Path savepoints) throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    ThreeTables.create(skade);
    Faults.set(new long[0], null);
    long transactions = 2_000;

    StreamExecutionEnvironment first = LocalCluster.environment(1);
    first.enableCheckpointing(100);
    ThreeTables.job(first, catalog.properties(), transactions, 500, 2);
    JobID job = CLUSTER.submit(first, "three tables, 2 writers", null);
    long before = skade.commitSeq();
    await().atMost(Duration.ofMinutes(1)).until(() -> skade.commitSeq() >= before + 6);
    String savepoint = CLUSTER.stopWithSavepoint(job, savepoints);
    assertThat(auditRows(skade))
        .as("audit rows committed before the savepoint: some, not all")
        .isPositive()
        .isLessThan(Expected.upTo(transactions).audit().size());

    StreamExecutionEnvironment second = LocalCluster.environment(1);
    second.enableCheckpointing(100);
    ThreeTables.job(second, catalog.properties(), transactions, 5_000, 3);
    CLUSTER.awaitFinished(CLUSTER.submit(second, "three tables, 3 writers", savepoint));

    ThreeTables.assertWrittenOnceInOneTransactionPerCheckpoint(
        skade, skade::commitOf, transactions);
  }

  private static int auditRows(SkadeCatalog skade) throws Exception {
    try (CloseableIterable<Record> records = IcebergGenerics.read(skade.loadTable(AUDIT)).build()) {
      int rows = 0;
      for (Record ignored : records) {
        rows++;
      }
      return rows;
    }
  }

  @Test
  void flinksLineageGraphNamesEveryTable() {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    skade.createTable(ORDERS, ORDERS_SCHEMA);
    skade.createTable(AUDIT, AUDIT_SCHEMA);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromSequence(1, 2)
        .flatMap(new ThreeTables.Transactions())
        .filter(row -> !row.table().equals(LINES.toString()))
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(catalog.properties())
                .table("shop.orders")
                .table("shop.audit")
                .build());
    LineageGraph graph = env.getStreamGraph(false).getLineageGraph();

    String warehouse = SkadeCatalog.warehouse("test", catalog.properties());
    assertThat(graph.sinks()).hasSize(1);
    assertThat(graph.sinks().get(0).datasets())
        .extracting(LineageDataset::namespace, LineageDataset::name)
        .containsExactlyInAnyOrder(tuple(warehouse, "shop.audit"), tuple(warehouse, "shop.orders"));
  }

  @Test
  void badTablesKeysAndRowsAreNamed() throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    skade.createTable(ORDERS, ORDERS_SCHEMA);
    skade.createTable(AUDIT, AUDIT_SCHEMA);
    skade.createTable(
        TableIdentifier.of("shop", "by_day"),
        AUDIT_SCHEMA,
        PartitionSpec.builderFor(AUDIT_SCHEMA).identity("note").build());
    assertThatThrownBy(
            () ->
                SkadeMultiTableSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("shop.orders")
                    .table("shop.missing")
                    .build())
        .hasMessageContaining("table shop.missing does not exist");
    assertThatThrownBy(
            () ->
                SkadeMultiTableSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("shop.orders", List.of("nope"))
                    .build())
        .hasMessageContaining("key column nope is not a column of table shop.orders")
        .hasMessageContaining("[id, version]");
    assertThatThrownBy(
            () ->
                SkadeMultiTableSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("shop.by_day", List.of("txn"))
                    .build())
        .hasMessageContaining("partitioned by column note, which its key [txn] does not hold");
    assertThatThrownBy(
            () -> SkadeMultiTableSink.builder().catalogProperties(catalog.properties()).build())
        .hasMessageContaining("no table given");

    // Rows: a table the sink does not write; a delete for a table without a key.
    assertThat(failureOf(() -> TableRow.of(LINES, GenericRowData.of(1L, 1L, 1L))))
        .hasMessageContaining("a row for table shop.lines, which the sink does not write")
        .hasMessageContaining("[shop.audit, shop.orders]");
    assertThat(failureOf(() -> TableRow.of(ORDERS, GenericRowData.of(1L))))
        .hasMessageContaining("a row of 1 fields for table shop.orders, which has 2 columns");
    assertThat(
            failureOf(
                () ->
                    TableRow.of(
                        AUDIT,
                        GenericRowData.ofKind(RowKind.DELETE, 1L, StringData.fromString("x")))))
        .hasMessageContaining("a -D row for table shop.audit, which has no key to delete it by");
    assertThat(skade.loadTable(AUDIT).currentSnapshot()).isNull();
  }

  private Throwable failureOf(SerializableSupplier<TableRow> row) throws Exception {
    StreamExecutionEnvironment env = LocalCluster.environment(1);
    env.fromSequence(1, 1)
        .map(any -> row.get())
        .returns(TableRow.class)
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(catalog.properties())
                .table("shop.orders")
                .table("shop.audit")
                .build());
    return rootCause(CLUSTER.failure(CLUSTER.submit(env, "a bad row", null)));
  }

  private static Throwable rootCause(Throwable failure) {
    Throwable cause = failure;
    while (cause.getCause() != null && !(cause instanceof IllegalArgumentException)) {
      cause = cause.getCause();
    }
    return cause;
  }
}
