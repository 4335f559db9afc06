package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What a probe reads, by the lookup's counters (their change around one probe), on a table of
 * {@value #FILES} data files with disjoint, sorted id ranges, bloom filters on the id and small row
 * groups (several per file). File {@code f} holds the even ids {@code FIRST_ID + 2 * (f *
 * ROWS_PER_FILE + i)}, so odd ids inside a file's range were never written. Expected rows come from
 * Iceberg's reader.
 */
class PointLookupPruningTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "payload", Types.StringType.get())),
          Set.of(1));
  private static final TableIdentifier ID = TableIdentifier.of("db", "ranges");
  private static final int FILES = 16;
  private static final int ROWS_PER_FILE = 2000;
  private static final long FIRST_ID = 1_000_000;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private final PointLookup.Counters counters = new PointLookup.Counters();
  private LookupCaches.Handle caches;
  private Table table;
  private TableWriter writer;
  private PointLookup lookup;

  @BeforeEach
  void writeSixteenFilesOfDisjointRanges() {
    caches = LookupCaches.acquire();
    table =
        catalog
            .get()
            .buildTable(ID, SCHEMA)
            .withProperty("format-version", "2")
            .withProperty("write.parquet.bloom-filter-enabled.column.id", "true")
            // Sized for a file's keys: without it Parquet gives each row group a 1 MiB filter.
            .withProperty("write.parquet.bloom-filter-ndv.column.id", String.valueOf(ROWS_PER_FILE))
            .withProperty("write.parquet.row-group-size-bytes", "8192")
            .create();
    writer = new TableWriter(table);
    for (int f = 0; f < FILES; f++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < ROWS_PER_FILE; i++) {
        rows.add(row(idAt(f, i), "v1"));
      }
      writer.append(rows);
    }
    lookup = new PointLookup(table, List.of("id"), caches.caches(), counters);
  }

  @AfterEach
  void releaseCaches() {
    caches.close();
  }

  @Test
  void theTableHasSixteenFilesOfSeveralRowGroupsWithBloomFiltersOnTheId() {
    List<DataFile> files = dataFiles();
    assertThat(files).hasSize(FILES);
    for (DataFile file : files) {
      List<BlockMetaData> rowGroups = rowGroups(file);
      assertThat(rowGroups).as("row groups of %s", file.location()).hasSizeGreaterThan(2);
      for (BlockMetaData rowGroup : rowGroups) {
        ColumnChunkMetaData id =
            rowGroup.getColumns().stream()
                .filter(c -> c.getPath().toDotString().equals("id"))
                .findFirst()
                .orElseThrow();
        assertThat(id.getBloomFilterOffset())
            .as("bloom filter of id in %s", file.location())
            .isGreaterThanOrEqualTo(0);
      }
    }
  }

  @Test
  void aKeyBeyondEveryFilesBoundsReadsNoDataFile() {
    lookup.lookup(null, List.of(idAt(3, 7))); // warm: the snapshot's files are planned
    for (long key :
        List.of(
            idAt(FILES - 1, ROWS_PER_FILE - 1) + 2,
            idAt(FILES, 500),
            FIRST_ID - 1,
            -5L,
            Long.MAX_VALUE,
            Long.MIN_VALUE)) {
      LookupStats cost = probe(key, List.of());
      assertThat(cost).as("key %s", key).isEqualTo(new LookupStats(1, 0, 0, 0, 0, 0));
    }
  }

  @Test
  void aKeyInsideOneFilesRangeButNeverWrittenOpensOnlyThatFileAndDecodesNoRow() {
    lookup.lookup(null, List.of(idAt(3, 7)));
    for (int f : List.of(0, 5, FILES - 1)) {
      for (int i : List.of(0, 777, ROWS_PER_FILE - 2)) {
        long key = idAt(f, i) + 1; // odd: between two written ids of file f
        LookupStats cost = probe(key, List.of());
        assertThat(cost.filesRead()).as("files read for key %s", key).isEqualTo(1);
        assertThat(cost.fileOpens()).as("files opened for key %s", key).isLessThanOrEqualTo(1);
        assertThat(cost.rowsDecoded()).as("rows decoded for key %s", key).isZero();
      }
    }
  }

  @Test
  void aHitReadsOneFileAndDecodesAtMostOneRowGroup() {
    lookup.lookup(null, List.of(idAt(3, 7)));
    for (int f : List.of(0, 9, FILES - 1)) {
      DataFile file = fileHolding(idAt(f, 0));
      long largestRowGroup =
          rowGroups(file).stream().mapToLong(BlockMetaData::getRowCount).max().orElseThrow();
      assertThat(largestRowGroup).isLessThan(ROWS_PER_FILE);
      for (int i : rowGroupEdges(file)) {
        long key = idAt(f, i);
        LookupStats cost = probe(key, List.of(canonical(row(key, "v1"))));
        assertThat(cost.filesRead()).as("files read for key %s", key).isEqualTo(1);
        // Zero when an earlier probe decoded the key's pages: they are cached decoded.
        assertThat(cost.rowsDecoded())
            .as("rows decoded for key %s", key)
            .isBetween(0L, largestRowGroup);
      }
    }
  }

  @Test
  void warmProbesCostAtMostOneFileEach() {
    long hit = idAt(7, 1234);
    long miss = hit + 1;
    probe(hit, List.of(canonical(row(hit, "v1"))));
    probe(miss, List.of());
    int probes = 200;
    LookupStats hits = repeat(hit, probes);
    LookupStats misses = repeat(miss, probes);
    System.out.printf("warm hit, per probe: %s%n", perProbe(hits));
    System.out.printf("warm bloom-negative miss, per probe: %s%n", perProbe(misses));
    assertThat(hits.filesRead()).isEqualTo(probes);
    assertThat(hits.fileOpens()).isLessThanOrEqualTo(probes);
    assertThat(misses.filesRead()).isEqualTo(probes);
    assertThat(misses.fileOpens()).isLessThanOrEqualTo(probes);
    assertThat(misses.rowsDecoded()).isZero();
    // A miss skips every row group, so it never reads more than the hit of the same file.
    assertThat(misses.bytesRead()).isLessThanOrEqualTo(hits.bytesRead());
  }

  @Test
  void anUpsertedKeyFindsItsNewRowAndAnOlderSnapshotItsOldOne() {
    long key = idAt(11, 321);
    long before = table.currentSnapshot().snapshotId();
    writer.upsert(List.of(row(key, "v2")));
    PointLookup latest = new PointLookup(table, List.of("id"), caches.caches(), counters);

    assertThat(lookupRows(latest, null, key))
        .containsExactly(canonical(row(key, "v2")))
        .isEqualTo(reference(table.currentSnapshot().snapshotId(), key));
    assertThat(lookupRows(latest, before, key))
        .containsExactly(canonical(row(key, "v1")))
        .isEqualTo(reference(before, key));
    // The neighbours in the same row group are untouched.
    assertThat(lookupRows(latest, null, key + 2)).containsExactly(canonical(row(key + 2, "v1")));
  }

  @Test
  void aKeyDeletedByKeyIsNotFound() {
    long key = idAt(2, 1999);
    writer.deleteKeys(List.of(row(key, null)));
    PointLookup latest = new PointLookup(table, List.of("id"), caches.caches(), counters);

    assertThat(reference(table.currentSnapshot().snapshotId(), key)).isEmpty();
    assertThat(lookupRows(latest, null, key)).isEmpty();
    assertThat(lookupRows(latest, null, key - 2)).containsExactly(canonical(row(key - 2, "v1")));
  }

  @Test
  void aRowDeletedByPositionIsNotFound() {
    int position = 1500; // past the first row groups, so skipped row groups shift nothing
    long key = idAt(4, position);
    DataFile file = fileHolding(key);
    writer.deletePositions(Map.of(file.location(), List.of((long) position)));
    PointLookup latest = new PointLookup(table, List.of("id"), caches.caches(), counters);

    assertThat(reference(table.currentSnapshot().snapshotId(), key)).isEmpty();
    assertThat(lookupRows(latest, null, key)).isEmpty();
    for (long neighbour : List.of(key - 2, key + 2)) {
      assertThat(lookupRows(latest, null, neighbour))
          .containsExactly(canonical(row(neighbour, "v1")))
          .isEqualTo(reference(table.currentSnapshot().snapshotId(), neighbour));
    }
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** Id of row {@code i} of file {@code f}: even, increasing, disjoint ranges per file. */
  private static long idAt(int f, int i) {
    return FIRST_ID + 2L * ((long) f * ROWS_PER_FILE + i);
  }

  private static Record row(long id, String version) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("name", version == null ? null : "name-" + id);
    record.setField("payload", version == null ? null : version + "-" + Long.toHexString(id));
    return record;
  }

  private static String canonical(Record row) {
    return IcebergReference.canonical(row, SCHEMA);
  }

  /**
   * One probe of {@code key} at the table's current snapshot: asserts its rows are {@code expected}
   * and Iceberg's, and returns what it cost.
   */
  private LookupStats probe(long key, List<String> expected) {
    LookupStats before = counters.stats();
    List<Record> found = lookup.lookup(null, List.of(key));
    LookupStats cost = counters.stats().minus(before);
    assertThat(IcebergReference.sortedCanonical(found, SCHEMA))
        .as("rows of key %s", key)
        .isEqualTo(expected)
        .isEqualTo(reference(table.currentSnapshot().snapshotId(), key));
    return cost;
  }

  private LookupStats repeat(long key, int times) {
    LookupStats before = counters.stats();
    for (int i = 0; i < times; i++) {
      lookup.lookup(null, List.of(key));
    }
    return counters.stats().minus(before);
  }

  private static String perProbe(LookupStats total) {
    double n = total.probes();
    return String.format(
        "bytesRead=%.1f readCalls=%.1f fileOpens=%.2f rowsDecoded=%.1f"
            + " filesRead=%.2f (over %d probes)",
        total.bytesRead() / n,
        total.readCalls() / n,
        total.fileOpens() / n,
        total.rowsDecoded() / n,
        total.filesRead() / n,
        total.probes());
  }

  private static List<String> lookupRows(PointLookup lookup, Long snapshotId, long key) {
    return IcebergReference.sortedCanonical(lookup.lookup(snapshotId, List.of(key)), SCHEMA);
  }

  private List<String> reference(long snapshotId, long key) {
    return IcebergReference.rowsWith(table, snapshotId, List.of("id"), List.of(key)).stream()
        .sorted()
        .toList();
  }

  private List<DataFile> dataFiles() {
    List<DataFile> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().includeColumnStats().planFiles()) {
      tasks.forEach(task -> files.add(task.file()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return files;
  }

  /** The one data file whose rows were appended with {@code key}, by the table's metadata. */
  private DataFile fileHolding(long key) {
    List<DataFile> holding = new ArrayList<>();
    for (DataFile file : dataFiles()) {
      long lower =
          (Long)
              org.apache.iceberg.types.Conversions.fromByteBuffer(
                  Types.LongType.get(), file.lowerBounds().get(1));
      long upper =
          (Long)
              org.apache.iceberg.types.Conversions.fromByteBuffer(
                  Types.LongType.get(), file.upperBounds().get(1));
      if (lower <= key && key <= upper) {
        holding.add(file);
      }
    }
    assertThat(holding).as("files whose id bounds hold %s", key).hasSize(1);
    return holding.get(0);
  }

  /** The row groups of a data file, from its Parquet footer. */
  private static List<BlockMetaData> rowGroups(DataFile file) {
    try (ParquetFileReader reader =
        ParquetFileReader.open(
            HadoopInputFile.fromPath(new Path(file.location()), new Configuration()))) {
      return reader.getFooter().getBlocks();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Row indexes at the start and end of each row group of the file, and one inside. */
  private static List<Integer> rowGroupEdges(DataFile file) {
    List<Integer> rows = new ArrayList<>();
    int start = 0;
    for (BlockMetaData rowGroup : rowGroups(file)) {
      int count = (int) rowGroup.getRowCount();
      rows.add(start);
      rows.add(start + count / 2);
      rows.add(start + count - 1);
      start += count;
    }
    assertThat(start).isEqualTo(ROWS_PER_FILE);
    return rows;
  }
}
