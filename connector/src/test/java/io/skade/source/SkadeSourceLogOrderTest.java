package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.testing.ChangeTap;
import io.skade.testing.ChangeTap.Received;
import io.skade.testing.IcebergWorkers;
import io.skade.testing.IdRows;
import io.skade.testing.LocalCluster;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.util.ContentFileUtil;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * LOG tables (no identifier fields) read per snapshot by {@link SkadeSource} at parallelism 1, 2
 * and 4, from startup {@code full} and {@code earliest}, while a seeded random history is written
 * to them, part of it before the job starts and the rest while it runs: appends (with identical
 * duplicate rows, in one file and across files), position deletes, overwrites by a filter, whole
 * data files deleted, and compactions ({@code replace} snapshots rewriting some data files of a
 * partition into one file of their live rows). One job reads two such tables: one unpartitioned on
 * format v2 (position delete files), one partitioned by {@code bucket(id, 4)} on format v3
 * (deletion vectors).
 *
 * <p>Each change is tagged with the source subtask (reader) that emitted it, and all go to one
 * downstream task. Checked: (a) each reader's own changes, applied strictly to a multiset of rows,
 * never fail (a {@code -D} meets an equal row that same reader inserted before it); (b) all
 * changes, in the order the one task received them, applied strictly, never fail; (c) the rows they
 * leave equal Iceberg's own read of the end snapshot ({@link IcebergGenerics}).
 *
 * <p>Seeds derive from one base seed, printed with each case; replay with {@code
 * -Dskade.logorder.seed=<base seed>}. A larger run (more rounds of every case, longer histories):
 *
 * <pre>{@code
 * mvn -B -pl connector -am -Dtest=SkadeSourceLogOrderTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dskade.logorder.rounds=10 -Dskade.logorder.commits=200 test
 * }</pre>
 */
class SkadeSourceLogOrderTest {
  private static final Schema SCHEMA = IdRows.log("v");
  private static final long BASE_SEED = Long.getLong("skade.logorder.seed", System.nanoTime());

  /** How many times every case runs, each with its own seed. */
  private static final int ROUNDS = Integer.getInteger("skade.logorder.rounds", 1);

  /** Commits per case, over both tables; a third of them before the job starts. */
  private static final int COMMITS = Integer.getInteger("skade.logorder.commits", 45);

  /** Longer than any commit takes, even on a loaded machine. */
  private static final long STUCK_NANOS = TimeUnit.SECONDS.toNanos(30);

