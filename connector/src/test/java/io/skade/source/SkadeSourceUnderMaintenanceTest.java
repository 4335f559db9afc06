package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.ConsumerCursor;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.PointLookup;
import io.skade.sink.SinkMaintenance;
import io.skade.sink.SkadeSink;
import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A streaming upsert job whose sink maintains its table as it goes (compactions folding the
 * deletes, snapshot expiry), read meanwhile by an exactly-once CDC job at parallelism 2 that fails
 * and restarts several times: the changes the reader emitted, applied strictly, equal the table (so
 * no compaction emitted a change and no window lost or repeated one), compactions and expiries
 * really ran, a stalled consumer's snapshot outlived every expiry, and point lookups of every key,
 * made all along, answer what Iceberg's own read of their snapshot holds.
 */
class SkadeSourceUnderMaintenanceTest {
  private static final Schema SCHEMA = IdRows.keyed("v");
  private static final TableIdentifier ORDERS = TableIdentifier.of("db", "orders");
  private static final int CHANGES = 3000;
  private static final int KEYS = 40;

  private static final AtomicInteger FAILURES = new AtomicInteger();
  private static final AtomicLong RECORDS = new AtomicLong();
  private static final long[] FAIL_AT = {40, 120, 200, 280};

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  @Timeout(300)
  void aCdcReadStaysExactWhileTheSinksMaintenanceCompactsAndExpires() throws Exception {
    FAILURES.set(0);
    RECORDS.set(0);
    Table orders = catalog.get().createTable(ORDERS, SCHEMA);
    Map<Long, String> mirror = new HashMap<>();
    List<String> failures = new ArrayList<>();
    Map<Long, Snapshot> seen = new ConcurrentHashMap<>();

    List<String> wrongLookups = new ArrayList<>();
    int lookups = 0;
    LookupCaches.Handle caches = LookupCaches.acquire();
    PointLookup lookup =
        new PointLookup(orders, List.of("id"), caches.caches(), new PointLookup.Counters());
    CloseableIterator<String> changes = startReader();
    Thread applier =
        new Thread(
            () -> {
              try {
                while (changes.hasNext()) {
                  ChangeLines.applyStrictly(changes.next(), mirror, failures);
                }
              } catch (RuntimeException closed) {
                // the iterator closed at the end of the test
              }
            },
            "applier");
    applier.start();
    try {
      // Each job runs on a MiniCluster of its own, gone when the job ends: wait on its result.
      CompletableFuture<JobExecutionResult> writer = startWriter().getJobExecutionResult();
      Snapshot stalled = null;
      while (!writer.isDone()) {
        orders.refresh();
        orders.snapshots().forEach(s -> seen.put(s.snapshotId(), s));
        lookups += lookUp(orders, lookup, wrongLookups);
        if (stalled == null && seen.size() >= 6) {
          // A consumer that stops here: expiry must keep this snapshot and every newer one.
          stalled = orders.currentSnapshot();
          catalog
              .get()
              .storeConsumer(
                  "stalled",
                  new ConsumerCursor(ORDERS, orders.uuid().toString(), stalled.snapshotId(), 0));
        }
        Thread.sleep(50); // the checks above run every 50 ms for as long as the writer runs
      }
      writer.get(); // fails the test if the writer failed
      Map<Long, String> expected = ChangeLines.rows(orders);
      await("the reader's changes, applied, equal the table")
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                synchronized (mirror) {
                  return mirror.equals(expected) || !failures.isEmpty();
                }
              });
      synchronized (mirror) {
        assertThat(failures).as("changes that met the wrong row").isEmpty();
        assertThat(mirror).isEqualTo(expected);
      }
      assertThat(FAILURES.get()).as("reader failures injected").isEqualTo(FAIL_AT.length);
      lookups += lookUp(orders, lookup, wrongLookups);
      assertThat(wrongLookups)
          .as(
              "lookups that differ from Iceberg's read of their snapshot,"
                  + " of %s, before, during and after compactions",
              lookups)
          .isEmpty();

