package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.LocalCluster;
import io.skade.testing.TestCatalog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.lineage.LineageGraph;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;
import org.apache.flink.util.function.SerializableSupplier;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link SkadeMultiTableSink} in a MiniCluster: three tables written by one job whose input fails
 * at random points and right after a transaction landed; each checkpoint's tables land in one
 * catalog transaction (consecutive {@code commit_seq}s, one transaction per checkpoint), exactly
 * once; the tables hold what the input says.
 */
class SkadeMultiTableSinkTest {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final TableIdentifier LINES = TableIdentifier.of("shop", "lines");
  private static final TableIdentifier AUDIT = TableIdentifier.of("shop", "audit");

  private static final Schema ORDERS_SCHEMA =
      new Schema(
          List.of(
              NestedField.required(1, "id", LongType.get()),
              NestedField.optional(2, "version", LongType.get())),
          Set.of(1));
  private static final Schema LINES_SCHEMA =
      new Schema(
          List.of(
              NestedField.required(1, "line_id", LongType.get()),
              NestedField.optional(2, "order_id", LongType.get()),
              NestedField.optional(3, "txn", LongType.get())),
          Set.of(1));
  private static final Schema AUDIT_SCHEMA =
      new Schema(
          NestedField.optional(1, "txn", LongType.get()),
          NestedField.optional(2, "note", StringType.get()));

  /** Input transactions 1..TRANSACTIONS. */
  private static final int TRANSACTIONS = 3_000;