  @RegisterExtension static final LocalCluster cluster = new LocalCluster(4);

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  static Stream<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (int round = 0; round < ROUNDS; round++) {
      for (int parallelism : new int[] {1, 2, 4}) {
        for (StartupMode startup : new StartupMode[] {StartupMode.FULL, StartupMode.EARLIEST}) {
          cases.add(Arguments.of(parallelism, startup, round));
        }
      }
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "parallelism {0}, startup {1}, round {2}")
  @MethodSource("cases")
  @Timeout(240)
  void everyDeleteComesFromTheReaderThatInsertedItsRowAndAfterIt(
      int parallelism, StartupMode startup, int round) throws Exception {
    long seed = BASE_SEED + 1000L * round + 10L * parallelism + startup.ordinal();
    String where =
        "seed "
            + seed
            + " (base seed "
            + BASE_SEED
            + ", replay with"
            + " -Dskade.logorder.seed="
            + BASE_SEED
            + "), parallelism "
            + parallelism
            + ", startup "
            + startup.value();
    System.out.println("SkadeSourceLogOrderTest " + where);
    java.util.Random random = new java.util.Random(seed);
    List<LogHistory> tables =
        List.of(
            new LogHistory(create("log", PartitionSpec.unpartitioned(), 2), seed * 31 + 1),
            new LogHistory(
                create("log_parts", PartitionSpec.builderFor(SCHEMA).bucket("id", 4).build(), 3),
                seed * 31 + 2));
    int before = COMMITS / 3;
    awaitWrites(
        CompletableFuture.runAsync(
            () -> {
              for (int i = 0; i < before; i++) {
                tables.get(random.nextInt(tables.size())).step();
              }
            }),
        tables,
        where);
    for (LogHistory history : tables) {
      history.table.refresh();
      System.out.println(
          "SkadeSourceLogOrderTest "
              + where
              + ": "
              + history.name
              + " before the"
              + " job: "
              + (history.table.currentSnapshot() == null
                  ? "no snapshot"
                  : "snapshot "
                      + history.table.currentSnapshot().snapshotId()
                      + " ("
                      + history.table.currentSnapshot().operation()
                      + ")"));
    }
    List<Received> received = new ArrayList<>();
    Map<String, Map<String, Integer>> expected;
    boolean complete;
    try (ChangeTap tap = new ChangeTap()) {
      StreamExecutionEnvironment env = LocalCluster.environment(parallelism);
      DataStream<String> all = null;
      for (LogHistory history : tables) {
        SkadeSource<String> source =
            SkadeSource.builder()
                .catalogProperties(catalog.properties())
                .table("db." + history.name)
                .startupMode(startup)
                .batchRows(8)
                .deserializer(new ChangeTap.Lines(history.name))
                .build();
        DataStream<String> tagged =
            tap.tagged(
                env.fromSource(source, WatermarkStrategy.noWatermarks(), history.name)
                    .uid("source-" + history.name),
                "reader-of-" + history.name);
        all = all == null ? tagged : all.union(tagged);
      }
      tap.sinkInto(all, "one-task");
      JobID job = cluster.submit(env, "log-order", null);
      try {
        await()
            .atMost(Duration.ofSeconds(120))
            .pollInSameThread()
            .until(() -> take(tap, job, received) >= 0 && cluster.allTasksRunning(job));
        // The rest of the history is written while the job runs.
        CompletableFuture<Void> rest =
            CompletableFuture.runAsync(
                () -> {
                  for (int i = before; i < COMMITS; i++) {
                    tables.get(random.nextInt(tables.size())).step();
                  }
                });
        awaitWrites(rest, tables, where);
        expected = new TreeMap<>();
        for (LogHistory history : tables) {
          Map<String, Integer> rows = icebergRows(history.table);
          if (!rows.isEmpty()) { // as net() leaves out a table without rows
            expected.put(history.name, rows);
          }
        }
        complete = awaitRows(tap, job, received, expected);
      } finally {
        cluster.cancel(job);
      }
      received.addAll(tap.drain().stream().map(Received::parse).toList());
    }
    System.out.println(
        "SkadeSourceLogOrderTest "
            + where
            + ": "
            + received.size()
            + " changes; readers per table "
            + received.stream()
                .collect(
                    Collectors.groupingBy(
                        Received::table,
                        TreeMap::new,
                        Collectors.mapping(
                            Received::reader, Collectors.toCollection(TreeSet::new)))));
    assertThat(
            firstStrictFailure(
                received, r -> r.table() + " of reader " + r.reader(), "that reader"))
        .as("%s: (a) each reader's changes applied strictly", where)
        .isNull();
    assertThat(firstStrictFailure(received, Received::table, "any reader"))
        .as("%s: (b) all changes, in the order one task received them, applied strictly", where)
        .isNull();
    assertThat(net(received))
        .as(
            "%s: (c) the rows the changes leave (complete: %s) equal Iceberg's read of the end"
                + " snapshot",
            where, complete)
        .isEqualTo(expected);
  }

  private Table create(String name, PartitionSpec spec, int formatVersion) {
    return catalog
        .get()
        .buildTable(TableIdentifier.of("db", name), SCHEMA)
        .withPartitionSpec(spec)
        .withProperty("format-version", String.valueOf(formatVersion))
        .create();
  }

  /**
   * Waits for the history's writer; if it makes no commit for a long time, fails naming what
   * Iceberg's worker pool, which writes every commit's manifests, is doing.
   */
  private static void awaitWrites(
      CompletableFuture<Void> writes, List<LogHistory> tables, String where) throws Exception {
    long start = System.nanoTime();
    while (true) {
      try {
        writes.get(1, TimeUnit.SECONDS);
        return;
      } catch (TimeoutException e) {
        long last = Math.max(start, tables.stream().mapToLong(h -> h.lastStep).max().orElse(0));
        if (System.nanoTime() - last > STUCK_NANOS) {
          throw new AssertionError(
              where
                  + ": the history's writer made no commit in "
                  + TimeUnit.NANOSECONDS.toSeconds(STUCK_NANOS)
                  + " s; Iceberg's worker pool,"
                  + " which writes every commit's manifests:\n"
                  + IcebergWorkers.stacks(),
              e);
        }
      }
    }
  }

  /** Moves what the tap received into {@code received}; how many; fails if the job did. */
  private static int take(ChangeTap tap, JobID job, List<Received> received) throws Exception {
    cluster.requireNotFailed(job);
    List<String> records = tap.drain();
    records.forEach(record -> received.add(Received.parse(record)));
    return records.size();
  }

