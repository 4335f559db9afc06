package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.maintenance.MaintainedTable;
import io.skade.scan.FileSlice;
import io.skade.testing.FullCompaction;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.actions.BinPackRewriteFilePlanner;
import org.apache.iceberg.actions.RewriteDataFilesCommitManager;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.actions.SizeBasedFileRewritePlanner;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.relocated.com.google.common.collect.Iterables;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The changelog law as a property test: over seeded random histories (appends, upserts, key
 * deletes, position deletes, overwrites, an added column, a new partitioning, whole-table
 * compactions, and compactions and snapshot expiries by Iceberg's maintenance machinery) on log and
 * primary-key tables, for random windows, applying the emitted changes to the rows at {@code from}
 * gives the rows at {@code to}, and no change comes from a {@code replace} snapshot. A window from
 * before the first snapshot of an expired history is refused, never read short. Reference states
 * come from Iceberg's own reader at each snapshot. Every removed row must be present when removed,
 * so before-images are checked to be the exact old rows.
 *
 * <p>CI runs {@value #QUICK_HISTORIES} histories; the full run of 200 is {@code mvn -pl connector
 * -am test -Dtest=ChangelogLawTest -Dskade.law.histories=200
 * -Dsurefire.failIfNoSpecifiedTests=false}. A failure names its seed; replay it with {@code
 * -Dskade.law.seed=<seed>}.
 */
class ChangelogLawTest {
  static final int QUICK_HISTORIES = 8;
  private static final int SNAPSHOTS = 30;
  private static final int WINDOWS_PER_HISTORY = 12;
  private static final int SLOTS = 3;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  static Stream<Arguments> histories() {
    String replay = System.getProperty("skade.law.seed");
    if (replay != null) {
      long seed = Long.parseLong(replay);
      return Stream.of(Arguments.of(seed, seed % 2 == 0));
    }
    int count = Integer.getInteger("skade.law.histories", QUICK_HISTORIES);
    long base = Long.getLong("skade.law.base", 20261129L);
    return IntStream.range(0, count).mapToObj(i -> Arguments.of(base + i, (base + i) % 2 == 0));
  }

  @ParameterizedTest(name = "seed {0}, primary key {1}")
  @MethodSource("histories")
  void applyingTheChangesOfAWindowToItsStartGivesItsEnd(long seed, boolean primaryKey)
      throws Exception {
    checkWindows(catalog.get(), seed, primaryKey);
  }

  /**
   * Builds the history of {@code seed} in {@code catalog} (as table {@code db.t}) and checks the
   * law on its random windows, in every mode.
   */
  static void checkWindows(SkadeCatalog catalog, long seed, boolean primaryKey) throws Exception {
    History history = new History(catalog, seed, primaryKey);
    history.build(SNAPSHOTS);
    Table table = history.table;
    table.refresh();
    List<Long> ids = new ArrayList<>();
    for (Snapshot s : table.snapshots()) {
      ids.add(s.snapshotId());
    }
    Map<Long, Map<String, Integer>> states = new HashMap<>();
    for (long id : ids) {
      states.put(id, state(table, id));
    }
    Random windows = new Random(seed * 31);
    for (int w = 0; w < WINDOWS_PER_HISTORY; w++) {
      int a = windows.nextInt(ids.size() + 1) - 1; // -1: before the first snapshot
      int b = a + 1 + windows.nextInt(ids.size() - a - 1 + 1);
      if (b >= ids.size()) {
        b = ids.size() - 1;
      }
      if (b <= a) {
        continue;
      }
      Long from = a < 0 ? null : ids.get(a);
      long to = ids.get(b);
      for (Mode mode : Mode.values()) {
        String context =
            "seed "
                + seed
                + " (replay with -Dskade.law.seed="
                + seed
                + "), "
                + mode
                + " window ("
                + from
                + ", "
                + to
                + "]";
        ChangelogReader reader =
            new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode));
        if (from == null && history.expired) {
          assertThatThrownBy(() -> reader.read(null, to))
              .as(context)
              .isInstanceOf(MissingHistoryException.class);
          continue;
        }
        List<ChangeRow> changes = reader.read(from, to);
        // (A collapsed window names its last snapshot on every change, whatever it is.)
        assertThat(mode == Mode.COLLAPSED ? List.<ChangeRow>of() : changes)
            .as("%s: a replace snapshot changes no row", context)
            .noneMatch(
                change ->
                    DataOperations.REPLACE.equals(table.snapshot(change.snapshotId()).operation()));
        Map<String, Integer> rows = new HashMap<>(from == null ? Map.of() : states.get(from));
        int lastIndex = -1;
        for (int c = 0; c < changes.size(); c++) {
          ChangeRow change = changes.get(c);
          if (mode == Mode.PER_SNAPSHOT) {
            // Changes come grouped by snapshot, in commit order, each inside the window...
            int index = ids.indexOf(change.snapshotId());
            assertThat(index)
                .as("%s: snapshot of a change", context)
                .isGreaterThan(a)
                .isLessThanOrEqualTo(b)
                .isGreaterThanOrEqualTo(lastIndex);
            lastIndex = index;
          }
          apply(rows, change, table.schema(), context);
          boolean groupEnds =
              c + 1 == changes.size() || changes.get(c + 1).snapshotId() != change.snapshotId();
          if (mode == Mode.PER_SNAPSHOT && groupEnds) {
            // ...and after each snapshot's changes the rows are the table at that snapshot.
            assertThat(new TreeMap<>(rows))
                .as("%s: rows after snapshot %s", context, change.snapshotId())
                .isEqualTo(new TreeMap<>(states.get(change.snapshotId())));
          }
        }
        assertThat(new TreeMap<>(rows)).as(context).isEqualTo(new TreeMap<>(states.get(to)));
        if (mode == Mode.COLLAPSED) {
          assertCollapsedShape(changes, table.schema(), primaryKey, context);
        }
        assertUpdatePairsAreAdjacent(changes, context);
      }
      if (from != null) {
        checkBetween(table, states, to, from, seed); // a rollback to an ancestor
        checkBetween(table, states, from, to, seed); // and its undoing
      }
    }
  }

  /**
   * The changes between the rows at {@code from} and those at {@code to}, in one step whatever lies
   * between, applied strictly to the rows at {@code from}, give the rows at {@code to}, in
   * collapsed shape, each carrying {@code to}.
   */
  private static void checkBetween(
      Table table, Map<Long, Map<String, Integer>> states, long from, long to, long seed)
      throws IOException {
    String context =
        "seed "
            + seed
            + " (replay with -Dskade.law.seed="
            + seed
            + "), between "
            + from
            + " and "
            + to;
    List<ChangeRow> changes = new ArrayList<>();
    try (CloseableIterator<ChangeRow> between =
        new ChangelogReader(table, ChangelogOptions.defaults()).changesBetween(from, to)) {
      between.forEachRemaining(changes::add);
    }
    Map<String, Integer> rows = new HashMap<>(states.get(from));
    for (ChangeRow change : changes) {
      assertThat(change.snapshotId()).as(context).isEqualTo(to);
      apply(rows, change, table.schema(), context);
    }
    assertThat(new TreeMap<>(rows)).as(context).isEqualTo(new TreeMap<>(states.get(to)));
    assertCollapsedShape(
        changes, table.schema(), !table.schema().identifierFieldIds().isEmpty(), context);
    assertUpdatePairsAreAdjacent(changes, context);
  }

  /**
   * Slices of a window (the ordering units of a parallel read) each obey the law on their own:
   * applying one slice's changes strictly (a removal must meet its row) to the rows its files held
   * at {@code from} gives the rows its files hold at {@code to}, at every snapshot in per-snapshot
   * mode, and compactions or overwrites that move rows between slices show as a delete in one and
   * an insert in the other. Reference states: Iceberg's reader, each row placed in a slice by the
   * data file Iceberg read it from.
   */
  @ParameterizedTest(name = "seed {0}, primary key {1}")
  @MethodSource("sliceHistories")
  void eachSliceOfAWindowObeysTheLawOnItsOwn(long seed, boolean primaryKey) throws Exception {
    checkSlices(catalog.get(), seed, primaryKey);
  }

  /**
   * Builds the history of {@code seed} in {@code catalog} (as table {@code db.t}) and checks the
   * law on each slice of its random windows.
   */
  static void checkSlices(SkadeCatalog catalog, long seed, boolean primaryKey) throws Exception {
    History history = new History(catalog, seed, primaryKey);
    history.build(SNAPSHOTS);
    Table table = history.table;
    table.refresh();
    List<Long> ids = new ArrayList<>();
    table.snapshots().forEach(s -> ids.add(s.snapshotId()));
    List<FileSlice> slices = new ArrayList<>();
    for (FileSlice.Unit unit : List.of(FileSlice.Unit.PARTITION, FileSlice.Unit.FILE)) {
      for (int slot = 0; slot < SLOTS; slot++) {
        slices.add(new FileSlice(unit, SLOTS, slot));
      }
    }
    Map<Long, Map<FileSlice, Map<String, Integer>>> states = new HashMap<>();
    for (long id : ids) {
      states.put(id, slicedState(table, id, slices));
    }
    Random windows = new Random(seed * 37);
    for (int w = 0; w < WINDOWS_PER_HISTORY / 2; w++) {
      int a = windows.nextInt(ids.size()) - 1; // -1: before the first snapshot
      int b = Math.min(ids.size() - 1, a + 1 + windows.nextInt(ids.size()));
      Long from = a < 0 ? null : ids.get(a);
      long to = ids.get(b);
      if (from == null && history.expired) {
        continue; // the history before it is gone (the window test checks the refusal)
      }
      for (Mode mode : Mode.values()) {
        for (FileSlice slice : slices) {
          String context =
              "seed "
                  + seed
                  + " (replay with -Dskade.law.seed="
                  + seed
                  + "), "
                  + mode
                  + " window ("
                  + from
                  + ", "
                  + to
                  + "], "
                  + slice;
          List<ChangeRow> changes =
              new ChangelogReader(
                      table, ChangelogOptions.defaults().withMode(mode).withSlice(slice))
                  .read(from, to);
          Map<String, Integer> rows =
              new HashMap<>(from == null ? Map.of() : states.get(from).get(slice));
          for (int c = 0; c < changes.size(); c++) {
            ChangeRow change = changes.get(c);
            apply(rows, change, table.schema(), context);
            boolean groupEnds =
                c + 1 == changes.size() || changes.get(c + 1).snapshotId() != change.snapshotId();
            if (mode == Mode.PER_SNAPSHOT && groupEnds) {
              assertThat(new TreeMap<>(rows))
                  .as("%s: rows after snapshot %s", context, change.snapshotId())
                  .isEqualTo(new TreeMap<>(states.get(change.snapshotId()).get(slice)));
            }
          }
          assertThat(new TreeMap<>(rows))
              .as(context)
              .isEqualTo(new TreeMap<>(states.get(to).get(slice)));
        }
      }
    }
  }

  static Stream<Arguments> sliceHistories() {
    String replay = System.getProperty("skade.law.seed");
    if (replay != null) {
      return histories();
    }
    int count = Integer.getInteger("skade.law.histories", QUICK_HISTORIES) / 2;
    long base = Long.getLong("skade.law.base", 20261201L);
    return IntStream.range(0, count).mapToObj(i -> Arguments.of(base + i, (base + i) % 2 == 0));
  }

  /**
   * The table's rows at a snapshot by Iceberg's reader, per slice: each row in the slices that keep
   * the data file it was read from.
   */
  private static Map<FileSlice, Map<String, Integer>> slicedState(
      Table table, long snapshotId, List<FileSlice> slices) throws IOException {
    Map<String, DataFile> files = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(snapshotId).planFiles()) {
      tasks.forEach(task -> files.put(task.file().location(), task.file()));
    }
    Map<FileSlice, Map<String, Integer>> states = new HashMap<>();
    slices.forEach(slice -> states.put(slice, new HashMap<>()));
    Schema withFile = TypeUtil.join(table.schema(), new Schema(MetadataColumns.FILE_PATH));
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).project(withFile).build()) {
      for (Record record : records) {
        DataFile file = files.get(record.getField(MetadataColumns.FILE_PATH.name()).toString());
        String row = canonical(record, table.schema());
        for (FileSlice slice : slices) {
          if (slice.keeps(file, table.specs())) {
            states.get(slice).merge(row, 1, Integer::sum);
          }
        }
      }
    }
    return states;
  }

  /** Applies {@code change} to the multiset {@code rows}: a removal must meet its row. */
  private static void apply(
      Map<String, Integer> rows, ChangeRow change, Schema schema, String context) {
    String row = canonical(change.row(), schema);
    if (change.type().removes()) {
      Integer count = rows.get(row);
      assertThat(count)
          .as("%s: %s of a row not present: %s", context, change.type(), row)
          .isNotNull();
      if (count == 1) {
        rows.remove(row);
      } else {
        rows.put(row, count - 1);
      }
    } else {
      rows.merge(row, 1, Integer::sum);
    }
  }

  private static void assertCollapsedShape(
      List<ChangeRow> changes, Schema schema, boolean primaryKey, String context) {
    if (primaryKey) {
      Map<Object, List<ChangeType>> byKey = new HashMap<>();
      for (ChangeRow change : changes) {
        byKey
            .computeIfAbsent(change.row().getField("id"), k -> new ArrayList<>())
            .add(change.type());
      }
      byKey.forEach(
          (key, types) ->
              assertThat(types)
                  .as("%s: changes of key %s", context, key)
                  .isIn(
                      List.of(ChangeType.INSERT),
                      List.of(ChangeType.DELETE),
                      List.of(ChangeType.UPDATE_BEFORE, ChangeType.UPDATE_AFTER)));
      for (int i = 0; i < changes.size(); i++) {
        if (changes.get(i).type() == ChangeType.UPDATE_BEFORE) {
          assertThat(canonical(changes.get(i).row(), schema))
              .as("%s: an unchanged row is no change", context)
              .isNotEqualTo(canonical(changes.get(i + 1).row(), schema));
        }
      }
    } else {
      Set<String> inserted = new HashSet<>();
      Set<String> deleted = new HashSet<>();
      for (ChangeRow change : changes) {
        (change.type().removes() ? deleted : inserted).add(canonical(change.row(), schema));
      }
      inserted.retainAll(deleted);
      assertThat(inserted).as("%s: rows both inserted and deleted cancel", context).isEmpty();
    }
  }

  private static void assertUpdatePairsAreAdjacent(List<ChangeRow> changes, String context) {
    for (int i = 0; i < changes.size(); i++) {
      if (changes.get(i).type() == ChangeType.UPDATE_BEFORE) {
        assertThat(changes.get(i + 1).type()).as(context).isEqualTo(ChangeType.UPDATE_AFTER);
        assertThat(changes.get(i + 1).row().getField("id"))
            .as(context)
            .isEqualTo(changes.get(i).row().getField("id"));
      }
      if (changes.get(i).type() == ChangeType.UPDATE_AFTER) {
        assertThat(changes.get(i - 1).type()).as(context).isEqualTo(ChangeType.UPDATE_BEFORE);
      }
    }
  }

  /** The table's rows at a snapshot, by Iceberg's own reader, in the table's current schema. */
  /**
   * A data file's place in an order that replays: its sequence numbers, rows and size (its path
   * holds a random id).
   */
  private static String fileOrder(DataFile file) {
    return String.format(
        "%012d/%012d/%09d/%012d",
        file.dataSequenceNumber(),
        file.fileSequenceNumber(),
        file.recordCount(),
        file.fileSizeInBytes());
  }

  private static Map<String, Integer> state(Table table, long snapshotId) throws IOException {
    Map<String, Integer> rows = new HashMap<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).project(table.schema()).build()) {
      for (Record record : records) {
        rows.merge(canonical(record, table.schema()), 1, Integer::sum);
      }
    }
    return rows;
  }

  private static String canonical(Record row, Schema schema) {
    StringBuilder out = new StringBuilder();
    for (Types.NestedField field : schema.columns()) {
      Object value = row.getField(field.name());
      out.append(field.name()).append('=').append(value == null ? "∅" : value).append(';');
    }
    return out.toString();
  }

  /** A seeded random history of one table. */
  private static final class History {
    private static final Schema PK = IdRows.REGIONAL;
    private static final Schema LOG = IdRows.REGIONAL_LOG;
    private static final List<String> REGIONS = List.of("eu", "us", "ap");

    final Table table;
    private final Random random;
    private final boolean primaryKey;
    private final TableWriter writer;
    private final Set<Long> keys = new HashSet<>();
    private boolean extraColumn;
    private long nextId;

    /** Whether some history was expired, so the windows from before it cannot be read. */
    boolean expired;

    History(SkadeCatalog catalog, long seed, boolean primaryKey) {
      this.random = new Random(seed);
      this.primaryKey = primaryKey;
      Schema schema = primaryKey ? PK : LOG;
      PartitionSpec spec =
          primaryKey
              ? (random.nextBoolean()
                  ? PartitionSpec.builderFor(schema).bucket("id", 3).build()
                  : PartitionSpec.unpartitioned())
              : PartitionSpec.builderFor(schema).identity("region").build();
      this.table =
          catalog
              .buildTable(TableIdentifier.of("db", "t"), schema)
              .withPartitionSpec(spec)
              .withProperty("format-version", String.valueOf(2 + random.nextInt(2)))
              .create();
      this.writer = new TableWriter(table);
    }

    void build(int snapshots) throws IOException {
      int addColumnAt = 5 + random.nextInt(20); // every history adds a column somewhere
      int newSpecAt = 5 + random.nextInt(20); // and changes its partitioning
      for (int i = 0; i < snapshots; i++) {
        table.refresh();
        int op = random.nextInt(100);
        if (i == addColumnAt) {
          table.updateSchema().addColumn("extra", Types.StringType.get()).commit();
          extraColumn = true;
          writer.append(newRows(2)); // the schema change itself is a metadata-only commit
        } else if (i == newSpecAt) {
          repartition();
          writer.append(newRows(2));
        } else if (i == 0 || table.currentSnapshot() == null || op < 25) {
          writer.append(newRows(1 + random.nextInt(6)));
        } else if (op < 45 && primaryKey) {
          writer.upsert(upsertRows());
        } else if (op < 55 && primaryKey && !keys.isEmpty()) {
          List<Record> doomed = pickKeys(1 + random.nextInt(3));
          writer.deleteKeys(doomed);
          doomed.forEach(r -> keys.remove((Long) r.getField("id")));
        } else if (op < 70) {
          deleteSomePositions();
        } else if (op < 78) {
          overwrite();
        } else if (op < 82) {
          compact();
        } else if (op < 92) {
          icebergCompaction();
        } else if (op < 95 && i > 5) {
          expire();
        } else {
          writer.append(newRows(1 + random.nextInt(4)));
        }
      }
    }

    /**
     * A new partition spec; older files keep theirs. Key tables move to another bucketing of the
     * key (keyed writes then reach both specs), log tables add a bucket of the id to the region.
     */
    private void repartition() {
      if (primaryKey) {
        var update = table.updateSpec();
        if (table.spec().isPartitioned()) {
          update.removeField("id_bucket");
        }
        update.addField("id_bucket_5", Expressions.bucket("id", 5)).commit();
      } else {
        // Region stays a partition field: the history's overwrites replace whole regions.
        table.updateSpec().addField(Expressions.bucket("id", 2)).commit();
      }
    }

    private List<Record> newRows(int count) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        long id = primaryKey ? nextId++ : random.nextInt(8); // log tables repeat values too
        rows.add(row(id));
        keys.add(id);
      }
      return rows;
    }

    private List<Record> upsertRows() {
      List<Record> rows = new ArrayList<>();
      for (Record key : pickKeys(1 + random.nextInt(4))) {
        rows.add(row((Long) key.getField("id")));
      }
      if (random.nextBoolean()) {
        rows.addAll(newRows(1));
      }
      return rows;
    }

    private List<Record> pickKeys(int count) {
      List<Long> all = new ArrayList<>(keys);
      java.util.Collections.sort(all);
      List<Record> picked = new ArrayList<>();
      for (int i = 0; i < count && !all.isEmpty(); i++) {
        picked.add(row(all.remove(random.nextInt(all.size()))));
      }
      return picked;
    }

    private Record row(long id) {
      GenericRecord row = GenericRecord.create(table.schema());
      row.setField("id", id);
      row.setField("name", "n" + random.nextInt(5));
      row.setField("region", REGIONS.get(random.nextInt(REGIONS.size())));
      if (extraColumn) {
        row.setField("extra", random.nextBoolean() ? null : "x" + random.nextInt(3));
      }
      return row;
    }

    private void deleteSomePositions() throws IOException {
      List<DataFile> files = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        tasks.forEach(task -> files.add(task.file()));
      }
      if (files.isEmpty()) {
        writer.append(newRows(2));
        return;
      }
      files.sort(java.util.Comparator.comparing(DataFile::location));
      // One or two files per commit: on v3 their vectors then share one Puffin file.
      Map<String, List<Long>> positions = new HashMap<>();
      for (int f = 0; f < 1 + random.nextInt(2); f++) {
        DataFile file = files.get(random.nextInt(files.size()));
        List<Long> inFile = positions.computeIfAbsent(file.location(), l -> new ArrayList<>());
        for (int i = 0; i < 1 + random.nextInt(2); i++) {
          inFile.add((long) random.nextInt((int) file.recordCount()));
        }
      }
      writer.deletePositions(positions);
      if (primaryKey) {
        keys.clear();
        FullCompaction.liveRows(table).forEach(r -> keys.add((Long) r.getField("id")));
      }
    }

    private void overwrite() throws IOException {
      if (primaryKey) {
        // Replace the whole table with fresh rows (a partition-aligned overwrite).
        keys.clear();
        writer.overwrite(Expressions.alwaysTrue(), newRows(1 + random.nextInt(4)));
      } else {
        String region = REGIONS.get(random.nextInt(REGIONS.size()));
        List<Record> rows = newRows(1 + random.nextInt(3));
        rows.forEach(r -> r.setField("region", region));
        writer.overwrite(Expressions.equal("region", region), rows);
      }
    }

    /** A compaction: every data and delete file rewritten into files of the live rows. */
    private void compact() throws IOException {
      if (!FullCompaction.rewrite(table, writer)) {
        writer.append(newRows(2));
      }
    }

    /**
     * A compaction as Iceberg's maintenance makes it: Iceberg's planner picks file groups (small
     * files, files with deletes; small groups, so a partition is often rewritten only in part), a
     * random share of them is rewritten with their live rows, and Iceberg's commit manager commits
     * them at the starting sequence number through {@link MaintainedTable}, which removes the
     * delete files left dangling.
     */
    private void icebergCompaction() throws IOException {
      Snapshot start = table.currentSnapshot();
      Table maintained = MaintainedTable.of(table, List::of);
      BinPackRewriteFilePlanner planner = new BinPackRewriteFilePlanner(maintained);
      planner.init(
          Map.of(
              BinPackRewriteFilePlanner.DELETE_FILE_THRESHOLD,
              String.valueOf(1 + random.nextInt(2)),
              SizeBasedFileRewritePlanner.MIN_INPUT_FILES,
              String.valueOf(1 + random.nextInt(3)),
              SizeBasedFileRewritePlanner.MAX_FILE_GROUP_SIZE_BYTES,
              String.valueOf(1500 + random.nextInt(4000))));
      // Iceberg plans groups in an order of its hash sets, which varies between runs: they are
      // drawn in an order of their own, so that a seed replays the same history.
      List<RewriteFileGroup> planned = new ArrayList<>();
      try (CloseableIterable<RewriteFileGroup> groups = planner.plan().groups()) {
        groups.forEach(planned::add);
      }
      planned.sort(
          Comparator.comparing(
              group ->
                  String.valueOf(group.info().partition())
                      + inReplayOrder(group.rewrittenFiles()).stream()
                          .map(ChangelogLawTest::fileOrder)
                          .toList()));
      Set<RewriteFileGroup> chosen = new HashSet<>();
      for (RewriteFileGroup group : planned) {
        if (random.nextInt(10) < 6) {
          chosen.add(group);
        }
      }
      if (chosen.isEmpty()) {
        writer.append(newRows(2));
        return;
      }
      Map<String, List<Record>> liveRowsByFile = liveRowsByFile(start.snapshotId());
      for (RewriteFileGroup group : chosen) {
        List<Record> rows = new ArrayList<>();
        inReplayOrder(group.rewrittenFiles())
            .forEach(file -> rows.addAll(liveRowsByFile.getOrDefault(file.location(), List.of())));
        group.setOutputFiles(new HashSet<>(writer.writeDataFiles(rows)));
      }
      new RewriteDataFilesCommitManager(maintained, start.snapshotId(), true)
          .commitFileGroups(chosen);
    }

    /** Data files in an order that is the same in every run of a seed (paths are not). */
    private static List<DataFile> inReplayOrder(Set<DataFile> files) {
      return files.stream().sorted(Comparator.comparing(ChangelogLawTest::fileOrder)).toList();
    }

    /**
     * Iceberg's expiry of every snapshot older than a random one, through {@link MaintainedTable}
     * as maintenance expires (no consumer holds any), expired files deleted.
     */
    private void expire() {
      List<Snapshot> live = new ArrayList<>();
      table.snapshots().forEach(live::add);
      Snapshot oldestKept = live.get(random.nextInt(live.size()));
      MaintainedTable.of(table, List::of)
          .expireSnapshots()
          .expireOlderThan(oldestKept.timestampMillis())
          .retainLast(1)
          .commit();
      table.refresh();
      expired |= Iterables.size(table.snapshots()) < live.size();
    }

    /** The live rows at a snapshot by Iceberg's reader, by the data file they are read from. */
    private Map<String, List<Record>> liveRowsByFile(long snapshotId) throws IOException {
      Map<String, List<Record>> rows = new HashMap<>();
      Schema withFile = TypeUtil.join(table.schema(), new Schema(MetadataColumns.FILE_PATH));
      try (CloseableIterable<Record> records =
          IcebergGenerics.read(table).useSnapshot(snapshotId).project(withFile).build()) {
        for (Record record : records) {
          Record row = GenericRecord.create(table.schema());
          table.schema().columns().forEach(c -> row.setField(c.name(), record.getField(c.name())));
          rows.computeIfAbsent(
                  record.getField(MetadataColumns.FILE_PATH.name()).toString(),
                  f -> new ArrayList<>())
              .add(row);
        }
      }
      return rows;
    }
  }
}
