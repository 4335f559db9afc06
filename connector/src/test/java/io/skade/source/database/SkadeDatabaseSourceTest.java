package io.skade.source.database;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.testing.LocalCluster;
import io.skade.testing.ShopHistory;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.types.Type;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SkadeDatabaseSource} in a MiniCluster over a namespace's random history written while the
 * jobs run ({@link ShopHistory}: upserts, deletes, multi-table commits, a table created midway, a
 * schema change, a rollback, a table outside). What the source emits is recorded exactly once per
 * completed checkpoint by an operator chained to each reader, stamped with the order it left the
 * readers in; a consumer applies it, and after every commit each table it holds must equal the
 * table as that commit left it in the catalog. Jobs fail at random points and are stopped with a
 * savepoint and restored at another parallelism.
 */
class SkadeDatabaseSourceTest {
  private static final int STEPS = 80;

  @RegisterExtension static final LocalCluster CLUSTER = new LocalCluster(4);
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @BeforeEach
  void reset() {
    Recorder.reset();
  }

  @Test
  void consistentEveryAtomicCommitWholeAndInCommitOrderThroughFailuresAndRescaling(
      @TempDir Path savepoints) throws Exception {
    SkadeCatalog skade = catalog.get();
    ShopHistory history = new ShopHistory(skade, 40);
    Writer writer = new Writer(history, skade);
    Recorder.failAt(40, 200);
    // One reader, then two, then one again: each restored from the last one's savepoint.
    JobID job = CLUSTER.submit(job(1, Consistency.COMMIT), "database source", null);
    writer.start();
    for (int parallelism : new int[] {2, 1}) {
      int steps = history.steps();
      await().atMost(Duration.ofMinutes(1)).until(() -> history.steps() >= steps + STEPS / 3);
      String savepoint = CLUSTER.stopWithSavepoint(job, savepoints);
      job = CLUSTER.submit(job(parallelism, Consistency.COMMIT), "database source", savepoint);
    }
    writer.finishAndAwaitRecorded(job);
    CLUSTER.cancel(job);

    assertThat(Recorder.failed.get()).as("failures injected").isEqualTo(2);
    List<Seen> seen = Recorder.committed();
    assertThat(seen)
        .as("changes in the order they left the readers: atomic commits in commit order")
        .isSortedAccordingTo(Comparator.comparingLong(Seen::transactionStart));
    assertEachCommitInOneCheckpoint(seen);
    assertEachTableAsEveryCommitLeftIt(skade, seen);
  }

  @Test
  void perTableEachTablesCommitsInOrderAndWholeThroughAFailure() throws Exception {
    SkadeCatalog skade = catalog.get();
    ShopHistory history = new ShopHistory(skade, 41);
    Writer writer = new Writer(history, skade);
    Recorder.failAt(60);
    JobID job = CLUSTER.submit(job(2, Consistency.TABLE), "database source", null);
    writer.start();
    writer.finishAndAwaitRecorded(job);
    CLUSTER.cancel(job);

    assertThat(Recorder.failed.get()).as("failures injected").isEqualTo(1);
    List<Seen> seen = Recorder.committed();
    seen.stream()
        .collect(Collectors.groupingBy(Seen::table))
        .forEach(
            (table, changes) ->
                assertThat(changes)
                    .as("changes of %s in the order they left the source", table)
                    .isSortedAccordingTo(Comparator.comparingLong(Seen::commitSeq)));
    assertEachCommitInOneCheckpoint(seen);
    assertEachTableAsEveryCommitLeftIt(skade, seen);
  }

  @Test
  void badInputIsNamed() {
    SkadeCatalog skade = catalog.get();
    new ShopHistory(skade, 1);
    assertThatThrownBy(() -> SkadeDatabaseSource.builder().namespace("shop").build())
        .hasMessageContaining("must name a 'warehouse'");
    assertThatThrownBy(
            () -> SkadeDatabaseSource.builder().catalogProperties(catalog.properties()).build())
        .hasMessageContaining("no tables given");
    assertThatThrownBy(
            () ->
                SkadeDatabaseSource.builder()
                    .catalogProperties(catalog.properties())
                    .tables("shop.orders", "shop.nothing")
                    .build())
        .hasMessageContaining("table shop.nothing does not exist");
    assertThatThrownBy(
            () -> SkadeDatabaseSource.builder().namespace("shop").tablesMatching("shop\\..*"))
        .hasMessageContaining("its tables are already given");
    assertThatThrownBy(
            () ->
                SkadeDatabaseSource.builder()
                    .catalogProperties(catalog.properties())
                    .tablesMatching("none\\..*")
                    .build())
        .hasMessageContaining("no table of tables matching none\\..* exists yet");
    assertThatThrownBy(
            () ->
                SkadeDatabaseSource.builder()
                    .catalogProperties(catalog.properties())
                    .namespace("shop")
                    .startAfterCommitSeq(skade.commitSeq() + 1)
                    .build())
        .hasMessageContaining("beyond the log's last commit");
  }