  /**
   * Waits until the changes received leave exactly {@code expected} and nothing more comes for a
   * while; false if that never happened (the assertions then say what differs).
   */
  private static boolean awaitRows(
      ChangeTap tap,
      JobID job,
      List<Received> received,
      Map<String, Map<String, Integer>> expected) {
    try {
      await()
          .atMost(Duration.ofSeconds(120))
          .during(Duration.ofMillis(400))
          .pollInterval(Duration.ofMillis(50))
          .pollInSameThread()
          .until(() -> take(tap, job, received) >= 0 && net(received).equals(expected));
      return true;
    } catch (ConditionTimeoutException e) {
      return false;
    }
  }

  /** Per table, the count of each row the changes leave (inserts less deletes), zeros left out. */
  private static Map<String, Map<String, Integer>> net(List<Received> changes) {
    Map<String, Map<String, Integer>> rows = new TreeMap<>();
    for (Received change : changes) {
      rows.computeIfAbsent(change.table(), t -> new TreeMap<>())
          .merge(change.row(), change.inserts() ? 1 : -1, Integer::sum);
    }
    rows.values().forEach(counts -> counts.values().removeIf(n -> n == 0));
    rows.values().removeIf(Map::isEmpty);
    return rows;
  }

  /** The count of each row of {@code table}, as Iceberg's generic reader reads it. */
  private static Map<String, Integer> icebergRows(Table table) throws IOException {
    table.refresh();
    Map<String, Integer> rows = new TreeMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> rows.merge(r.getField("id") + " " + r.getField("v"), 1, Integer::sum));
    }
    return rows;
  }

  /**
   * Applies {@code changes} in order, strictly, to one multiset of rows per group: an insert adds
   * its row, a delete must find an equal row there and removes it. Describes the first delete that
   * finds none, with every change of that row; null when all apply.
   */
  static String firstStrictFailure(
      List<Received> changes, Function<Received, String> group, String inserter) {
    Map<String, Map<String, Integer>> rows = new HashMap<>();
    for (int i = 0; i < changes.size(); i++) {
      Received change = changes.get(i);
      Map<String, Integer> counts = rows.computeIfAbsent(group.apply(change), g -> new HashMap<>());
      if (change.inserts()) {
        counts.merge(change.row(), 1, Integer::sum);
      } else if (counts.getOrDefault(change.row(), 0) > 0) {
        counts.merge(change.row(), -1, Integer::sum);
      } else {
        List<String> ofRow = new ArrayList<>();
        for (int j = 0; j < changes.size() && ofRow.size() < 40; j++) {
          Received other = changes.get(j);
          if (other.table().equals(change.table()) && other.row().equals(change.row())) {
            ofRow.add("#" + j + " " + other);
          }
        }
        return "change #"
            + i
            + " ("
            + change
            + ") deletes a row that "
            + inserter
            + " had not"
            + " inserted (and not deleted) before it; the changes of that row, in the order"
            + " received (at most 40): "
            + ofRow;
      }
    }
    return null;
  }

  /**
   * A LOG table {@code (id, v)} and its seeded random history, one commit per step. Every choice is
   * made from the table's live files and rows as Iceberg plans and reads them, in an order that
   * does not depend on file names (which are random), so a seed replays the same history.
   */
  private static final class LogHistory {
    final String name;
    final Table table;
    private final TableWriter writer;
    private final java.util.Random random;

    /** When the last step committed (System.nanoTime). */
    volatile long lastStep = System.nanoTime();

    LogHistory(Table table, long seed) {
      this.name = table.name().substring(table.name().lastIndexOf('.') + 1);
      this.table = table;
      this.writer = new TableWriter(table);
      this.random = new java.util.Random(seed);
    }

    /** One commit of a random kind (an append when the table has no live row). */
    void step() {
      try {
        table.refresh();
        List<FileScanTask> files = liveFiles();
        List<LiveRow> rows = liveRows(files);
        int op = random.nextInt(100);
        if (rows.isEmpty() || op < 28) {
          writer.append(newRows(1 + random.nextInt(6)));
        } else if (op < 38) {
          writer.append(copies(rows));
        } else if (op < 56) {
          deletePositions(rows);
        } else if (op < 68) {
          overwrite();
        } else if (op < 78) {
          table.newDelete().deleteFile(files.get(random.nextInt(files.size())).file()).commit();
        } else {
          compact(files, rows);
        }
        lastStep = System.nanoTime();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** Rows of few distinct values, so identical rows are common. */
    private List<Record> newRows(int count) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        rows.add(row(random.nextInt(6), random.nextBoolean() ? "a" : "b"));
      }
      return rows;
    }

    /** Copies of some live rows: duplicates of rows in other files. */
    private List<Record> copies(List<LiveRow> rows) {
      List<Record> copies = new ArrayList<>();
      for (int i = 1 + random.nextInt(3); i > 0; i--) {
        LiveRow live = rows.get(random.nextInt(rows.size()));
        copies.add(row(live.id, live.v));
      }
      return copies;
    }

    private void deletePositions(List<LiveRow> rows) {
      Map<String, Set<Long>> positions = new LinkedHashMap<>();
      for (int i = 1 + random.nextInt(3); i > 0; i--) {
        LiveRow live = rows.get(random.nextInt(rows.size()));
        positions.computeIfAbsent(live.file, f -> new TreeSet<>()).add(live.pos);
      }
      writer.deletePositions(positions);
    }

    private void overwrite() {
      Expression filter =
          switch (random.nextInt(3)) {
            case 0 -> Expressions.equal("id", (long) random.nextInt(6));
            case 1 -> Expressions.lessThan("id", (long) random.nextInt(6));
            default -> Expressions.equal("v", random.nextBoolean() ? "a" : "b");
          };
      writer.overwrite(filter, newRows(random.nextInt(4)));
    }

    /**
     * Rewrites some data files of one partition (with the deletes scoped to them) into one file of
     * their live rows: a {@code replace} snapshot, which changes no row of the table.
     */
    private void compact(List<FileScanTask> files, List<LiveRow> rows) {
      Map<String, List<FileScanTask>> byPartition = new TreeMap<>();
      files.forEach(
          task ->
              byPartition
                  .computeIfAbsent(task.file().partition().toString(), p -> new ArrayList<>())
                  .add(task));
      List<List<FileScanTask>> candidates =
          byPartition.values().stream()
              .filter(group -> group.size() > 1 || !group.get(0).deletes().isEmpty())
              .toList();
      if (candidates.isEmpty()) {
        writer.append(newRows(1 + random.nextInt(3)));
        return;
      }
      List<FileScanTask> group = new ArrayList<>(candidates.get(random.nextInt(candidates.size())));
      while (group.size() > 2 && random.nextBoolean()) {
        group.remove(random.nextInt(group.size()));
      }
      Set<String> paths = new HashSet<>();
      Set<DataFile> oldFiles = new HashSet<>();
      Set<DeleteFile> oldDeletes = new HashSet<>();
      group.forEach(
          task -> {
            paths.add(task.file().location());
            oldFiles.add(task.file());
          });
      group.forEach(
          task ->
              task.deletes().stream()
                  .filter(d -> paths.contains(ContentFileUtil.referencedDataFileLocation(d)))
                  .forEach(oldDeletes::add));
      List<Record> kept =
          rows.stream().filter(r -> paths.contains(r.file)).map(r -> row(r.id, r.v)).toList();
      long base = table.currentSnapshot().snapshotId();
      Set<DataFile> newFiles = new HashSet<>(writer.writeDataFiles(kept));
      table
          .newRewrite()
          .validateFromSnapshot(base)
          .rewriteFiles(oldFiles, oldDeletes, newFiles, Set.of())
          .commit();
    }

    /** The live data files, in an order fixed by the history (not by the random file names). */
    private List<FileScanTask> liveFiles() throws IOException {
      List<FileScanTask> files = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
        tasks.forEach(files::add);
      }
      files.sort(
          Comparator.comparingLong((FileScanTask t) -> t.file().dataSequenceNumber())
              .thenComparing(t -> t.file().partition().toString())
              .thenComparingLong(t -> t.file().recordCount())
              .thenComparing(t -> t.file().location()));
      return files;
    }

    /** The live rows with their file and position, as Iceberg's generic reader reads them. */
    private List<LiveRow> liveRows(List<FileScanTask> files) throws IOException {
      Map<String, Integer> order = new HashMap<>();
      files.forEach(task -> order.put(task.file().location(), order.size()));
      Schema projection =
          TypeUtil.join(
              table.schema(), new Schema(MetadataColumns.FILE_PATH, MetadataColumns.ROW_POSITION));
      List<LiveRow> rows = new ArrayList<>();
      if (table.currentSnapshot() == null) {
        return rows;
      }
      try (CloseableIterable<Record> records =
          IcebergGenerics.read(table).project(projection).build()) {
        for (Record r : records) {
          rows.add(
              new LiveRow(
                  r.getField(MetadataColumns.FILE_PATH.name()).toString(),
                  (Long) r.getField(MetadataColumns.ROW_POSITION.name()),
                  (Long) r.getField("id"),
                  (String) r.getField("v")));
        }
      }
      rows.sort(
          Comparator.comparingInt((LiveRow r) -> order.get(r.file)).thenComparingLong(r -> r.pos));
      return rows;
    }

    private static Record row(long id, String v) {
      return IdRows.row(SCHEMA, id, v);
    }
  }

  /** A live row of a data file, at its position. */
  private record LiveRow(String file, long pos, long id, String v) {}
}
