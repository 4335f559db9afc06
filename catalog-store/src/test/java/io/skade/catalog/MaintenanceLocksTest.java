package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Table locks in the catalog: taken atomically (of many racing holders exactly one), released only
 * by their holder, durable across a reopen, taken over once older than the taker's lease, and never
 * a commit.
 */
class MaintenanceLocksTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");
  private static final TableIdentifier U = TableIdentifier.of(Catalogs.DB, "u");
  private static final String LOCK = MaintenanceLock.MAINTENANCE;
  private static final Duration HOUR = Duration.ofHours(1);

  @TempDir Path warehouse;

  @Test
  void aLockIsHeldByOneHolderReleasedOnlyByItAndSurvivesAReopen() throws Exception {
    Instant before = Instant.now().minusMillis(1);
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      long seq = catalog.commitSeq();
      assertThat(catalog.tryLock(T, LOCK, "job a", HOUR)).isTrue();
      assertThat(catalog.tryLock(T, LOCK, "job a", HOUR)).as("a retry of its holder").isTrue();
      assertThat(catalog.tryLock(T, LOCK, "job b", HOUR)).isFalse();
      assertThat(catalog.tryLock(U, LOCK, "job b", HOUR)).as("another table's").isTrue();
      assertThat(catalog.tryLock(T, "recovery job b", "job b", HOUR)).as("another lock").isTrue();
      assertThat(catalog.unlock(T, LOCK, "job b")).as("not its holder").isFalse();
      MaintenanceLock held = catalog.lock(T, LOCK).orElseThrow();
      assertThat(held.holder()).isEqualTo("job a");
      assertThat(held.since()).isBetween(before, Instant.now());
      assertThat(catalog.commitSeq()).as("a lock is not a commit").isEqualTo(seq);
    }
    try (SkadeCatalog reopened = Catalogs.open(warehouse)) {
      assertThat(reopened.lock(T, LOCK)).map(MaintenanceLock::holder).hasValue("job a");
      assertThat(reopened.unlock(T, LOCK, "job a")).isTrue();
      assertThat(reopened.lock(T, LOCK)).isEmpty();
      assertThat(reopened.unlock(T, LOCK, "job a")).as("already free").isFalse();
      assertThat(reopened.tryLock(T, LOCK, "job b", HOUR)).isTrue();
    }
  }

  @Test
  void aLockOlderThanTheTakersLeaseIsTakenOver() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThat(catalog.tryLock(T, LOCK, "a job cancelled mid-task", HOUR)).isTrue();
      Thread.sleep(20); // time passes: the lock is now older than the 10 ms lease below
      assertThat(catalog.tryLock(T, LOCK, "job b", HOUR)).isFalse();
      assertThat(catalog.tryLock(T, LOCK, "job b", Duration.ofMillis(10))).isTrue();
      assertThat(catalog.lock(T, LOCK)).map(MaintenanceLock::holder).hasValue("job b");
      assertThat(catalog.unlock(T, LOCK, "a job cancelled mid-task"))
          .as("the old holder no longer releases it")
          .isFalse();
    }
  }

  @Test
  void ofManyHoldersRacingForALockExactlyOneGetsIt() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      int holders = 16;
      ExecutorService threads = Executors.newFixedThreadPool(holders);
      try {
        for (int round = 0; round < 20; round++) {
          CountDownLatch start = new CountDownLatch(1);
          List<Future<Boolean>> tries = new ArrayList<>();
          for (int h = 0; h < holders; h++) {
            String holder = "holder " + h;
            tries.add(
                threads.submit(
                    () -> {
                      start.await();
                      return catalog.tryLock(T, LOCK, holder, HOUR);
                    }));
          }
          start.countDown();
          List<String> winners = new ArrayList<>();
          for (int h = 0; h < holders; h++) {
            if (tries.get(h).get()) {
              winners.add("holder " + h);
            }
          }
          assertThat(winners).as("round %s", round).hasSize(1);
          assertThat(catalog.lock(T, LOCK)).map(MaintenanceLock::holder).hasValue(winners.get(0));
          assertThat(catalog.unlock(T, LOCK, winners.get(0))).isTrue();
        }
      } finally {
        threads.shutdownNow();
      }
    }
  }
}
