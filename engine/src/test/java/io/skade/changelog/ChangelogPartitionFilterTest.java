package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.testing.FullCompaction;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.relocated.com.google.common.hash.Hashing;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A filter that selects partitions prunes files: a window read with it gives exactly the unfiltered
 * window's changes of rows in those partitions, and opens no data file, delete file or manifest
 * that holds only other partitions. Tables here are partitioned by key columns, so a key never
 * changes partition and an update pair is kept or dropped whole. Which partition a row is in is
 * computed here from the Iceberg spec's definition of the transform, not by the reader.
 */
class ChangelogPartitionFilterTest {
  private static final Schema BY_ID = IdRows.SCHEMA;
  private static final Schema BY_REGION =
      new Schema(
          List.of(
              Types.NestedField.required(1, "region", Types.StringType.get()),
              Types.NestedField.required(2, "id", Types.LongType.get()),
              Types.NestedField.optional(3, "name", Types.StringType.get())),
          Set.of(1, 2));
  private static final List<String> REGIONS = List.of("eu", "us", "ap", "af");
  private static final int BUCKETS = 8;
  private static final int SNAPSHOTS = 26;
  private static final int RANDOM_WINDOWS = 4;

  /** The real Hadoop file IO, recording every file it opens (by path). */
  public static final class CountingFileIO extends HadoopFileIO {
    static final Set<String> OPENED = ConcurrentHashMap.newKeySet();

    @Override
    public InputFile newInputFile(String path) {
      OPENED.add(path);
      return super.newInputFile(path);
    }

    @Override
    public InputFile newInputFile(String path, long length) {
      OPENED.add(path);
      return super.newInputFile(path, length);
    }
  }

  /** A filter, and which rows it selects, decided here without the reader. */
  private record Case(Expression filter, Predicate<Record> selects) {}

  @TempDir Path warehouse;
  private SkadeCatalog catalog;

  @BeforeEach
  void open() {
    catalog = new SkadeCatalog();
    catalog.initialize(
        "counting",
        Map.of("warehouse", warehouse.toString(), "io-impl", CountingFileIO.class.getName()));
    catalog.createNamespace(Namespace.of("db"));
  }

  @AfterEach
  void close() throws IOException {
    catalog.close();
  }

  @ParameterizedTest(name = "format v{0}")
  @ValueSource(ints = {2, 3})
  void aBucketFilterGivesTheUnfilteredChangesOfRowsInTheSelectedBuckets(int format)
      throws IOException {
    Table table = new History(catalog, "by_id", format, false, 7L).build();
    assertFilteredEqualsRestricted(
        table,
        List.of(
            new Case(
                Expressions.equal(Expressions.bucket("id", BUCKETS), 3), row -> bucket(row) == 3),
            new Case(
                Expressions.in(Expressions.bucket("id", BUCKETS), 1, 5),
                row -> bucket(row) == 1 || bucket(row) == 5),
            new Case(
                Expressions.or(
                    Expressions.equal(Expressions.bucket("id", BUCKETS), 0),
                    Expressions.equal(Expressions.bucket("ID", BUCKETS), 6)),
                row -> bucket(row) == 0 || bucket(row) == 6),
            new Case(
                Expressions.in("id", 2L, 11L, 17L, 30L),
                row -> Set.of(2L, 11L, 17L, 30L).contains((Long) row.getField("id")))));
  }

  @ParameterizedTest(name = "format v{0}")
  @ValueSource(ints = {2, 3})
  void anIdentityFilterGivesTheUnfilteredChangesOfRowsInTheSelectedRegions(int format)
      throws IOException {
    Table table = new History(catalog, "by_region", format, true, 11L).build();
    assertFilteredEqualsRestricted(
        table,
        List.of(
            new Case(Expressions.equal("region", "eu"), row -> row.getField("region").equals("eu")),
            new Case(
                Expressions.in("region", "us", "ap"),
                row -> Set.of("us", "ap").contains(row.getField("region"))),
            new Case(
                Expressions.or(
                    Expressions.equal("region", "eu"), Expressions.equal("REGION", "af")),
                row -> Set.of("eu", "af").contains(row.getField("region"))),
            new Case(
                Expressions.not(Expressions.equal("region", "eu")),
                row -> !row.getField("region").equals("eu")),
            // Iceberg 1.11 projects this onto identity(region) as region = 'a', which matches no
            // file: the pruning must keep every file instead (apache/iceberg#15502).
            new Case(
                Expressions.equal(Expressions.truncate("region", 1), "a"),
                row -> ((String) row.getField("region")).startsWith("a"))));
  }

