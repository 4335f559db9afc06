package io.skade.source;

import static io.skade.testing.ChangeLines.take;
import static io.skade.testing.ChangeLines.text;
import static io.skade.testing.KnownHistory.SCHEMA;
import static io.skade.testing.KnownHistory.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.ChangeLines;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.Timeout.ThreadMode;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A burst of commits far beyond the catalog's commit feed buffer (one event): the feed drops
 * events, and the source must still emit every change exactly once, each key's in commit order.
 */
class SkadeSourceBurstTest {
  private static final int FEED_BUFFER = 1;
  private static final int WRITERS = 4;
  private static final int COMMITS_PER_WRITER = 20;
  private static final int KEYS_PER_WRITER = 5;

  /** Far more than the feed buffer: a multi-table commit of them all overflows it at once. */
  private static final int OTHER_TABLES = 8;

  /** Changes of the table made alone, once all else was read; each -U +U of key 0. */
  private static final int QUIET_ROUNDS = 5;

  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");

  @RegisterExtension
  final TestCatalog catalog =
      new TestCatalog(Map.of(SkadeCatalog.FEED_BUFFER_SIZE, String.valueOf(FEED_BUFFER)));

  /** One commit of a writer: an upsert of {@code key} to {@code name}, or its delete. */
  private record Op(long key, String name) {
    boolean delete() {
      return name == null;
    }
  }

  @Test
  @Timeout(value = 120, threadMode = ThreadMode.SEPARATE_THREAD) // next() ignores interrupts
  void aBurstOfCommitsBeyondTheFeedBufferLosesNothingAndKeepsEachKeysOrder() throws Exception {
    Table table =
        catalog
            .get()
            .buildTable(TABLE, SCHEMA)
            .withProperty(TableProperties.COMMIT_NUM_RETRIES, "1000") // the writers race
            .withProperty(TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "1")
            .withProperty(TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "20")
            .create();
    new TableWriter(table).append(List.of(row(0, "seed")));
    List<TableIdentifier> others = new ArrayList<>();
    for (int i = 0; i < OTHER_TABLES; i++) {
      others.add(TableIdentifier.of("db", "other" + i));
      catalog.get().createTable(others.get(i), SCHEMA);
    }

    // Each writer has keys of its own, so a key's commits are one writer's, in its order. The
    // number of changes follows from the commits alone: an upsert of a new key is +I, of a
    // present one -U +U, a delete -D.
    List<List<Op>> work = new ArrayList<>();
    Map<Long, String> expected = new HashMap<>(Map.of(0L, "seed"));
    int expectedChanges = 0;
    for (int w = 0; w < WRITERS; w++) {
      List<Op> ops = new ArrayList<>();
      for (int j = 0; j < COMMITS_PER_WRITER; j++) {
        long key = 1000L * (w + 1) + j % KEYS_PER_WRITER;
        boolean present = expected.containsKey(key);
        Op op = present && j % 10 == 9 ? new Op(key, null) : new Op(key, "w" + w + "-" + j);
        expectedChanges += op.delete() || !present ? 1 : 2;
        if (op.delete()) {
          expected.remove(key);
        } else {
          expected.put(key, op.name());
        }
        ops.add(op);
      }
      work.add(ops);
    }
    expected.put(0L, "last" + (QUIET_ROUNDS - 1)); // see the quiet rounds below

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    // No safety poll of the log: the feed alone wakes the enumerator, so a wake-up lost with
    // dropped events would leave changes unread, and the test would time out.
    SkadeSource<RowData> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.t")
            .pollInterval(Duration.ofHours(1))
            .build();
    Map<Long, String> materialised = new HashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 1);
    try (CloseableIterator<RowData> rows =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").executeAndCollect()) {
      // The seed came: the start is fixed at it, so every commit below is a change after it.
      apply(materialised, take(rows, 1).get(0));
      List<CompletableFuture<Void>> threads = new ArrayList<>();
      for (List<Op> ops : work) {
        threads.add(CompletableFuture.runAsync(() -> commitAll(ops), pool));
      }
      CompletableFuture<Void> writing =
          CompletableFuture.allOf(threads.toArray(CompletableFuture[]::new));
      // Meanwhile, commits of all the other tables at once keep overflowing the feed, so that
      // the table's own events are dropped with theirs.
      threads.add(
          CompletableFuture.runAsync(
              () -> {
                for (int round = 0; !writing.isDone(); round++) {
                  commitWithOthers(others, round, null);
                }
              },
              pool));
      for (CompletableFuture<Void> thread : threads) {
        thread.exceptionally(
            failure -> { // no waiting for changes that will not come
              closeQuietly(rows);
              return null;
            });
      }
      try {
        for (int i = 0; i < expectedChanges; i++) {
          apply(materialised, text(rows.next()));
        }
      } finally {
        threads.forEach(CompletableFuture::join); // a writer's failure first, if there was one
      }
      // All is read and quiet. Now a change of the table comes first in a multi-table commit
      // whose other events overflow the feed right behind it. When they do before the enumerator
      // polled it, its event is dropped and nothing comes after it: only the feed's report of
      // lost events can wake the enumerator (one that ignored it would hang here). Whether the
      // drop happens depends on thread timing, so this is done a few times, each change awaited.
      for (int round = 0; round < QUIET_ROUNDS; round++) {
        String name = "last" + round;
        commitWithOthers(
            others, -1, tx -> new TableWriter(tx.table()).upsert(List.of(row(0, name))));
        for (String change : take(rows, 2)) {
          apply(materialised, change);
        }
      }
    } finally {
      pool.shutdownNow();
    }

