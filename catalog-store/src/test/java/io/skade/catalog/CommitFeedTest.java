package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.LongStream;
import java.util.stream.StreamSupport;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CommitFeedTest {
  @TempDir Path warehouse;

  @Test
  void concurrentAppendsAllLandInAGaplessLogThatEverySubscriberSeesOnceInOrder() throws Exception {
    int threads = 8;
    int appendsPerThread = 200;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<TableIdentifier> tables = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        Catalogs.createTable(catalog, "t" + t);
        tables.add(TableIdentifier.of(Catalogs.DB, "t" + t));
      }
      long start = catalog.commitSeq();
      List<Collector> subscribers = List.of(new Collector(catalog), new Collector(catalog));

      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> writers = new ArrayList<>();
      for (int w = 0; w < threads; w++) {
        int writer = w;
        writers.add(
            pool.submit(
                (Callable<Void>)
                    () -> {
                      go.await();
                      Table table = catalog.loadTable(tables.get(writer % tables.size()));
                      for (int i = 0; i < appendsPerThread; i++) {
                        Catalogs.append(table, "w" + writer + "-" + i);
                      }
                      return null;
                    }));
      }
      go.countDown();
      for (Future<?> writer : writers) {
        writer.get(); // every append succeeds, conflicts retried by Iceberg
      }
      pool.shutdown();

      long end = catalog.commitSeq();
      assertThat(end - start).isEqualTo((long) threads * appendsPerThread);
      List<CommitEvent> log = list(catalog.commitsSince(0));
      assertThat(log)
          .extracting(CommitEvent::commitSeq)
          .containsExactlyElementsOf(LongStream.rangeClosed(1, end).boxed().toList());
      assertThat(log).extracting(CommitEvent::tsMicros).isSorted();

      // The log is each table's history: its snapshots in order, ending at its current pointer.
      for (TableIdentifier id : tables) {
        Table table = catalog.loadTable(id);
        String key = catalog.commitTableKey(id);
        List<CommitEvent> rows = log.stream().filter(e -> e.tableKey().equals(key)).toList();
        List<Long> snapshotsInLog =
            rows.stream().flatMap(e -> e.addedSnapshotIds().stream()).toList();
        List<Long> snapshots =
            StreamSupport.stream(table.snapshots().spliterator(), false)
                .map(Snapshot::snapshotId)
                .toList();
        assertThat(snapshotsInLog).containsExactlyElementsOf(snapshots);
        assertThat(rows.get(rows.size() - 1).metadataLocation())
            .isEqualTo(((HasTableOperations) table).operations().current().metadataFileLocation());
        assertThat(rows.get(0).operation()).isEqualTo(CommitOperation.CREATE);
      }

      List<CommitEvent> expected = log.stream().filter(e -> e.commitSeq() > start).toList();
      for (Collector subscriber : subscribers) {
        assertThat(subscriber.awaitUpTo(end)).containsExactlyElementsOf(expected);
      }
    }
  }

  /**
   * A log whose newest commit was stamped ahead of this process's clock (an earlier owner's clock
   * ran ahead, or this one was stepped back): commits after it are stamped no earlier.
   */
  @Test
  void commitStampsNeverGoBackAlongTheLogWhenTheClockIsBehindIt() throws Exception {
    long hourMicros = Duration.ofHours(1).toNanos() / 1_000;
    long ahead;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Committer.BatchWriter real = catalog.committer().batchWriter();
      catalog
          .committer()
          .writeBatchesWith(
              batch -> {
                batch.commits.replaceAll(
                    e ->
                        new CommitEvent(
                            e.commitSeq(),
                            e.tableKey(),
                            e.operation(),
                            e.addedSnapshotIds(),
                            e.metadataLocation(),
                            e.previousMetadataLocation(),
                            e.tsMicros() + hourMicros));
                real.write(batch);
              });
      Catalogs.append(table, "stamped-an-hour-ahead");
      ahead = list(catalog.commitsSince(0)).get(1).tsMicros();
    }
    try (SkadeCatalog reopened = Catalogs.open(warehouse)) {
      Table table = reopened.loadTable(TableIdentifier.of(Catalogs.DB, "t"));
      Catalogs.append(table, "after");
      Catalogs.append(table, "after-2");
      List<CommitEvent> log = list(reopened.commitsSince(0));
      assertThat(log).hasSize(4);
      assertThat(log.get(2).tsMicros())
          .as("the first commit after the reopen, against the log's newest stamp")
          .isGreaterThanOrEqualTo(ahead);
      assertThat(log).extracting(CommitEvent::tsMicros).isSorted();
    }
  }

  @Test
  void groupCommitSyncsTheWalFewerTimesThanItCommitsUnderSixteenCommitters() throws Exception {
    int committers = 16;
    int commitsEach = 30;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Table> tables = new ArrayList<>();
      for (int t = 0; t < committers; t++) {
        tables.add(Catalogs.createTable(catalog, "g" + t));
      }
      long seqBefore = catalog.commitSeq();
      long syncsBefore = catalog.statistics().walSyncs();
      runConcurrently(
          tables,
          commitsEach,
          (table, i) -> table.updateProperties().set("round", String.valueOf(i)).commit());
      long commits = catalog.commitSeq() - seqBefore;
      long syncs = catalog.statistics().walSyncs() - syncsBefore;
      assertThat(commits).isEqualTo((long) committers * commitsEach);
      assertThat(syncs)
          .as("WAL syncs for %d commits", commits)
          .isGreaterThan(0)
          .isLessThan(commits);
    }
  }

  @Test
  void aSubscriberThatDoesNotReadIsToldItLaggedAndRecoversTheFullSequenceFromTheLog()
      throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Table> tables = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        tables.add(Catalogs.createTable(catalog, "busy" + t));
      }
      try (CommitSubscription subscription = catalog.subscribeCommits()) {
        long cursor = subscription.startCursor();
        runConcurrently(
            tables,
            625,
            (table, i) -> table.updateProperties().set("i", String.valueOf(i)).commit());
        long end = catalog.commitSeq();
        assertThat(end - cursor).isEqualTo(5_000);

        List<Long> seen = new ArrayList<>();
        boolean lagged = false;
        while (cursor < end) {
          CommitEvent event;
          try {
            event = subscription.poll(Duration.ofSeconds(10));
          } catch (CommitFeedLaggedException e) {
            lagged = true;
            for (CommitEvent missed : catalog.commitsSince(cursor)) {
              seen.add(missed.commitSeq());
              cursor = missed.commitSeq();
            }
            continue;
          }
          assertThat(event).as("an event after cursor %d", cursor).isNotNull();
          if (event.commitSeq() > cursor) {
            seen.add(event.commitSeq());
            cursor = event.commitSeq();
          }
        }
        assertThat(lagged).isTrue();
        assertThat(seen)
            .containsExactlyElementsOf(
                LongStream.rangeClosed(subscription.startCursor() + 1, end).boxed().toList());
      }
    }
  }

  @Test
  void commitsRacingASubscribeAreSeenExactlyOnceThroughCursorAndEvents() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "race");
      AtomicBoolean stop = new AtomicBoolean();
      Thread writer =
          new Thread(
              () -> {
                int i = 0;
                while (!stop.get()) {
                  table.updateProperties().set("i", String.valueOf(i++)).commit();
                }
              });
      writer.start();
      List<CommitSubscription> subscriptions = new ArrayList<>();
      try {
        for (int s = 0; s < 50; s++) {
          subscriptions.add(catalog.subscribeCommits(100_000));
          Thread.onSpinWait();
        }
      } finally {
        stop.set(true);
        writer.join();
      }
      long end = catalog.commitSeq();
      for (CommitSubscription subscription : subscriptions) {
        // What the cursor covers plus what the subscription delivers after it: exactly 1..end.
        List<Long> after = new ArrayList<>();
        long last = subscription.startCursor();
        while (last < end) {
          CommitEvent event = subscription.poll(Duration.ofSeconds(10));
          assertThat(event).as("event after %d", last).isNotNull();
          after.add(event.commitSeq());
          last = event.commitSeq();
        }
        assertThat(after)
            .containsExactlyElementsOf(
                LongStream.rangeClosed(subscription.startCursor() + 1, end).boxed().toList());
        subscription.close();
      }
    }
  }

  @Test
  void everyPointerChangeTakesTheNextCommitSeqAndATransactionIsOneCommit() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Catalogs.DB);
      TableIdentifier a = TableIdentifier.of(Catalogs.DB, "a");
      TableIdentifier b = TableIdentifier.of(Catalogs.DB, "b");
      Table table = catalog.createTable(a, Catalogs.SCHEMA); // 1 CREATE
      table.updateProperties().set("k", "v").commit(); // 2 metadata-only
      var tx = table.newTransaction();
      tx.newFastAppend().appendFile(Catalogs.dataFile("x")).commit();
      tx.newFastAppend().appendFile(Catalogs.dataFile("y")).commit();
      tx.commitTransaction(); // 3 two snapshots
      List<Long> txSnapshots =
          StreamSupport.stream(catalog.loadTable(a).snapshots().spliterator(), false)
              .map(Snapshot::snapshotId)
              .toList();
      CommitEvent txCommit = catalog.commitOf(a, txSnapshots.get(0)).orElseThrow();
      catalog.renameTable(a, b); // 4, 5
      assertThat(catalog.commitOf(b, txSnapshots.get(1))).hasValue(txCommit); // index moved
      String location =
          ((HasTableOperations) catalog.loadTable(b)).operations().current().metadataFileLocation();
      catalog.dropTable(b, false); // 6 DROP
      catalog.registerTable(a, location); // 7 REGISTER

      List<CommitEvent> log = list(catalog.commitsSince(0));
      assertThat(log)
          .extracting(CommitEvent::commitSeq)
          .containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L);
      assertThat(log)
          .extracting(CommitEvent::operation)
          .containsExactly(
              CommitOperation.CREATE,
              CommitOperation.UPDATE,
              CommitOperation.UPDATE,
              CommitOperation.RENAME_FROM,
              CommitOperation.RENAME_TO,
              CommitOperation.DROP,
              CommitOperation.REGISTER);
      assertThat(log.get(1).snapshotId()).isEmpty();
      assertThat(txCommit).isEqualTo(log.get(2));
      assertThat(log.get(2).addedSnapshotIds()).containsExactlyElementsOf(txSnapshots);
      assertThat(log.get(2).snapshotId()).hasValue(txSnapshots.get(1));
      assertThat(log.get(3).tableKey()).isEqualTo(catalog.commitTableKey(a));
      assertThat(log.get(4).tableKey()).isEqualTo(catalog.commitTableKey(b));
      assertThat(log.get(2).previousMetadataLocation()).isEqualTo(log.get(1).metadataLocation());
      assertThat(catalog.commitOf(a, txSnapshots.get(0))).as("dropped with its table").isEmpty();
      assertThat(catalog.commitSeq()).isEqualTo(7);
    }
  }

  @Test
  void anEventArrivesOnlyOnceItsCommitIsDurableAndVisibleToLoadTable() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "visible");
      TableIdentifier id = TableIdentifier.of(Catalogs.DB, "visible");
      int appends = 50;
      try (CommitSubscription feed = catalog.subscribeCommits()) {
        Thread writer =
            new Thread(
                () -> {
                  for (int i = 0; i < appends; i++) {
                    Catalogs.append(table, "v" + i);
                  }
                });
        writer.start();
        for (int received = 0; received < appends; received++) {
          CommitEvent event = feed.poll(Duration.ofSeconds(30));
          assertThat(event).isNotNull();
          // Loaded the moment the event arrives: the table is at this commit or a later one.
          var metadata = ((HasTableOperations) catalog.loadTable(id)).operations().current();
          List<String> reached = new ArrayList<>();
          metadata.previousFiles().forEach(entry -> reached.add(entry.file()));
          reached.add(metadata.metadataFileLocation());
          assertThat(reached).contains(event.metadataLocation());
          assertThat(metadata.snapshot(event.snapshotId().orElseThrow())).isNotNull();
        }
        writer.join();
      }
    }
  }

  @Test
  void theLogIsReadInPagesAndSurvivesAReopen() throws Exception {
    // More rows than one page (1024), written by 4 committers so group commit keeps this quick.
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Table> tables = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        tables.add(Catalogs.createTable(catalog, "paged" + t));
      }
      runConcurrently(
          tables, 275, (table, i) -> table.updateProperties().set("i", String.valueOf(i)).commit());
    }
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThat(catalog.commitSeq()).isEqualTo(1_104);
      assertThat(catalog.commitsSince(100, 10))
          .extracting(CommitEvent::commitSeq)
          .containsExactlyElementsOf(LongStream.rangeClosed(101, 110).boxed().toList());
      assertThat(list(catalog.commitsSince(7)))
          .extracting(CommitEvent::commitSeq)
          .containsExactlyElementsOf(LongStream.rangeClosed(8, 1_104).boxed().toList());
      assertThat(catalog.commitsSince(1_104, 10)).isEmpty();
    }
  }

  @Test
  void aClosedSubscriptionStopsReceivingAndAClosedCatalogRefusesNewOnes() throws Exception {
    SkadeCatalog catalog = Catalogs.open(warehouse);
    Table table = Catalogs.createTable(catalog, "c");
    CommitSubscription closed = catalog.subscribeCommits();
    closed.close();
    CommitSubscription open = catalog.subscribeCommits(4);
    table.updateProperties().set("k", "v").commit();
    // The create (at or below the start cursor) is never delivered, even when it was published
    // after the subscribe; the update is.
    CommitEvent event = open.poll(Duration.ofSeconds(10));
    assertThat(event).isNotNull();
    assertThat(event.operation()).isEqualTo(CommitOperation.UPDATE);
    assertThatThrownBy(() -> closed.poll(Duration.ZERO)).isInstanceOf(IllegalStateException.class);
    catalog.close();
    assertThatThrownBy(() -> open.poll(Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(catalog::subscribeCommits)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  interface TableAction {
    void run(Table table, int iteration);
  }

  /** One thread per table, started together, each running {@code action} {@code times} times. */
  private static void runConcurrently(List<Table> tables, int times, TableAction action)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(tables.size());
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> futures = new ArrayList<>();
      for (Table table : tables) {
        futures.add(
            pool.submit(
                (Callable<Void>)
                    () -> {
                      go.await();
                      for (int i = 0; i < times; i++) {
                        action.run(table, i);
                      }
                      return null;
                    }));
      }
      go.countDown();
      for (Future<?> future : futures) {
        future.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static List<CommitEvent> list(Iterable<CommitEvent> events) {
    List<CommitEvent> out = new ArrayList<>();
    events.forEach(out::add);
    return out;
  }

  /** Drains a subscription on its own thread, as a live consumer would. */
  private static final class Collector {
    private final CommitSubscription subscription;
    private final List<CommitEvent> events = Collections.synchronizedList(new ArrayList<>());
    private final Thread thread;

    Collector(SkadeCatalog catalog) {
      this.subscription = catalog.subscribeCommits(1 << 20);
      this.thread =
          new Thread(
              () -> {
                try {
                  while (true) {
                    CommitEvent event = subscription.poll(Duration.ofMillis(100));
                    if (event != null) {
                      events.add(event);
                    }
                  }
                } catch (InterruptedException | IllegalStateException e) {
                  // subscription closed: done
                }
              });
      thread.start();
    }

    List<CommitEvent> awaitUpTo(long seq) throws InterruptedException {
      try {
        await("commit " + seq + " delivered")
            .atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(10))
            .until(
                () -> {
                  synchronized (events) {
                    return !events.isEmpty() && events.get(events.size() - 1).commitSeq() >= seq;
                  }
                });
      } finally {
        subscription.close();
        thread.join();
      }
      return new ArrayList<>(events);
    }
  }
}
