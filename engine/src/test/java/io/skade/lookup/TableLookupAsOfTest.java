package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.ExpiryBlockedException;
import io.skade.catalog.StoredConsumer;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Lookups as of a time without Flink: each answers with the rows of the snapshot that was current
 * then by the catalog's commit stamps (a rollback included), nothing before the table's first
 * snapshot, and refuses a time outside the history the table still holds or older than its
 * retention, which holds that history from expiry. The expected rows are the test's own record of
 * what each commit left, read back from Iceberg's reader at that commit's snapshot.
 */
class TableLookupAsOfTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "v", Types.StringType.get())),
          Set.of(1));
  private static final TableIdentifier ID = TableIdentifier.of("db", "dim");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private LookupCaches.Handle caches;
  private TableWriter writer;

  @BeforeEach
  void createTable() {
    caches = LookupCaches.acquire();
    catalog.get().buildTable(ID, SCHEMA).withProperty("format-version", "2").create();
    writer = new TableWriter(catalog.get().loadTable(ID));
  }

  @AfterEach
  void releaseCaches() {
    caches.close();
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = TableLookup.Caching.class,
      names = {"PROBE", "ROWS"})
  void aLookupAsOfATimeAnswersWithTheSnapshotCurrentThen(TableLookup.Caching caching)
      throws IOException {
    long created = nowMicros();
    List<Long> stamps = new ArrayList<>();
    stamps.add(stampOf(writer.append(List.of(row(1, "a"), row(2, "b"))).snapshotId()));
    long first = catalog.get().loadTable(ID).currentSnapshot().snapshotId();
    stamps.add(stampOf(writer.upsert(List.of(row(1, "a2"))).snapshotId()));
    stamps.add(stampOf(writer.deleteKeys(List.of(row(2, null))).snapshotId()));
    // a rollback makes the first snapshot current again, by a commit that adds none
    awaitNextMillisecond(stamps.get(stamps.size() - 1));
    catalog.get().loadTable(ID).manageSnapshots().rollbackTo(first).commit();
    stamps.add(lastCommitStamp());
    awaitNextMillisecond(stamps.get(stamps.size() - 1));
    stamps.add(stampOf(writer.upsert(List.of(row(3, "c"))).snapshotId()));
    // what each commit left, key by key
    List<Map<Long, String>> states =
        List.of(
            Map.of(1L, "a", 2L, "b"),
            Map.of(1L, "a2", 2L, "b"),
            Map.of(1L, "a2"),
            Map.of(1L, "a", 2L, "b"),
            Map.of(1L, "a", 2L, "b", 3L, "c"));

    TableLookup<Record> lookup = lookup(settings(caching, Duration.ofDays(1)));
    for (int probeTwice = 0; probeTwice < 2; probeTwice++) { // the second meets the row cache
      for (long key = 1; key <= 4; key++) {
        assertThat(values(lookup.lookupAsOf(created, List.of(key))))
            .as("before the table's first snapshot")
            .isEmpty();
        for (int c = 0; c < stamps.size(); c++) {
          // at a commit's stamp it is current; a microsecond before, the commit before it
          long at = stamps.get(c);
          assertThat(values(lookup.lookupAsOf(at, List.of(key))))
              .as("key %d at commit %d", key, c)
              .isEqualTo(valueOf(states.get(c), key));
          if (c != 3) { // a rollback is timed by the snapshot log, within its commit's millisecond
            List<String> before = c == 0 ? List.of() : valueOf(states.get(c - 1), key);
            assertThat(values(lookup.lookupAsOf(at - 1, List.of(key))))
                .as("key %d just before commit %d", key, c)
                .isEqualTo(before);
          }
        }
        assertThat(values(lookup.lookupAsOf(nowMicros() + 60_000_000L, List.of(key))))
            .as("after the last commit")
            .isEqualTo(valueOf(states.get(states.size() - 1), key));
      }
    }
    // lookups of now are unchanged beside them
    assertThat(values(lookup.lookup(List.of(3L)))).containsExactly("c");
  }

  @Test
  void aTimeWhoseSnapshotWasExpiredIsRefusedNotGuessed() throws IOException {
    long created = nowMicros();
    long s1 = stampOf(writer.append(List.of(row(1, "a"))).snapshotId());
    long s2 = stampOf(writer.upsert(List.of(row(1, "b"))).snapshotId());
    awaitNextMillisecond(s2);
    long s3 = stampOf(writer.upsert(List.of(row(1, "c"))).snapshotId());
    Table table = catalog.get().loadTable(ID);
    table.expireSnapshots().expireOlderThan(System.currentTimeMillis() + 1).retainLast(1).commit();

    TableLookup<Record> lookup = lookup(settings(TableLookup.Caching.PROBE, null));
    for (long expired : List.of(created, s1, s2)) {
      assertThatThrownBy(() -> lookup.lookupAsOf(expired, List.of(1L)))
          .isInstanceOf(SnapshotTimeline.HistoryNotRetainedException.class)
          .hasMessageContaining("table db.dim does not hold its history as of")
          .hasMessageContaining("older snapshots were expired")
          .hasMessageContaining("lookup.as-of.retention");
    }
    assertThat(values(lookup.lookupAsOf(s3, List.of(1L)))).containsExactly("c");
  }

  @Test
  void aRetentionHoldsItsHistoryFromExpiryAndRefusesOlderTimes() throws IOException {
    long s1 = stampOf(writer.append(List.of(row(1, "a"))).snapshotId());
    long s2 = stampOf(writer.upsert(List.of(row(1, "b"))).snapshotId());
    Duration retention = Duration.ofHours(1);
    TableLookup<Record> lookup = lookup(settings(TableLookup.Caching.PROBE, retention));

    StoredConsumer hold = catalog.get().consumer(TableLookup.holdId(ID, retention)).orElseThrow();
    Table table = catalog.get().loadTable(ID);
    assertThat(hold.cursor().snapshotId())
        .as("the oldest snapshot: the table is younger than the retention")
        .isEqualTo(table.snapshot(table.currentSnapshot().parentId()).snapshotId());
    assertThatThrownBy(
            () ->
                table
                    .expireSnapshots()
                    .expireOlderThan(System.currentTimeMillis() + 1)
                    .retainLast(1)
                    .commit())
        .isInstanceOf(ExpiryBlockedException.class);
    assertThat(values(lookup.lookupAsOf(s1, List.of(1L)))).containsExactly("a");
    assertThat(values(lookup.lookupAsOf(s2, List.of(1L)))).containsExactly("b");

    long twoHoursAgo = nowMicros() - Duration.ofHours(2).toNanos() / 1000;
    assertThatThrownBy(() -> lookup.lookupAsOf(twoHoursAgo, List.of(1L)))
        .isInstanceOf(SnapshotTimeline.HistoryNotRetainedException.class)
        .hasMessageContaining("skade lookup on db.dim: a lookup as of")
        .hasMessageContaining("is older than the as-of retention (PT1H")
        .hasMessageContaining("Raise the retention");
  }

  @Test
  void aLookupKeepingOnlyTheLatestRowsRefusesATime() {
    writer.append(List.of(row(1, "a")));
    TableLookup<Record> lookup = lookup(settings(TableLookup.Caching.FULL, null));
    assertThatThrownBy(() -> lookup.lookupAsOf(nowMicros(), List.of(1L)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("keeps only the latest rows in memory");
  }

  private long stampOf(long snapshotId) {
    long stamp = catalog.get().commitOf(ID, snapshotId).orElseThrow().tsMicros();
    awaitNextMillisecond(stamp);
    return stamp;
  }

  /** The stamp of the newest commit on the log (one of this table's: the only table). */
  private long lastCommitStamp() {
    long seq = catalog.get().commitSeq();
    List<CommitEvent> last = catalog.get().commitsSince(seq - 1, 1);
    return last.get(0).tsMicros();
  }

  /** Waits until the clock is past the millisecond of {@code micros}, so commits are apart. */
  private static void awaitNextMillisecond(long micros) {
    await().pollInterval(Duration.ofMillis(1)).until(() -> nowMicros() / 1000 > micros / 1000);
  }

  private static long nowMicros() {
    java.time.Instant now = java.time.Instant.now();
    return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
  }

  private TableLookup<Record> lookup(TableLookup.Settings settings) {
    return new TableLookup<>(
        CatalogConnection.of(catalog.get()),
        ID,
        settings,
        caches.caches(),
        t -> Function.identity());
  }

  private static TableLookup.Settings settings(TableLookup.Caching caching, Duration retention) {
    return new TableLookup.Settings(
            List.of("id"),
            null,
            Duration.ofHours(1),
            caching,
            caching == TableLookup.Caching.ROWS ? 100 : 0,
            Expressions.alwaysTrue(),
            0)
        .withAsOfRetention(retention);
  }

  private static Record row(long id, String v) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, v);
    return row;
  }

  private static List<String> values(List<Record> rows) {
    return rows.stream().map(r -> (String) r.get(1)).toList();
  }

  private static List<String> valueOf(Map<Long, String> state, long key) {
    return Optional.ofNullable(new TreeMap<>(state).get(key)).map(List::of).orElse(List.of());
  }
}