    table.refresh();
    assertThat(table.snapshots()).hasSize(1 + WRITERS * COMMITS_PER_WRITER + QUIET_ROUNDS);
    assertThat(materialised).isEqualTo(expected).isEqualTo(ChangeLines.rows(table));
  }

  /** Commits {@code ops} one by one, as fast as it can, through a writer of its own. */
  private void commitAll(List<Op> ops) {
    TableWriter writer = new TableWriter(catalog.get().loadTable(TABLE));
    for (Op op : ops) {
      if (op.delete()) {
        writer.deleteKeys(List.of(row(op.key(), null)));
      } else {
        writer.upsert(List.of(row(op.key(), op.name())));
      }
    }
  }

  /**
   * One multi-table commit (one batch of consecutive events): when {@code changeOfTable} is given,
   * that change of the source's table, then a property change of each other table.
   */
  private void commitWithOthers(
      List<TableIdentifier> others, int round, Consumer<Transaction> changeOfTable) {
    List<TableCommit> commits = new ArrayList<>();
    if (changeOfTable != null) {
      Transaction tx = catalog.get().loadTable(TABLE).newTransaction();
      changeOfTable.accept(tx);
      commits.add(tableCommit(TABLE, tx));
    }
    for (TableIdentifier other : others) {
      Transaction tx = catalog.get().loadTable(other).newTransaction();
      tx.updateProperties().set("round", String.valueOf(round)).commit();
      commits.add(tableCommit(other, tx));
    }
    catalog.get().commitTransaction(commits);
  }

  private static TableCommit tableCommit(TableIdentifier identifier, Transaction tx) {
    BaseTransaction prepared = (BaseTransaction) tx;
    return TableCommit.create(identifier, prepared.startMetadata(), prepared.currentMetadata());
  }

  /**
   * Applies one change to the rows materialised so far, strictly: an insert (+I, +U) only of an
   * absent key, a removal (-U, -D) only of the key's current row. A lost, repeated or reordered
   * change of a key breaks this.
   */
  private static void apply(Map<Long, String> rows, String change) {
    String[] parts = change.split(" ");
    long key = Long.parseLong(parts[1]);
    switch (parts[0]) {
      case "+I", "+U" -> {
        assertThat(rows).as("before %s", change).doesNotContainKey(key);
        rows.put(key, parts[2]);
      }
      case "-U", "-D" -> {
        assertThat(rows.get(key)).as("the row %s removes", change).isEqualTo(parts[2]);
        rows.remove(key);
      }
      default -> throw new AssertionError("not a change: " + change);
    }
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      // the test reports the failure that made it close
    }
  }
}
