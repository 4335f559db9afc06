package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The consumer registry: cursors stored durably through the commit path, but not as commits. */
class ConsumersTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");
  private static final TableIdentifier U = TableIdentifier.of(Catalogs.DB, "u");

  @TempDir Path warehouse;

  @Test
  void storedConsumersAreReadListedDroppedAndSurviveAReopen() throws Exception {
    Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    StoredConsumer a;
    StoredConsumer b;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table t = Catalogs.createTable(catalog, "t");
      Catalogs.append(t, "t1");
      Table u = Catalogs.createTable(catalog, "u");
      Catalogs.append(u, "u1");
      ConsumerCursor onT = Catalogs.cursorAtCurrent(catalog, T);
      a = catalog.storeConsumer("job-a", onT);
      b = catalog.storeConsumer("job-b", Catalogs.cursorAtCurrent(catalog, U));
      catalog.storeConsumer("job-c", onT);

      assertThat(catalog.consumer("job-a")).hasValue(a);
      assertThat(a.cursor()).isEqualTo(onT);
      assertThat(a.lastSeen()).isBetween(before, Instant.now());
      assertThat(catalog.consumers(T))
          .extracting(StoredConsumer::consumerId)
          .containsExactly("job-a", "job-c");
      assertThat(catalog.consumers(U)).containsExactly(b);
      assertThat(catalog.consumers())
          .extracting(StoredConsumer::consumerId)
          .containsExactly("job-a", "job-b", "job-c");

      assertThat(catalog.dropConsumer("job-c")).isTrue();
      assertThat(catalog.dropConsumer("job-c")).as("already gone").isFalse();
      assertThat(catalog.consumer("job-c")).isEmpty();
      assertThat(catalog.consumer("nobody")).isEmpty();
    }
    try (SkadeCatalog reopened = Catalogs.open(warehouse)) {
      assertThat(reopened.consumers()).containsExactly(a, b);
    }
  }

  @Test
  void storingAgainReplacesTheCursorAndItsLastSeenTime() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table t = Catalogs.createTable(catalog, "t");
      Catalogs.append(t, "first");
      StoredConsumer first = catalog.storeConsumer("job", Catalogs.cursorAtCurrent(catalog, T));
      Catalogs.append(t, "second");
      Thread.sleep(5); // time passes, so the second store's last-seen time is a later one
      ConsumerCursor advanced = Catalogs.cursorAtCurrent(catalog, T);
      catalog.storeConsumer("job", advanced);

      StoredConsumer stored = catalog.consumer("job").orElseThrow();
      assertThat(stored.cursor()).isEqualTo(advanced);
      assertThat(stored.cursor().snapshotId()).isNotEqualTo(first.cursor().snapshotId());
      assertThat(stored.lastSeen()).isAfter(first.lastSeen());
      assertThat(catalog.consumers()).hasSize(1);
    }
  }

  @Test
  void aStoredCursorIsWrittenByTheCommitterButTakesNoCommitSeqAndReachesNoSubscriber()
      throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table t = Catalogs.createTable(catalog, "t");
      Catalogs.append(t, "f");
      ConsumerCursor cursor = Catalogs.cursorAtCurrent(catalog, T);
      long seq = catalog.commitSeq();
      long batches = catalog.statistics().batchesWritten();
      try (CommitSubscription feed = catalog.subscribeCommits()) {
        catalog.storeConsumer("job", cursor);
        catalog.dropConsumer("job");
        catalog.storeConsumer("job", cursor);

        assertThat(catalog.statistics().batchesWritten())
            .as("one synced batch per call")
            .isEqualTo(batches + 3);
        assertThat(catalog.commitSeq()).isEqualTo(seq);
        assertThat(catalog.commitsSince(seq, 10)).isEmpty();
        assertThat(feed.poll(Duration.ofMillis(200))).isNull();

        Catalogs.append(t, "next");
        CommitEvent next = feed.poll(Duration.ofSeconds(10));
        assertThat(next).isNotNull();
        assertThat(next.commitSeq()).as("the log stays gapless").isEqualTo(seq + 1);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "tab\tid", "nul\u0000id", "lone\ud800surrogate"})
  void invalidConsumerIdsAreRefusedWithTheReasonAndNothingIsStored(String id) throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table t = Catalogs.createTable(catalog, "t");
      Catalogs.append(t, "f");
      ConsumerCursor cursor = Catalogs.cursorAtCurrent(catalog, T);
      assertThatThrownBy(() -> catalog.storeConsumer(id, cursor))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid consumer id")
          .hasMessageContaining("use a non-empty id without control characters");
      assertThatThrownBy(() -> catalog.consumer(id)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> catalog.dropConsumer(id))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(catalog.consumers()).isEmpty();
    }
  }

  @Test
  void aControlCharacterInAnIdIsShownEscaped() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThatThrownBy(() -> catalog.consumer("tab\tid"))
          .hasMessageContaining("'tab\\u0009id'")
          .hasMessageContaining("control character U+0009");
    }
  }

  @Test
  void aFollowerReadsConsumersButCannotStoreOrDropThem() throws Exception {
    ConsumerCursor cursor;
    StoredConsumer stored;
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Table t = Catalogs.createTable(owner, "t");
      Catalogs.append(t, "f");
      cursor = Catalogs.cursorAtCurrent(owner, T);
      stored = owner.storeConsumer("job", cursor);
    }
    // The owner is closed first: in one JVM, every catalog of a directory shares its store.
    try (SkadeCatalog follower = Catalogs.open(warehouse, Map.of("catalog.access", "follower"))) {
      assertThat(follower.consumer("job")).hasValue(stored);
      assertThat(follower.consumers()).containsExactly(stored);
      assertThatThrownBy(() -> follower.storeConsumer("other", cursor))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("read-only follower");
      assertThatThrownBy(() -> follower.dropConsumer("job"))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("read-only follower");
    }
  }
}