      orders.refresh();
      orders.snapshots().forEach(s -> seen.put(s.snapshotId(), s));
      assertThat(seen.values().stream().filter(s -> "replace".equals(s.operation())).count())
          .as("compactions the sink's maintenance committed")
          .isGreaterThanOrEqualTo(2);
      assertThat(stalled).as("a consumer stalled mid-way").isNotNull();
      long from = stalled.sequenceNumber();
      assertThat(seen.values().stream().filter(s -> orders.snapshot(s.snapshotId()) == null))
          .as("snapshots expired: some, all older than the stalled consumer's")
          .isNotEmpty()
          .allMatch(s -> s.sequenceNumber() < from);
    } finally {
      changes.close();
      applier.join(10_000);
      caches.close();
    }
  }

  /**
   * Looks up every key at the table's current snapshot and compares each answer with Iceberg's own
   * read of that snapshot; returns how many lookups it made.
   */
  private static int lookUp(Table orders, PointLookup lookup, List<String> wrong)
      throws IOException {
    orders.refresh();
    Snapshot at = orders.currentSnapshot();
    if (at == null) {
      return 0;
    }
    Map<Long, String> expected = new HashMap<>();
    try (CloseableIterable<Record> rows =
        IcebergGenerics.read(orders).useSnapshot(at.snapshotId()).build()) {
      rows.forEach(r -> expected.put(r.get(0, Long.class), r.get(1, String.class)));
    }
    for (long key = 0; key < KEYS; key++) {
      List<Record> found = lookup.lookup(at.snapshotId(), List.of(key));
      String value = found.isEmpty() ? null : found.get(0).get(1, String.class);
      if (found.size() > 1 || !Objects.equals(value, expected.get(key))) {
        wrong.add(
            "key "
                + key
                + " at snapshot "
                + at.snapshotId()
                + " ("
                + at.operation()
                + "): "
                + found
                + ", Iceberg: "
                + expected.get(key));
      }
    }
    return KEYS;
  }

  /** The CDC job: parallelism 2, checkpoints every 200 ms, failures at the set record counts. */
  private CloseableIterator<String> startReader() throws Exception {
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.getExecutionEnvironment(restarting(Duration.ofMillis(200)));
    env.setParallelism(2);
    DataStream<String> changes =
        env.fromSource(
                SkadeSource.builder()
                    .catalogProperties(catalog.properties())
                    .table("db.orders")
                    .consumerId("mirror")
                    .pollInterval(Duration.ofMillis(50))
                    .batchRows(32)
                    .deserializer(new ChangeLines.Deserializer())
                    .build(),
                WatermarkStrategy.noWatermarks(),
                "orders")
            .uid("orders")
            .map(SkadeSourceUnderMaintenanceTest::failSometimes)
            .uid("fail");
    CloseableIterator<String> rows = changes.collectAsync();
    env.executeAsync("mirror");
    return rows;
  }

  /** The writer: upserts and deletes over few keys at parallelism 2, its sink maintaining. */
  private JobClient startWriter() throws Exception {
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.getExecutionEnvironment(restarting(Duration.ofMillis(150)));
    env.setParallelism(2);
    DataStream<RowData> rows =
        env.fromSequence(1, CHANGES)
            .map(
                SkadeSourceUnderMaintenanceTest::change,
                InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
    rows.sinkTo(
        SkadeSink.builder()
            .catalogProperties(catalog.properties())
            .table("db.orders")
            .upsertKey(List.of("id"))
            .maintenance(
                SinkMaintenance.defaults()
                    .withCompaction(4, 4)
                    .withSnapshotExpiry(Duration.ZERO, 3)
                    .withInterval(Duration.ofMillis(300)))
            .build());
    return env.executeAsync("orders writer");
  }

  private static Configuration restarting(Duration checkpoints) {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 100);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(20));
    conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, checkpoints);
    return conf;
  }

  /** Change {@code n}: an upsert of key {@code n % KEYS}, or every ninth a delete of it. */
  private static RowData change(long n) throws InterruptedException {
    Thread.sleep(6); // spread the changes over many checkpoints
    long key = n % KEYS;
    return n % 9 == 0
        ? GenericRowData.ofKind(RowKind.DELETE, key, null)
        : GenericRowData.ofKind(RowKind.INSERT, key, StringData.fromString("v" + n));
  }

  private static String failSometimes(String line) {
    long n = RECORDS.incrementAndGet();
    int done = FAILURES.get();
    if (done < FAIL_AT.length && n >= FAIL_AT[done] && FAILURES.compareAndSet(done, done + 1)) {
      throw new IllegalStateException("injected failure " + (done + 1) + " at record " + n);
    }
    return line;
  }
}
