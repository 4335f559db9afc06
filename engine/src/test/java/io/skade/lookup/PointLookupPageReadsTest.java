package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a probe reads on a table laid out for lookups as skade creates keyed tables ({@link
 * PointLookup#LOOKUP_FILE_PROPERTIES}: small row groups, 250-row pages, sorted by the key, bloom
 * filters on it), by the lookup's counters: a page not read before costs one read call of at most
 * 24 KB on a file already open and decodes one page of rows, and a page read before costs no read
 * and no decoding. Expected rows come from Iceberg's reader.
 */
class PointLookupPageReadsTest {
  private static final Schema SCHEMA = S3Tables.SCHEMA;
  private static final int FILES = 4;
  private static final int ROWS_PER_FILE = 20_000;
  private static final int PAGE_ROWS = 250;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private final PointLookup.Counters counters = new PointLookup.Counters();
  private Table table;

  @BeforeEach
  void writeFourSortedFiles() {
    table = S3Tables.createTable(catalog.get(), "dim");
    TableWriter writer = new TableWriter(table);
    for (int f = 0; f < FILES; f++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < ROWS_PER_FILE; i++) {
        long id = 2L * ((long) f * ROWS_PER_FILE + i); // even ids: odd ones are misses
        GenericRecord row = GenericRecord.create(SCHEMA);
        row.setField("id", id);
        row.setField("name", i % 7 == 0 ? null : "name-" + id);
        row.setField("city", "city-" + id % 40);
        row.setField("score", (int) (id % 1000));
        rows.add(row);
      }
      writer.append(rows);
    }
  }

  @Test
  void aPageNotReadBeforeIsOneReadOfAtMost24KbAndOnePageOfRowsAndAPageReadBeforeCostsNothing() {
    try (LookupCaches.Handle caches = LookupCaches.acquire()) {
      PointLookup lookup = new PointLookup(table, List.of("id"), caches.caches(), counters);
      for (int f = 0; f < FILES; f++) {
        probe(lookup, id(f, 0)); // opens every file
      }
      for (int f = 0; f < FILES; f++) {
        for (int i : List.of(3_001, 9_777, 19_999)) {
          long key = id(f, i);
          LookupStats cold = probe(lookup, key);
          assertThat(cold.fileOpens()).as("opens, key %s", key).isZero();
          assertThat(cold.readCalls()).as("read calls, key %s", key).isBetween(1L, 2L);
          assertThat(cold.bytesRead()).as("bytes, key %s", key).isBetween(1L, 24L << 10);
          assertThat(cold.rowsDecoded())
              .as("rows decoded, key %s", key)
              .isBetween(1L, (long) PAGE_ROWS);

          LookupStats warm = probe(lookup, key);
          assertThat(warm)
              .as("warm probe of key %s", key)
              .isEqualTo(new LookupStats(1, 0, 0, 0, 0, 1));
          LookupStats miss = probe(lookup, key + 1); // never written, inside the file's range
          assertThat(miss.bytesRead() + miss.rowsDecoded())
              .as("miss %s", key + 1)
              .isLessThanOrEqualTo(24L << 10);
        }
      }
    }
  }

  @Test
  void probesStayExactWhenTheCacheHoldsOnlyAFewPages() {
    LookupCaches tiny = new LookupCaches(16 << 10); // far less than the pages probed
    PointLookup lookup = new PointLookup(table, List.of("id"), tiny, counters);
    Random random = new Random(7);
    for (int i = 0; i < 400; i++) {
      long key = random.nextInt(2 * FILES * ROWS_PER_FILE + 10) - 5;
      probe(lookup, key);
    }
  }

  @Test
  void probesOnFourThreadsAtOnceOverColdCachesAreExact() throws Exception {
    Map<Long, List<String>> expected = new HashMap<>();
    for (Record row : IcebergReference.allRows(table, table.currentSnapshot().snapshotId())) {
      expected
          .computeIfAbsent((Long) row.getField("id"), k -> new ArrayList<>())
          .add(IcebergReference.canonical(row, SCHEMA));
    }
    // Every thread probes keys of the same pages, so they decode and fill the same pages.
    PointLookup lookup =
        new PointLookup(table, List.of("id"), new LookupCaches(1L << 30), counters);
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      List<Future<List<String>>> mismatches = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        Random random = new Random(t);
        mismatches.add(
            threads.submit(
                () -> {
                  List<String> wrong = new ArrayList<>();
                  for (int i = 0; i < 3_000; i++) {
                    long key = random.nextInt(2 * FILES * ROWS_PER_FILE + 10) - 5;
                    List<String> rows =
                        IcebergReference.sortedCanonical(lookup.lookup(null, List.of(key)), SCHEMA);
                    if (!rows.equals(expected.getOrDefault(key, List.of()))) {
                      wrong.add(key + " -> " + rows);
                    }
                  }
                  return wrong;
                }));
      }
      for (Future<List<String>> thread : mismatches) {
        assertThat(thread.get()).as("keys whose rows differ from Iceberg's").isEmpty();
      }
    } finally {
      threads.shutdownNow();
    }
  }

  private static long id(int file, int row) {
    return 2L * ((long) file * ROWS_PER_FILE + row);
  }

  /** One probe, checked against Iceberg's reader; returns what it cost. */
  private LookupStats probe(PointLookup lookup, long key) {
    LookupStats before = counters.stats();
    List<Record> found = lookup.lookup(null, List.of(key));
    LookupStats cost = counters.stats().minus(before);
    assertThat(IcebergReference.sortedCanonical(found, SCHEMA))
        .as("rows of key %s", key)
        .isEqualTo(
            IcebergReference.rowsWith(
                    table, table.currentSnapshot().snapshotId(), List.of("id"), List.of(key))
                .stream()
                .sorted()
                .toList());
    return cost;
  }
}