  @Test
  void filesOfOtherBucketsAreNotRead() throws IOException {
    Table table = new History(catalog, "by_id", 2, false, 7L).build();
    assertOnlySelectedPartitionsRead(
        table,
        Expressions.in(Expressions.bucket("id", BUCKETS), 1, 5),
        Set.of("id_bucket_8=1", "id_bucket_8=5"),
        false);
  }

  @Test
  void filesAndManifestsOfOtherRegionsAreNotRead() throws IOException {
    Table table = new History(catalog, "by_region", 2, true, 11L).build();
    assertOnlySelectedPartitionsRead(
        table,
        Expressions.or(Expressions.equal("region", "eu"), Expressions.equal("region", "ap")),
        Set.of("region=eu", "region=ap"),
        true);
  }

  @Test
  void theBucketOfTheTestIsTheOneOfTheIcebergSpec() {
    // The spec's example: hash(34L) = 2017239379.
    assertThat(Hashing.murmur3_32_fixed().hashLong(34L).asInt()).isEqualTo(2017239379);
  }

  private static void assertFilteredEqualsRestricted(Table table, List<Case> cases) {
    List<Long> ids = snapshotIds(table);
    List<Long[]> windows = new ArrayList<>();
    windows.add(new Long[] {null, ids.get(ids.size() - 1)});
    Random random = new Random(ids.size());
    for (int w = 0; w < RANDOM_WINDOWS; w++) {
      int from = random.nextInt(ids.size() - 1) - 1; // -1: before the first snapshot
      int to = from + 1 + random.nextInt(ids.size() - from - 1);
      windows.add(new Long[] {from < 0 ? null : ids.get(from), ids.get(to)});
    }
    for (Mode mode : Mode.values()) {
      for (Long[] window : windows) {
        List<ChangeRow> all =
            new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode))
                .read(window[0], window[1]);
        for (Case c : cases) {
          String context =
              mode + " window (" + window[0] + ", " + window[1] + "] with filter " + c.filter();
          List<String> expected =
              all.stream()
                  .filter(change -> c.selects().test(change.row()))
                  .map(change -> render(change, table.schema()))
                  .toList();
          List<String> filtered =
              new ChangelogReader(
                      table, ChangelogOptions.defaults().withMode(mode).withFilter(c.filter()))
                  .read(window[0], window[1]).stream()
                      .map(change -> render(change, table.schema()))
                      .toList();
          assertThat(filtered).as(context).isEqualTo(expected);
          if (window[0] == null && mode == Mode.PER_SNAPSHOT) {
            // The whole history: the filter keeps some changes and drops others.
            assertThat(expected).as(context).isNotEmpty().hasSizeLessThan(all.size());
          }
        }
      }
    }
  }

  /**
   * Reads the whole history under {@code filter} and checks what was opened: data and delete files
   * only of the selected partitions or of an unpartitioned spec; with {@code manifests}, also no
   * manifest all of whose files are of other partitions (of which the history must have some). That
   * holds where each commit writes one partition: a manifest's partition summary is a range of
   * values, so one of buckets 0 and 6 may match bucket 5.
   */
  private static void assertOnlySelectedPartitionsRead(
      Table table, Expression filter, Set<String> selected, boolean manifests) throws IOException {
    Predicate<String> kept = partition -> partition.isEmpty() || selected.contains(partition);
    Map<String, String> partitionOfFile = new HashMap<>();
    Set<String> seen = new HashSet<>();
    Set<String> foreign = new HashSet<>();
    for (Snapshot snapshot : table.snapshots()) {
      for (ManifestFile manifest : snapshot.allManifests(table.io())) {
        if (seen.add(manifest.path())) {
          Set<String> partitions = partitions(table, manifest, partitionOfFile);
          if (partitions != null && partitions.stream().noneMatch(kept)) {
            foreign.add(manifest.path());
          }
        }
      }
    }
    assertThat(partitionOfFile.values())
        .as("the history has files of other partitions")
        .anyMatch(kept.negate());
    if (manifests) {
      assertThat(foreign).as("the history has manifests of other partitions only").isNotEmpty();
    }
    long last = table.currentSnapshot().snapshotId();

    for (Mode mode : Mode.values()) {
      ChangelogReader unfiltered =
          new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode));
      unfiltered.read(null, last);
      CountingFileIO.OPENED.clear();
      ChangelogReader reader =
          new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode).withFilter(filter));
      assertThat(reader.read(null, last)).as(mode + ": changes").isNotEmpty();
      Set<String> opened = Set.copyOf(CountingFileIO.OPENED);

      List<String> files = opened.stream().filter(partitionOfFile::containsKey).toList();
      assertThat(files)
          .as(mode + ": data and delete files opened")
          .isNotEmpty()
          .allMatch(
              path -> kept.test(partitionOfFile.get(path)),
              "is of a selected partition or unpartitioned");
      if (manifests) {
        assertThat(opened).as(mode + ": manifests opened").doesNotContainAnyElementsOf(foreign);
      }
      assertThat(reader.rowsScanned())
          .as(mode + ": rows decoded")
          .isLessThan(unfiltered.rowsScanned());
    }
  }

  /**
   * The partition paths (empty for an unpartitioned spec) of a manifest's live files, recording
   * each file's into {@code partitionOfFile}; null when the manifest also lists removed files,
   * whose partitions its reader does not show.
   */
  private static Set<String> partitions(
      Table table, ManifestFile manifest, Map<String, String> partitionOfFile) throws IOException {
    Set<String> partitions = new HashSet<>();
    if (manifest.content() == ManifestContent.DATA) {
      try (ManifestReader<DataFile> reader =
          ManifestFiles.read(manifest, table.io(), table.specs())) {
        reader.forEach(file -> partitions.add(record(table, file, partitionOfFile)));
      }
    } else {
      try (ManifestReader<DeleteFile> reader =
          ManifestFiles.readDeleteManifest(manifest, table.io(), table.specs())) {
        reader.forEach(file -> partitions.add(record(table, file, partitionOfFile)));
      }
    }
    return manifest.hasDeletedFiles() ? null : partitions;
  }

  private static String record(
      Table table, ContentFile<?> file, Map<String, String> partitionOfFile) {
    String partition = table.specs().get(file.specId()).partitionToPath(file.partition());
    partitionOfFile.put(file.location(), partition);
    return partition;
  }

  /**
   * The bucket of a row's id by the Iceberg spec: a 32-bit Murmur3 hash (x86 variant, seed 0) of
   * the long's 8 little-endian bytes, as non-negative, modulo the bucket count.
   */
  private static int bucket(Record row) {
    long id = (Long) row.getField("id");
    return (Hashing.murmur3_32_fixed().hashLong(id).asInt() & Integer.MAX_VALUE) % BUCKETS;
  }

  private static List<Long> snapshotIds(Table table) {
    List<Long> ids = new ArrayList<>();
    table.snapshots().forEach(s -> ids.add(s.snapshotId()));
    return ids;
  }

  private static String render(ChangeRow change, Schema schema) {
    StringBuilder out =
        new StringBuilder(change.type().symbol()).append(" @").append(change.snapshotId());
    for (Types.NestedField field : schema.columns()) {
      out.append(' ').append(field.name()).append('=').append(change.row().getField(field.name()));
    }
    return out.toString();
  }

  /**
   * A seeded history of one primary-key table: appends, upserts (equality deletes), key deletes,
   * position deletes, overwrites and compactions. The table by id starts unpartitioned and is
   * bucketed by id after a few snapshots, so equality deletes of the unpartitioned spec (which
   * apply to every partition) live beside bucketed files until a compaction rewrites them. On the
   * table by region, each commit writes to one region.
   */
  private static final class History {
    private final Table table;
    private final TableWriter writer;
    private final Random random;
    private final boolean byRegion;
    private long nextId;

    History(SkadeCatalog catalog, String name, int format, boolean byRegion, long seed) {
      this.byRegion = byRegion;
      this.random = new Random(seed);
      Schema schema = byRegion ? BY_REGION : BY_ID;
      PartitionSpec spec =
          byRegion
              ? PartitionSpec.builderFor(schema).identity("region").build()
              : PartitionSpec.unpartitioned();
      this.table =
          catalog
              .buildTable(TableIdentifier.of("db", name), schema)
              .withPartitionSpec(spec)
              .withProperty("format-version", String.valueOf(format))
              .create();
      this.writer = new TableWriter(table);
    }

    Table build() throws IOException {
      for (int i = 0; i < SNAPSHOTS; i++) {
        table.refresh();
        String region = REGIONS.get(random.nextInt(REGIONS.size()));
        int op = random.nextInt(100);
        if (i == 4 && !byRegion) {
          table.updateSpec().addField(Expressions.bucket("id", BUCKETS)).commit();
          writer.append(newRows(region, 8));
        } else if (i < 3 || op < 25) {
          writer.append(newRows(region, 3 + random.nextInt(8)));
        } else if (op < 50) {
          List<Record> rows = new ArrayList<>();
          for (Record old : pick(region, 1 + random.nextInt(4))) {
            rows.add(row(region, (Long) old.getField("id")));
          }
          rows.addAll(newRows(region, random.nextInt(2)));
          writer.upsert(rows);
        } else if (op < 60) {
          writer.deleteKeys(pick(region, 1 + random.nextInt(2)));
        } else if (op < 75) {
          deleteSomePositions();
        } else if (op < 85) {
          overwrite(region);
        } else if (op < 92) {
          compact();
        } else {
          writer.append(newRows(region, 2));
        }
      }
      table.refresh();
      return table;
    }

    private List<Record> newRows(String region, int count) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        rows.add(row(region, nextId++));
      }
      return rows;
    }

    private Record row(String region, long id) {
      GenericRecord row = GenericRecord.create(table.schema());
      if (byRegion) {
        row.setField("region", region);
      }
      row.setField("id", id);
      row.setField("name", "n" + random.nextInt(100));
      return row;
    }

    /** Some live rows: of {@code region} on the table by region, of any bucket otherwise. */
    private List<Record> pick(String region, int count) throws IOException {
      List<Record> live = new ArrayList<>();
      for (Record row : FullCompaction.liveRows(table)) {
        if (!byRegion || row.getField("region").equals(region)) {
          live.add(row);
        }
      }
      live.sort((a, b) -> Long.compare((Long) a.getField("id"), (Long) b.getField("id")));
      Collections.shuffle(live, random);
      return live.subList(0, Math.min(count, live.size()));
    }

    /** One or two positions of one live data file (one partition). */
    private void deleteSomePositions() throws IOException {
      List<DataFile> files = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        tasks.forEach(task -> files.add(task.file()));
      }
      if (files.isEmpty()) {
        writer.append(newRows(REGIONS.get(0), 2));
        return;
      }
      files.sort((a, b) -> a.location().compareTo(b.location()));
      DataFile file = files.get(random.nextInt(files.size()));
      Set<Long> positions = new HashSet<>();
      for (int i = 0; i < 1 + random.nextInt(2); i++) {
        positions.add((long) random.nextInt((int) file.recordCount()));
      }
      writer.deletePositions(Map.of(file.location(), positions));
    }

    /** A region replaced with fresh rows; on the table by id, some keys deleted by filter. */
    private void overwrite(String region) throws IOException {
      if (byRegion) {
        writer.overwrite(
            Expressions.equal("region", region), newRows(region, 1 + random.nextInt(3)));
      } else {
        List<Long> ids = pick(region, 3).stream().map(r -> (Long) r.getField("id")).toList();
        if (ids.isEmpty()) {
          writer.append(newRows(region, 2));
          return;
        }
        writer.overwrite(Expressions.in("id", ids.toArray()), List.of());
      }
    }

    /** Every data and delete file rewritten into files of the live rows, under the current spec. */
    private void compact() throws IOException {
      if (!FullCompaction.rewrite(table, writer)) {
        writer.append(newRows(REGIONS.get(0), 2));
      }
    }
  }
}
