package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot expiry against consumers: a consumer at snapshot S needs S and every newer snapshot, so
 * while it is live a commit removing one of them is refused and changes nothing; a cursor expired
 * anyway is refused with the startup options that recover.
 */
class ExpiryGuardTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");
  private static final TableIdentifier U = TableIdentifier.of(Catalogs.DB, "u");

  @TempDir Path warehouse;

  @Test
  void aLiveConsumerBlocksExpiringItsSnapshotAndNewerOnesButNotOlderOnes() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 4);
      catalog.storeConsumer("job-1", Catalogs.cursorAt(catalog, T, s.get(1)));

      expire(catalog, s.get(0));
      assertThat(snapshotIds(catalog, T))
          .as("older than the cursor: expired")
          .containsExactly(s.get(1), s.get(2), s.get(3));

      for (long needed : List.of(s.get(1), s.get(2))) {
        assertRefusedAndNothingChanged(catalog, () -> expire(catalog, needed))
            .hasMessageContaining("table test.db.t")
            .hasMessageContaining("consumer 'job-1' (cursor at snapshot " + s.get(1))
            .hasMessageContaining("still needs snapshot(s) [" + needed + "]")
            .hasMessageContaining("dropConsumer")
            .hasMessageContaining("consumer.expiry-timeout (now 7d)");
      }
      assertRefusedAndNothingChanged(catalog, () -> expireAllButCurrent(catalog))
          .hasMessageContaining("still needs snapshot(s) [" + s.get(1) + ", " + s.get(2) + "]");
      assertThat(snapshotIds(catalog, T)).containsExactly(s.get(1), s.get(2), s.get(3));

      catalog.storeConsumer("job-1", Catalogs.cursorAt(catalog, T, s.get(3)));
      expireAllButCurrent(catalog);
      assertThat(snapshotIds(catalog, T))
          .as("after the consumer advanced")
          .containsExactly(s.get(3));
    }
  }

  @Test
  void everyLiveConsumerThatNeedsARemovedSnapshotIsNamed() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 3);
      catalog.storeConsumer("early", Catalogs.cursorAt(catalog, T, s.get(0)));
      catalog.storeConsumer("late", Catalogs.cursorAt(catalog, T, s.get(1)));
      catalog.storeConsumer("current", Catalogs.cursorAt(catalog, T, s.get(2)));
      assertRefusedAndNothingChanged(catalog, () -> expire(catalog, s.get(1)))
          .hasMessageContaining("consumer 'early'")
          .hasMessageContaining("consumer 'late'")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("'current'"));
    }
  }

  @Test
  void aDroppedConsumerNoLongerBlocksExpiry() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 2);
      catalog.storeConsumer("job", Catalogs.cursorAt(catalog, T, s.get(0)));
      assertRefusedAndNothingChanged(catalog, () -> expire(catalog, s.get(0)));

      catalog.dropConsumer("job");
      expire(catalog, s.get(0));
      assertThat(snapshotIds(catalog, T)).containsExactly(s.get(1));
    }
  }

  @Test
  void aConsumerUnseenLongerThanTheExpiryTimeoutNoLongerBlocksExpiry() throws Exception {
    List<Long> s;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      s = tableWithSnapshots(catalog, T, 2);
      catalog.storeConsumer("job", Catalogs.cursorAt(catalog, T, s.get(0)));
      assertRefusedAndNothingChanged(catalog, () -> expire(catalog, s.get(0)));
    }
    Thread.sleep(50); // time passes: the consumer is now unseen longer than the 20 ms below
    try (SkadeCatalog catalog =
        Catalogs.open(warehouse, Map.of(SkadeCatalog.CONSUMER_EXPIRY_TIMEOUT, "20ms"))) {
      expire(catalog, s.get(0));
      assertThat(snapshotIds(catalog, T)).containsExactly(s.get(1));
      assertThat(catalog.consumer("job")).as("still stored, but no longer counted").isPresent();
    }
  }

  @Test
  void consumersOfAnotherTableOrOfAnEarlierTableOfTheSameNameDoNotBlockExpiry() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 2);
      List<Long> onU = tableWithSnapshots(catalog, U, 1);
      catalog.storeConsumer("on-u", Catalogs.cursorAt(catalog, U, onU.get(0)));
      catalog.storeConsumer(
          "old-t",
          new ConsumerCursor(T, UUID.randomUUID().toString(), s.get(0), catalog.commitSeq()));
      expire(catalog, s.get(0));
      assertThat(snapshotIds(catalog, T)).containsExactly(s.get(1));
    }
  }

  @Test
  void aConsumerOfTheNameATableHadBeforeARenameDoesNotBlockExpiry() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      TableIdentifier old = TableIdentifier.of(Catalogs.DB, "old");
      List<Long> s = tableWithSnapshots(catalog, old, 2);
      catalog.storeConsumer("job", Catalogs.cursorAt(catalog, old, s.get(0)));
      catalog.renameTable(old, T);
      expire(catalog, s.get(0));
      assertThat(snapshotIds(catalog, T)).containsExactly(s.get(1));
    }
  }

  @Test
  void aConsumerThatStartedBeforeTheFirstSnapshotNeedsEverySnapshot() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "t");
      catalog.storeConsumer("job", Catalogs.cursorAt(catalog, T, ConsumerCursor.NO_SNAPSHOT));
      List<Long> s = appendSnapshots(catalog, T, 2);
      assertRefusedAndNothingChanged(catalog, () -> expire(catalog, s.get(0)))
          .hasMessageContaining("cursor at no snapshot yet");
    }
  }

  @Test
  void aMultiTableCommitThatRemovesANeededSnapshotChangesNoTable() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 2);
      tableWithSnapshots(catalog, U, 1);
      catalog.storeConsumer("job", Catalogs.cursorAt(catalog, T, s.get(0)));
      TableMetadata t = metadata(catalog, T);
      TableMetadata u = metadata(catalog, U);
      List<Path> uFiles = metadataFiles(catalog, U);
      TableCommit expireOnT =
          TableCommit.create(
              T, t, TableMetadata.buildFrom(t).removeSnapshots(Set.of(s.get(0))).build());
      TableCommit propertyOnU =
          TableCommit.create(
              U, u, TableMetadata.buildFrom(u).setProperties(Map.of("k", "v")).build());

      assertRefusedAndNothingChanged(
              catalog, () -> catalog.commitTransaction(List.of(expireOnT, propertyOnU)))
          .hasMessageContaining("consumer 'job'");
      assertThat(metadata(catalog, U).metadataFileLocation()).isEqualTo(u.metadataFileLocation());
      assertThat(metadataFiles(catalog, U)).isEqualTo(uFiles);
    }
  }

  @Test
  void theExpiryTimeoutTakesAWholeNumberWithAUnitAndNamesABadValue() {
    assertThat(CatalogConfig.duration("7d")).isEqualTo(Duration.ofDays(7));
    assertThat(CatalogConfig.duration("24h")).isEqualTo(Duration.ofHours(24));
    assertThat(CatalogConfig.duration("90m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(CatalogConfig.duration("15 min")).isEqualTo(Duration.ofMinutes(15));
    assertThat(CatalogConfig.duration("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(CatalogConfig.duration("1500ms")).isEqualTo(Duration.ofMillis(1500));
    assertThat(CatalogConfig.duration("1500")).isEqualTo(Duration.ofMillis(1500));
    for (String bad : List.of("0", "-1h", "7 days", "1.5h", "PT1H", "99999999999999999999d")) {
      assertThatThrownBy(
              () -> Catalogs.open(warehouse, Map.of(SkadeCatalog.CONSUMER_EXPIRY_TIMEOUT, bad)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'consumer.expiry-timeout' = '" + bad + "'")
          .hasMessageContaining("e.g. 7d or 24h");
    }
  }

  // ---- a cursor expired anyway ---------------------------------------------------------------

  @Test
  void aCursorWhoseSnapshotWasExpiredIsRefusedWithTheStartupOptionsThatRecover() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 3);
      ConsumerCursor expired = Catalogs.cursorAt(catalog, T, s.get(0));
      ConsumerCursor kept = Catalogs.cursorAt(catalog, T, s.get(1));
      assertThat(catalog.requireCursorUsable(expired).uuid().toString())
          .isEqualTo(expired.tableUuid());

      expire(catalog, s.get(0)); // no consumer stored it, so nothing held it back
      assertThatThrownBy(() -> catalog.requireCursorUsable(expired))
          .isInstanceOf(CursorExpiredException.class)
          .hasMessageContaining("table test.db.t")
          .hasMessageContaining("cursor at snapshot " + s.get(0))
          .hasMessageContaining("were expired")
          .hasMessageContaining("startup-mode=full")
          .hasMessageContaining("startup-mode=latest")
          .hasMessageContaining("from-snapshot=" + s.get(1));
      assertThat(catalog.requireCursorUsable(kept).currentSnapshot().snapshotId())
          .isEqualTo(s.get(2));
    }
  }

  @Test
  void aCursorFromBeforeTheFirstSnapshotIsUsableUntilTheEarliestSnapshotIsExpired()
      throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "t");
      ConsumerCursor cursor = Catalogs.cursorAt(catalog, T, ConsumerCursor.NO_SNAPSHOT);
      assertThat(catalog.requireCursorUsable(cursor)).isNotNull();
      List<Long> s = appendSnapshots(catalog, T, 2);
      assertThat(catalog.requireCursorUsable(cursor)).isNotNull();

      expire(catalog, s.get(0));
      assertThatThrownBy(() -> catalog.requireCursorUsable(cursor))
          .isInstanceOf(CursorExpiredException.class)
          .hasMessageContaining("before its first snapshot")
          .hasMessageContaining("from-snapshot=" + s.get(1));
    }
  }

  @Test
  void aCursorOfADroppedOrRecreatedTableIsRefused() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<Long> s = tableWithSnapshots(catalog, T, 1);
      ConsumerCursor cursor = Catalogs.cursorAt(catalog, T, s.get(0));
      catalog.dropTable(T, false);
      assertThatThrownBy(() -> catalog.requireCursorUsable(cursor))
          .isInstanceOf(CursorExpiredException.class)
          .hasMessageContaining("table test.db.t no longer exists")
          .hasMessageContaining("snapshot " + s.get(0))
          .hasMessageContaining("startup-mode=full")
          .hasMessageContaining("startup-mode=latest");

      Table recreated = Catalogs.createTable(catalog, "t");
      assertThatThrownBy(() -> catalog.requireCursorUsable(cursor))
          .isInstanceOf(CursorExpiredException.class)
          .hasMessageContaining("was dropped and created again")
          .hasMessageContaining(recreated.uuid().toString())
          .hasMessageContaining(cursor.tableUuid())
          .hasMessageContaining("startup-mode=full");
    }
  }

  // ---- helpers -----------------------------------------------------------------------------

  /**
   * Asserts that {@code commit} is refused with {@link ExpiryBlockedException} and leaves every
   * table of the catalog as it was: the same current metadata file and no new file beside it.
   */
  private static AbstractThrowableAssert<?, ? extends Throwable> assertRefusedAndNothingChanged(
      SkadeCatalog catalog, Runnable commit) throws IOException {
    List<TableIdentifier> tables = catalog.listTables(Catalogs.DB);
    List<String> locations = new ArrayList<>();
    List<List<Path>> files = new ArrayList<>();
    for (TableIdentifier id : tables) {
      locations.add(metadata(catalog, id).metadataFileLocation());
      files.add(metadataFiles(catalog, id));
    }
    long seq = catalog.commitSeq();
    AbstractThrowableAssert<?, ? extends Throwable> refused =
        assertThatThrownBy(commit::run).isInstanceOf(ExpiryBlockedException.class);
    for (int i = 0; i < tables.size(); i++) {
      assertThat(metadata(catalog, tables.get(i)).metadataFileLocation())
          .isEqualTo(locations.get(i));
      assertThat(metadataFiles(catalog, tables.get(i)))
          .as("metadata files of %s", tables.get(i))
          .isEqualTo(files.get(i));
    }
    assertThat(catalog.commitSeq()).isEqualTo(seq);
    return refused;
  }

  private static List<Long> tableWithSnapshots(SkadeCatalog catalog, TableIdentifier id, int n) {
    Catalogs.createTable(catalog, id.name());
    return appendSnapshots(catalog, id, n);
  }

  private static List<Long> appendSnapshots(SkadeCatalog catalog, TableIdentifier id, int n) {
    Table table = catalog.loadTable(id);
    for (int i = 0; i < n; i++) {
      Catalogs.append(table, id.name() + i);
    }
    return snapshotIds(catalog, id);
  }

  private static List<Long> snapshotIds(SkadeCatalog catalog, TableIdentifier id) {
    List<Long> ids = new ArrayList<>();
    for (Snapshot snapshot : catalog.loadTable(id).snapshots()) {
      ids.add(snapshot.snapshotId());
    }
    return ids;
  }

  private static void expire(SkadeCatalog catalog, long snapshotId) {
    // Catalogs.dataFile names files that do not exist: expiry must not try to delete them.
    catalog
        .loadTable(T)
        .expireSnapshots()
        .expireSnapshotId(snapshotId)
        .cleanExpiredFiles(false)
        .commit();
  }

  private static void expireAllButCurrent(SkadeCatalog catalog) {
    catalog
        .loadTable(T)
        .expireSnapshots()
        .expireOlderThan(System.currentTimeMillis() + 1)
        .cleanExpiredFiles(false)
        .commit();
  }

  private static TableMetadata metadata(SkadeCatalog catalog, TableIdentifier id) {
    return ((HasTableOperations) catalog.loadTable(id)).operations().current();
  }

  private static List<Path> metadataFiles(SkadeCatalog catalog, TableIdentifier id)
      throws IOException {
    try (Stream<Path> files = Files.list(Path.of(catalog.loadTable(id).location(), "metadata"))) {
      return files.sorted().toList();
    }
  }
}