  private StreamExecutionEnvironment job(int parallelism, Consistency consistency) {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
    env.setParallelism(parallelism);
    env.enableCheckpointing(50);
    SkadeDatabaseSource<String> source =
        SkadeDatabaseSource.builder()
            .catalogProperties(catalog.properties())
            .namespace("shop")
            .consistency(consistency)
            .startFromEarliest()
            .deserializer(new Lines())
            .build();
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "shop")
        .uid("shop")
        .map(new Recorder())
        .uid("recorder")
        .sinkTo(new DiscardingSink<>());
    return env;
  }

  /**
   * Checks that every commit's changes, and every multi-table commit's, were recorded in one
   * checkpoint.
   */
  private static void assertEachCommitInOneCheckpoint(List<Seen> seen) {
    Map<Long, Set<Long>> checkpointsOfCommit = new HashMap<>();
    Map<Long, Set<Long>> checkpointsOfTransaction = new HashMap<>();
    for (Seen change : seen) {
      checkpointsOfCommit
          .computeIfAbsent(change.commitSeq(), c -> new HashSet<>())
          .add(change.checkpoint());
      checkpointsOfTransaction
          .computeIfAbsent(change.transactionStart(), c -> new HashSet<>())
          .add(change.checkpoint());
    }
    checkpointsOfCommit.forEach(
        (commit, checkpoints) ->
            assertThat(checkpoints).as("checkpoints holding commit %d", commit).hasSize(1));
    checkpointsOfTransaction.forEach(
        (start, checkpoints) ->
            assertThat(checkpoints).as("checkpoints holding transaction %d", start).hasSize(1));
    assertThat(checkpointsOfTransaction.size())
        .as("multi-table commits read")
        .isLessThan(checkpointsOfCommit.size() - 5);
  }

  /**
   * Applies the changes in their order and checks, after each commit, its table against the table
   * as the commit's own metadata holds it; then every table against the catalog's.
   */
  private static void assertEachTableAsEveryCommitLeftIt(SkadeCatalog skade, List<Seen> seen)
      throws Exception {
    Map<String, Map<Map<String, Object>, Integer>> applied = new HashMap<>();
    Map<String, Integer> lastOfCommit = new HashMap<>();
    for (int i = 0; i < seen.size(); i++) {
      lastOfCommit.put(seen.get(i).table() + "@" + seen.get(i).commitSeq(), i);
    }
    for (int i = 0; i < seen.size(); i++) {
      Seen change = seen.get(i);
      Map<Map<String, Object>, Integer> rows =
          applied.computeIfAbsent(change.table(), table -> new HashMap<>());
      rows.merge(change.values(), change.removes() ? -1 : 1, Integer::sum);
      rows.values().removeIf(count -> count == 0);
      if (lastOfCommit.get(change.table() + "@" + change.commitSeq()) == i) {
        CommitEvent event = skade.commitsSince(change.commitSeq() - 1, 1).get(0);
        TableCommit commit = new TableCommit(TableIdentifier.parse(change.table()), event);
        assertThat(rows)
            .as("%s after commit %d", change.table(), change.commitSeq())
            .isEqualTo(ShopHistory.rowsAt(skade, commit));
      }
    }
    assertThat(applied.keySet())
        .containsExactlyInAnyOrder("shop.orders", "shop.customers", "shop.audit", "shop.late");
  }

  /** Writes the history while the jobs run, then an end mark the source must deliver. */
  private static final class Writer extends Thread {
    private final ShopHistory history;
    private final SkadeCatalog skade;
    private final AtomicReference<Throwable> failed = new AtomicReference<>();

    Writer(ShopHistory history, SkadeCatalog skade) {
      super("history writer");
      this.history = history;
      this.skade = skade;
    }

    @Override
    public void run() {
      try {
        while (history.steps() < STEPS) {
          history.step();
          LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
        }
        GenericRecord end = GenericRecord.create(skade.loadTable(ShopHistory.AUDIT).schema());
        end.setField("id", -1L);
        end.setField("v", "end");
        new TableWriter(skade.loadTable(ShopHistory.AUDIT)).append(List.of(end));
      } catch (Throwable e) {
        failed.set(e);
      }
    }

    void finishAndAwaitRecorded(JobID job) throws Exception {
      join();
      assertThat(failed.get()).as("the history writer's failure").isNull();
      await()
          .atMost(Duration.ofMinutes(2))
          .until(
              () -> {
                CLUSTER.requireNotFailed(job);
                return Recorder.committed().stream().anyMatch(seen -> seen.commitSeq() == last());
              });
    }

    private long last() {
      return skade.commitSeq();
    }
  }

  /** A change as a line: table, kind, commit, its transaction, and the row's typed values. */
  static final class Lines implements DatabaseChangeDeserializer<String> {
    @Override
    public void deserialize(DatabaseChange change, Collector<String> out) {
      StringBuilder line =
          new StringBuilder()
              .append(change.table())
              .append('|')
              .append(change.row().getRowKind().shortString())
              .append('|')
              .append(change.commitSeq())
              .append('|')
              .append(change.transactionStart());
      RowData row = change.row();
      List<org.apache.iceberg.types.Types.NestedField> fields = change.rowType().fields();
      for (int i = 0; i < fields.size(); i++) {
        String name = fields.get(i).name();
        if (row.isNullAt(i) || MetadataColumns.isMetadataColumn(name)) {
          continue;
        }
        Type.TypeID type = fields.get(i).type().typeId();
        line.append('|')
            .append(name)
            .append('=')
            .append(type == Type.TypeID.LONG ? "L" + row.getLong(i) : "S" + row.getString(i));
      }
      out.collect(line.toString());
    }

    @Override
    public TypeInformation<String> getProducedType() {
      return Types.STRING;
    }
  }

  /** A recorded change, and the checkpoint that recorded it. */
  record Seen(
      long order,
      long checkpoint,
      String table,
      boolean removes,
      long commitSeq,
      long transactionStart,
      Map<String, Object> values) {

    static Seen parse(long order, long checkpoint, String line) {
      String[] parts = line.split("\\|");
      Map<String, Object> values = new TreeMap<>();
      for (int i = 4; i < parts.length; i++) {
        String name = parts[i].substring(0, parts[i].indexOf('='));
        String value = parts[i].substring(name.length() + 2);
        values.put(name, parts[i].charAt(name.length() + 1) == 'L' ? Long.valueOf(value) : value);
      }
      return new Seen(
          order,
          checkpoint,
          parts[0],
          parts[1].equals("-U") || parts[1].equals("-D"),
          Long.parseLong(parts[2]),
          Long.parseLong(parts[3]),
          values);
    }
  }

  /**
   * Chained to each reader: stamps each change with the order it left the readers in (one counter
   * of the JVM), and records it when the checkpoint after it completes — once, as a transactional
   * sink would: what a failed attempt emitted after its last completed checkpoint is dropped. Fails
   * the job once at each given count of changes.
   */
  static final class Recorder extends RichMapFunction<String, String>
      implements CheckpointedFunction, CheckpointListener {
    private static final AtomicLong emitted = new AtomicLong();
    static final AtomicLong failed = new AtomicLong();
    private static final Set<Long> failAt = ConcurrentHashMap.newKeySet();

    /**
     * Per subtask and checkpoint, the changes before its barrier, not yet known completed. Per
     * subtask, as a sink's transactions are: a subtask that fails alone restores alone.
     */
    private static final Map<Integer, NavigableMap<Long, List<Seen>>> pending = new HashMap<>();

    private static final List<Seen> committed = new ArrayList<>();

    private transient List<Long> orders;
    private transient List<String> lines;

    static synchronized void reset() {
      emitted.set(0);
      failed.set(0);
      failAt.clear();
      pending.clear();
      committed.clear();
    }

    static void failAt(long... counts) {
      for (long count : counts) {
        failAt.add(count);
      }
    }

    static synchronized List<Seen> committed() {
      List<Seen> sorted = new ArrayList<>(committed);
      sorted.sort(Comparator.comparingLong(Seen::order));
      return sorted;
    }

    @Override
    public String map(String line) {
      long order = emitted.incrementAndGet();
      if (failAt.remove(order)) {
        failed.incrementAndGet();
        throw new IllegalStateException("injected failure at change " + order);
      }
      orders.add(order);
      lines.add(line);
      return line;
    }

    @Override
    public void snapshotState(FunctionSnapshotContext context) {
      List<Seen> before = new ArrayList<>();
      for (int i = 0; i < lines.size(); i++) {
        before.add(Seen.parse(orders.get(i), context.getCheckpointId(), lines.get(i)));
      }
      synchronized (Recorder.class) {
        mine().computeIfAbsent(context.getCheckpointId(), id -> new ArrayList<>()).addAll(before);
      }
      orders.clear();
      lines.clear();
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
      synchronized (Recorder.class) {
        NavigableMap<Long, List<Seen>> done = mine().headMap(checkpointId, true);
        done.values().forEach(committed::addAll);
        done.clear();
      }
    }

    private NavigableMap<Long, List<Seen>> mine() {
      return pending.computeIfAbsent(
          getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), subtask -> new TreeMap<>());
    }

    @Override
    public void initializeState(FunctionInitializationContext context) {
      orders = new ArrayList<>();
      lines = new ArrayList<>();
      synchronized (Recorder.class) {
        if (context.getRestoredCheckpointId().isPresent()) {
          long restored = context.getRestoredCheckpointId().getAsLong();
          NavigableMap<Long, List<Seen>> done = mine().headMap(restored, true);
          done.values().forEach(committed::addAll);
          done.clear();
        }
        // a failed attempt's changes after the checkpoint restored are emitted again
        mine().tailMap(context.getRestoredCheckpointId().orElse(0), false).clear();
      }
    }
  }
}
