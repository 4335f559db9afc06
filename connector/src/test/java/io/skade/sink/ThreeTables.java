package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.skade.catalog.CommitEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;

/**
 * A job writing three tables through a {@link SkadeMultiTableSink}, and what must hold after it:
 * transaction {@code t} of its input sets {@code orders} row {@code t % 40} to version t (deletes
 * it when t is a multiple of 13), {@code lines} row {@code t % 60} to t for every third t, and adds
 * an {@code audit} row (a table without a key, where a row committed twice stays twice) for every
 * even t.
 */
public final class ThreeTables {
  public static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  public static final TableIdentifier LINES = TableIdentifier.of("shop", "lines");
  public static final TableIdentifier AUDIT = TableIdentifier.of("shop", "audit");

  static final Schema ORDERS_SCHEMA =
      new Schema(
          List.of(
              NestedField.required(1, "id", LongType.get()),
              NestedField.optional(2, "version", LongType.get())),
          Set.of(1));
  static final Schema LINES_SCHEMA =
      new Schema(
          List.of(
              NestedField.required(1, "line_id", LongType.get()),
              NestedField.optional(2, "order_id", LongType.get()),
              NestedField.optional(3, "txn", LongType.get())),
          Set.of(1));
  static final Schema AUDIT_SCHEMA =
      new Schema(
          NestedField.optional(1, "txn", LongType.get()),
          NestedField.optional(2, "note", StringType.get()));

  private ThreeTables() {}

  /** Creates the three tables. */
  public static void create(Catalog catalog) {
    catalog.createTable(ORDERS, ORDERS_SCHEMA);
    catalog.createTable(LINES, LINES_SCHEMA);
    catalog.createTable(AUDIT, AUDIT_SCHEMA);
  }

  /**
   * The job in {@code env}: transactions 1..n at {@code perSecond} from one task (so each key's
   * changes stay in order), through {@link Faults}, into the sink's {@code writers}.
   */
  public static void job(
      StreamExecutionEnvironment env,
      Map<String, String> catalog,
      long n,
      double perSecond,
      int writers) {
    env.fromSource(
            new DataGeneratorSource<>(
                index -> index + 1, n, RateLimiterStrategy.perSecond(perSecond), Types.LONG),
            WatermarkStrategy.noWatermarks(),
            "transactions")
        .uid("transactions")
        .setParallelism(1)
        .flatMap(new Transactions())
        .uid("rows")
        .setParallelism(1)
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(catalog)
                .table("shop.orders")
                .table("shop.lines")
                .table("shop.audit")
                .build())
        .uid("three-tables")
        .setParallelism(writers);
  }

  /** The commit of a table's snapshot on the catalog's log. */
  public interface CommitOf {
    Optional<CommitEvent> commitOf(TableIdentifier table, long snapshotId);
  }

  /**
   * The tables hold what transactions 1..n say, each row once (besides another writer's audit rows,
   * of negative transactions); each checkpoint's commits are consecutive on the log and, when they
   * are several, one transaction; no checkpoint is committed twice to a table. Returns how many
   * checkpoints wrote several tables.
   */
  public static int assertWrittenOnceInOneTransactionPerCheckpoint(
      Catalog catalog, CommitOf log, long n) throws Exception {
    Expected expected = Expected.upTo(n);
    assertThat(rows(catalog.loadTable(ORDERS), "id", "version")).isEqualTo(expected.orders());
    assertThat(rows(catalog.loadTable(LINES), "line_id", "txn")).isEqualTo(expected.lines());
    List<Long> audited = new ArrayList<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(catalog.loadTable(AUDIT)).build()) {
      records.forEach(record -> audited.add((Long) record.getField("txn")));
    }
    audited.removeIf(txn -> txn < 0); // another writer's
    audited.sort(null);
    assertThat(audited).as("audit rows, each once").isEqualTo(expected.audit());

    // Per job and checkpoint (a job restored from a savepoint numbers its checkpoints anew).
    Map<String, Map<TableIdentifier, CommitEvent>> byCheckpoint = new TreeMap<>();
    for (TableIdentifier table : List.of(ORDERS, LINES, AUDIT)) {
      for (Snapshot snapshot : catalog.loadTable(table).snapshots()) {
        String stamp = snapshot.summary().get("flink.max-committed-checkpoint-id");
        if (stamp == null) {
          continue; // another writer's
        }
        String checkpoint = snapshot.summary().get("flink.job-id") + " checkpoint " + stamp;
        CommitEvent commit = log.commitOf(table, snapshot.snapshotId()).orElseThrow();
        assertThat(
                byCheckpoint.computeIfAbsent(checkpoint, id -> new HashMap<>()).put(table, commit))
            .as("a second commit of %s to %s", checkpoint, table)
            .isNull();
      }
    }
    int multiTable = 0;
    for (Map.Entry<String, Map<TableIdentifier, CommitEvent>> checkpoint :
        byCheckpoint.entrySet()) {
      List<CommitEvent> commits =
          checkpoint.getValue().values().stream()
              .sorted((a, b) -> Long.compare(a.commitSeq(), b.commitSeq()))
              .toList();
      long first = commits.get(0).commitSeq();
      for (int i = 0; i < commits.size(); i++) {
        CommitEvent commit = commits.get(i);
        assertThat(commit.commitSeq())
            .as("%s's commits, consecutive", checkpoint.getKey())
            .isEqualTo(first + i);
        if (commits.size() > 1) {
          assertThat(tuple(commit.transactionSeq(), commit.transactionSize()))
              .as("%s's commits, one transaction", checkpoint.getKey())
              .isEqualTo(tuple(first, commits.size()));
        }
      }
      multiTable += commits.size() > 1 ? 1 : 0;
    }
    return multiTable;
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

  /** The input's transactions as rows of the three tables. */
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

  /** What transactions 1..n leave in the tables, worked out here. */
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
   * Failures injected into the job's input (which runs in the test's JVM): at given transactions,
   * once each, and once right after the catalog's commit sequence moved past where it was set.
   */
  static final class Faults {
    static final AtomicInteger thrown = new AtomicInteger();
    static final AtomicBoolean afterCommit = new AtomicBoolean();
    private static final Set<Long> pending = ConcurrentHashMap.newKeySet();
    private static volatile LongSupplier commitSeq = () -> 0;
    private static volatile long commitSeqAtStart;
    private static volatile boolean failAfterCommit;

    private Faults() {}

    /** Fails at {@code at}, and right after a commit when {@code log} is given. */
    static void set(long[] at, LongSupplier log) {
      thrown.set(0);
      afterCommit.set(false);
      pending.clear();
      for (long t : at) {
        pending.add(t);
      }
      failAfterCommit = log != null;
      commitSeq = log == null ? () -> 0 : log;
      commitSeqAtStart = commitSeq.getAsLong();
    }

    static void maybeFail(long t) {
      if (pending.remove(t)) {
        thrown.incrementAndGet();
        throw new IllegalStateException("injected failure at transaction " + t);
      }
      if (failAfterCommit
          && !afterCommit.get()
          && commitSeq.getAsLong() > commitSeqAtStart
          && afterCommit.compareAndSet(false, true)) {
        thrown.incrementAndGet();
        throw new IllegalStateException("injected failure right after a transaction landed");
      }
    }
  }
}