  @RegisterExtension static final LocalCluster CLUSTER = new LocalCluster(4);
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void eachCheckpointsTablesLandInOneTransactionExactlyOnceThroughFailures() throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    skade.createTable(ORDERS, ORDERS_SCHEMA);
    skade.createTable(LINES, LINES_SCHEMA);
    skade.createTable(AUDIT, AUDIT_SCHEMA);
    Faults.reset(skade, new Random(40).longs(3, 200, TRANSACTIONS).toArray());

    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 20);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
    env.enableCheckpointing(100);
    env.fromSource(
            new DataGeneratorSource<>(
                index -> index + 1, TRANSACTIONS, RateLimiterStrategy.perSecond(1_500), Types.LONG),
            WatermarkStrategy.noWatermarks(),
            "transactions")
        .setParallelism(1)
        .flatMap(new Transactions())
        .setParallelism(1)
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(catalog.properties())
                .table("shop.orders")
                .table("shop.lines")
                .table("shop.audit")
                .build())
        .setParallelism(2);
    JobID job = CLUSTER.submit(env, "three tables", null);
    CLUSTER.awaitFinished(job);

    assertThat(Faults.thrown.get()).as("failures injected").isEqualTo(4);
    assertThat(Faults.afterCommit.get()).as("a failure right after a transaction").isTrue();

    // The tables hold what the input says, each row once.
    Expected expected = Expected.upTo(TRANSACTIONS);
    assertThat(rows(skade.loadTable(ORDERS), "id", "version")).isEqualTo(expected.orders);
    assertThat(rows(skade.loadTable(LINES), "line_id", "txn")).isEqualTo(expected.lines);
    List<Long> audited = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(skade.loadTable(AUDIT)).build()) {
      records.forEach(record -> audited.add((Long) record.getField("txn")));
    }
    audited.sort(null);
    assertThat(audited).as("audit rows, each once").isEqualTo(expected.audit);

    // One transaction per checkpoint: its tables' commits consecutive in the log, made together.
    Map<Long, Map<TableIdentifier, CommitEvent>> byCheckpoint = new TreeMap<>();
    for (TableIdentifier table : List.of(ORDERS, LINES, AUDIT)) {
      for (Snapshot snapshot : skade.loadTable(table).snapshots()) {
        long checkpoint =
            Long.parseLong(snapshot.summary().get("flink.max-committed-checkpoint-id"));
        CommitEvent commit = skade.commitOf(table, snapshot.snapshotId()).orElseThrow();
        assertThat(
                byCheckpoint.computeIfAbsent(checkpoint, id -> new HashMap<>()).put(table, commit))
            .as("a second commit of checkpoint %d to %s", checkpoint, table)
            .isNull();
      }
    }
    assertThat(byCheckpoint).hasSizeGreaterThan(5);
    int multiTable = 0;
    for (Map.Entry<Long, Map<TableIdentifier, CommitEvent>> checkpoint : byCheckpoint.entrySet()) {
      List<CommitEvent> commits =
          checkpoint.getValue().values().stream()
              .sorted((a, b) -> Long.compare(a.commitSeq(), b.commitSeq()))
              .toList();
      long first = commits.get(0).commitSeq();
      for (int i = 0; i < commits.size(); i++) {
        CommitEvent commit = commits.get(i);
        assertThat(commit.commitSeq())
            .as("checkpoint %d's commits, consecutive", checkpoint.getKey())
            .isEqualTo(first + i);
        if (commits.size() > 1) {
          assertThat(tuple(commit.transactionSeq(), commit.transactionSize()))
              .as("checkpoint %d's commits, one transaction", checkpoint.getKey())
              .isEqualTo(tuple(first, commits.size()));
        }
      }
      multiTable += commits.size() > 1 ? 1 : 0;
    }
    assertThat(multiTable).as("checkpoints that wrote several tables").isGreaterThan(5);
  }

  @Test
  void flinksLineageGraphNamesEveryTable() {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(ORDERS.namespace());
    skade.createTable(ORDERS, ORDERS_SCHEMA);
    skade.createTable(AUDIT, AUDIT_SCHEMA);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromSequence(1, 2)
        .flatMap(new Transactions())
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

  private static Map<Long, Long> rows(Table table, String key, String value) throws Exception {
    Map<Long, Long> rows = new TreeMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record record : records) {
        assertThat(rows.put((Long) record.getField(key), (Long) record.getField(value)))
            .as("a second row of %s %s", key, record.getField(key))
            .isNull();
      }
    }
    return rows;
  }

  /**
   * Transaction {@code t}: orders' row {@code t % 40} set to version t (deleted when t is a
   * multiple of 13), line {@code t % 60} set to t for every third t, and an audit row for every
   * even t.
   */
  static final class Transactions implements FlatMapFunction<Long, TableRow> {
    @Override
    public void flatMap(Long t, Collector<TableRow> out) {
      Faults.maybeFail(t);
      RowKind kind = t % 13 == 0 ? RowKind.DELETE : RowKind.UPDATE_AFTER;
      out.collect(TableRow.of(ORDERS, GenericRowData.ofKind(kind, t % 40, t)));
      if (t % 3 == 0) {
        out.collect(TableRow.of(LINES, GenericRowData.of(t % 60, t % 40, t)));
      }
      if (t % 2 == 0) {
        out.collect(TableRow.of(AUDIT, GenericRowData.of(t, StringData.fromString("t" + t))));
      }
    }
  }

  /** What {@link Transactions} 1..n leave in the tables, worked out here. */
  record Expected(Map<Long, Long> orders, Map<Long, Long> lines, List<Long> audit) {
    static Expected upTo(long n) {
      Map<Long, Long> orders = new TreeMap<>();
      Map<Long, Long> lines = new TreeMap<>();
      List<Long> audit = new ArrayList<>();
      for (long t = 1; t <= n; t++) {
        if (t % 13 == 0) {
          orders.remove(t % 40);
        } else {
          orders.put(t % 40, t);
        }
        if (t % 3 == 0) {
          lines.put(t % 60, t);
        }
        if (t % 2 == 0) {
          audit.add(t);
        }
      }
      return new Expected(orders, lines, audit);
    }
  }

  /**
   * Failures injected into the job's input: at given transactions (once each), and once right after
   * the catalog took the job's first transaction.
   */
  static final class Faults {
    static final AtomicInteger thrown = new AtomicInteger();
    static final AtomicBoolean afterCommit = new AtomicBoolean();
    private static final Set<Long> pending = ConcurrentHashMap.newKeySet();
    private static final AtomicLong commitSeqAtStart = new AtomicLong();
    private static volatile SkadeCatalog catalog;

    static void reset(SkadeCatalog skade, long[] at) {
      thrown.set(0);
      afterCommit.set(false);
      pending.clear();
      for (long t : at) {
        pending.add(t);
      }
      catalog = skade;
      commitSeqAtStart.set(skade.commitSeq());
    }

    static void maybeFail(long t) {
      if (pending.remove(t)) {
        thrown.incrementAndGet();
        throw new IllegalStateException("injected failure at transaction " + t);
      }
      if (!afterCommit.get()
          && catalog.commitSeq() > commitSeqAtStart.get()
          && afterCommit.compareAndSet(false, true)) {
        thrown.incrementAndGet();
        throw new IllegalStateException("injected failure right after a transaction landed");
      }
    }
  }
}
