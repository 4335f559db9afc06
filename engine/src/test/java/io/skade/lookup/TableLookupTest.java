package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogConnection;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine of lookup joins without Flink: a lookup returns exactly the rows of its key that its
 * filter keeps at the latest commit, in every caching mode, as the table changes under it (expected
 * rows: Iceberg's reader and Iceberg's evaluator of the filter); I/O failures are retried with
 * backoff, other failures are not.
 */
class TableLookupTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "city", Types.StringType.get()),
              Types.NestedField.optional(3, "score", Types.IntegerType.get())),
          Set.of(1));
  private static final TableIdentifier ID = TableIdentifier.of("db", "people");
  private static final List<String> CITIES = List.of("Oslo", "Bergen", "Tromsø");
  private static final List<Expression> FILTERS =
      List.of(
          Expressions.alwaysTrue(),
          Expressions.and(Expressions.notNull("city"), Expressions.equal("city", "Oslo")),
          Expressions.and(Expressions.notNull("score"), Expressions.greaterThanOrEqual("score", 5)),
          Expressions.isNull("score"),
          Expressions.or(
              Expressions.and(Expressions.notNull("city"), Expressions.notEqual("city", "Oslo")),
              Expressions.and(Expressions.notNull("score"), Expressions.lessThan("score", 2))));
  private static final int KEYS = 12;

  /** Keys appended later start here. */
  private static final int NEW_KEYS = 1000;

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
  @EnumSource(TableLookup.Caching.class)
  void aLookupReturnsExactlyTheRowsOfItsKeyThatItsFilterKeepsAsTheTableChanges(
      TableLookup.Caching caching) {
    long seed = System.nanoTime();
    System.out.println("TableLookupTest seed " + seed + " (" + caching + ")");
    Random random = new Random(seed);
    writer.append(rows(random, 0, KEYS));
    List<TableLookup<Record>> lookups = new ArrayList<>();
    for (Expression filter : FILTERS) {
      lookups.add(lookup(settings(caching, filter, 0)));
    }
    for (int commit = 0; commit < 12; commit++) {
      switch (random.nextInt(3)) {
        case 0 -> writer.upsert(rows(random, random.nextInt(KEYS - 4), 1 + random.nextInt(4)));
        case 1 -> writer.deleteKeys(List.of(row(random.nextInt(KEYS), null, null)));
        default -> writer.append(rows(random, NEW_KEYS + commit * 2, 2));
      }
      Table table = catalog.get().loadTable(ID);
      List<Record> all = IcebergReference.allRows(table, table.currentSnapshot().snapshotId());
      for (int f = 0; f < FILTERS.size(); f++) {
        List<Long> keys = new ArrayList<>();
        for (long key = 0; key < KEYS; key++) {
          keys.add(key);
        }
        for (long key = NEW_KEYS; key < NEW_KEYS + commit * 2 + 2; key++) {
          keys.add(key);
        }
        for (long key : keys) {
          assertThat(lookup(lookups.get(f), key))
              .as("seed %s, commit %s, filter %s, key %s", seed, commit, FILTERS.get(f), key)
              .isEqualTo(expected(all, FILTERS.get(f), key));
        }
      }
    }
  }

  /**
   * A lookup by a double column compares as SQL does: 0.0 equals -0.0 (which files store and order
   * apart), NaN equals nothing; the expected rows are those Java's {@code ==} on doubles (SQL's
   * {@code =}) keeps.
   */
  @ParameterizedTest(name = "{0}")
  @EnumSource(TableLookup.Caching.class)
  void aLookupByADoubleColumnTakesBothZerosAndNaNForNothing(TableLookup.Caching caching)
      throws IOException {
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "ratio", Types.DoubleType.get()));
    TableIdentifier id = TableIdentifier.of("db", "ratios");
    Table table = catalog.get().buildTable(id, schema).withProperty("format-version", "2").create();
    double[] ratios = {0.0, -0.0, Double.NaN, 1.5, -0.0, Double.NaN};
    List<Record> rows = new ArrayList<>();
    for (int i = 0; i < ratios.length; i++) {
      GenericRecord row = GenericRecord.create(schema);
      row.setField("id", (long) i);
      row.setField("ratio", ratios[i]);
      rows.add(row);
    }
    new TableWriter(table).append(rows.subList(0, 3));
    new TableWriter(table).append(rows.subList(3, 6)); // two files
    TableLookup<Record> lookup =
        new TableLookup<>(
            CatalogConnection.of(catalog.get()),
            id,
            new TableLookup.Settings(
                List.of("ratio"),
                null,
                Duration.ofHours(1),
                caching,
                caching == TableLookup.Caching.ROWS ? 100 : 0,
                Expressions.alwaysTrue(),
                0),
            caches.caches(),
            t -> Function.identity());

    for (double probe : new double[] {0.0, -0.0, Double.NaN, 1.5, 2.0}) {
      List<Long> expected = new ArrayList<>();
      for (int i = 0; i < ratios.length; i++) {
        if (ratios[i] == probe) {
          expected.add((long) i);
        }
      }
      for (int again = 0; again < 2; again++) { // the second time from the caches
        assertThat(lookup.lookup(List.of(probe)).stream().map(r -> (Long) r.getField("id")))
            .as("rows of ratio %s (%s), lookup %s", probe, caching, again)
            .containsExactlyInAnyOrderElementsOf(expected);
      }
    }
  }

  /**
   * Lookups on several threads decode pages of one file at once, dictionary-encoded strings among
   * them, and each still returns the row Iceberg's reader has for its key.
   */
  @Test
  void concurrentLookupsOfOneFileReturnTheRowsThatIcebergReads() throws Exception {
    catalog
        .get()
        .loadTable(ID)
        .updateProperties()
        .set("write.parquet.page-row-limit", "100")
        .commit(); // many pages to decode
    List<Record> rows = new ArrayList<>();
    for (long key = 0; key < 20_000; key++) {
      rows.add(row(key, CITIES.get((int) (key % 3)) + "-" + (key % 17), (int) (key % 8)));
    }
    new TableWriter(catalog.get().loadTable(ID)).append(rows);
    Table written = catalog.get().loadTable(ID);
    Map<Long, List<String>> expected = new HashMap<>();
    for (Record row : IcebergReference.allRows(written, written.currentSnapshot().snapshotId())) {
      expected
          .computeIfAbsent((Long) row.getField("id"), k -> new ArrayList<>())
          .add(IcebergReference.canonical(row, SCHEMA));
    }
    for (int round = 0; round < 3; round++) {
      // Caches of its own: every page is decoded anew.
      TableLookup<Record> lookup =
          new TableLookup<>(
              CatalogConnection.of(catalog.get()),
              ID,
              settings(TableLookup.Caching.PROBE, Expressions.alwaysTrue(), 0),
              new LookupCaches(LookupCaches.DEFAULT_MAX_BYTES),
              t -> Function.identity());
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<List<String>>> probes = new ArrayList<>();
        for (int thread = 0; thread < 4; thread++) {
          long first = thread * 5_000L;
          probes.add(
              pool.submit(
                  () -> {
                    List<String> mismatches = new ArrayList<>();
                    for (long key = first; key < first + 5_000; key += 7) {
                      List<String> found = lookup(lookup, key);
                      if (!found.equals(expected.get(key))) {
                        mismatches.add(
                            "key " + key + ": " + found + " instead of " + expected.get(key));
                      }
                    }
                    return mismatches;
                  }));
        }
        for (Future<List<String>> probe : probes) {
          assertThat(probe.get()).as("round %s", round).isEmpty();
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void aLookupWhoseFileComesBackDuringItsRetriesSucceeds() throws Exception {
    writer.append(List.of(row(1, "Oslo", 3)));
    TableLookup<Record> lookup =
        lookup(settings(TableLookup.Caching.PROBE, Expressions.alwaysTrue(), 6));
    Path file = onlyDataFile();
    Path aside = file.resolveSibling("aside.parquet");
    Files.move(file, aside);

    Thread restore =
        new Thread(
            () -> {
              Awaitility.await()
                  .atMost(Duration.ofSeconds(30))
                  .until(() -> lookup.stats().probes() >= 2); // the first retry failed too
              try {
                Files.move(aside, file);
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
            });
    restore.start();
    List<Record> rows = lookup.lookup(List.of(1L));
    restore.join();

    assertThat(rows).hasSize(1);
    assertThat(lookup.stats().probes()).isGreaterThanOrEqualTo(3);
  }

  @Test
  void aLookupWhoseFileStaysGoneFailsAfterItsRetriesNamingTheTableAndKey() throws Exception {
    writer.append(List.of(row(1, "Oslo", 3)));
    TableLookup<Record> lookup =
        lookup(settings(TableLookup.Caching.PROBE, Expressions.alwaysTrue(), 2));
    Files.delete(onlyDataFile());

    assertThatThrownBy(() -> lookup.lookup(List.of(1L)))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("db.people")
        .hasMessageContaining("3 attempt(s)")
        .hasMessageContaining("[1]");
    assertThat(lookup.stats().probes()).isEqualTo(3);
  }

  @Test
  void aLookupThatCannotHealFailsAtItsFirstAttempt() {
    writer.append(List.of(row(1, "Oslo", 3)));
    TableLookup<Record> lookup =
        lookup(settings(TableLookup.Caching.PROBE, Expressions.alwaysTrue(), 5));

    assertThatThrownBy(() -> lookup.lookup(List.of(1L, 2L)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("takes 1 values, got 2");
    assertThat(lookup.stats().probes()).isEqualTo(1);
  }

  @Test
  void aFilterOnAColumnTheTableLacksFailsWhenTheLookupIsMade() {
    writer.append(List.of(row(1, "Oslo", 3)));

    assertThatThrownBy(
            () ->
                lookup(settings(TableLookup.Caching.PROBE, Expressions.equal("country", "NO"), 0)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("country")
        .hasMessageContaining("[id, city, score]");
  }

  private TableLookup<Record> lookup(TableLookup.Settings settings) {
    return new TableLookup<>(
        CatalogConnection.of(catalog.get()),
        ID,
        settings,
        caches.caches(),
        table -> Function.identity());
  }

  private static TableLookup.Settings settings(
      TableLookup.Caching caching, Expression filter, int retries) {
    return new TableLookup.Settings(
        List.of("id"),
        null,
        Duration.ofHours(1),
        caching,
        caching == TableLookup.Caching.ROWS ? 100 : 0,
        filter,
        retries);
  }

  private static List<String> lookup(TableLookup<Record> lookup, long key) {
    try {
      return IcebergReference.sortedCanonical(lookup.lookup(List.of(key)), SCHEMA);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The rows of {@code key} that Iceberg's evaluator of {@code filter} keeps. */
  private static List<String> expected(List<Record> all, Expression filter, long key) {
    Evaluator keeps = new Evaluator(SCHEMA.asStruct(), filter, false);
    InternalRecordWrapper internal = new InternalRecordWrapper(SCHEMA.asStruct());
    List<Record> kept =
        all.stream()
            .filter(row -> row.getField("id").equals(key) && keeps.eval(internal.wrap(row)))
            .toList();
    return IcebergReference.sortedCanonical(kept, SCHEMA);
  }

  private Path onlyDataFile() throws IOException {
    Table table = catalog.get().loadTable(ID);
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      List<FileScanTask> all = new ArrayList<>();
      tasks.forEach(all::add);
      assertThat(all).hasSize(1);
      // Read as Iceberg's Hadoop file IO reads a location: never percent-decoded.
      return Paths.get(
          new org.apache.hadoop.fs.Path(all.get(0).file().location()).toUri().getPath());
    }
  }

  private static List<Record> rows(Random random, int firstKey, int count) {
    List<Record> rows = new ArrayList<>();
    for (int key = firstKey; key < firstKey + count; key++) {
      rows.add(
          row(
              key,
              random.nextInt(5) == 0 ? null : CITIES.get(random.nextInt(3)),
              random.nextInt(5) == 0 ? null : random.nextInt(8)));
    }
    return rows;
  }

  private static Record row(long id, String city, Integer score) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("city", city);
    record.setField("score", score);
    return record;
  }
}
