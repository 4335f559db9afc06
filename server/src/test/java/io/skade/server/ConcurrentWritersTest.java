package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SnapshotUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Writers that only contend for a table all commit, in this JVM and through the server: with the
 * catalog's default commit retries, twenty writers (sixteen on a {@link SkadeCatalog} sharing the
 * server's store, four over the Iceberg REST protocol) appending to two tables lose no commit, and
 * every append is in its table once, as one snapshot, named once by a gapless commit log. A change
 * that adds no snapshot (properties, schema) made on a table that moved under it lands on the
 * current table on its one attempt (no client retries): in this JVM the catalog's commit re-applies
 * it, and through the server it is applied on the table as the server finds it. A schema change
 * whose base another schema change has moved is refused whole, both ways.
 *
 * <p>One server for the class. The contention test runs seeds 1 and 2, or as many as {@code
 * -Dskade.contention.seeds=N}; a failure names its seed, which picks each writer's tables.
 */
class ConcurrentWritersTest {
  private static final Namespace DB = Namespace.of("contention");
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  private static final int TABLES = 2;
  private static final int EMBEDDED_WRITERS = 16;
  private static final int REST_WRITERS = 4;
  private static final int APPENDS_PER_WRITER = 50;
  private static final long WRITERS_TIMEOUT_S = 240;

  @TempDir static Path root;
  private static ServerFixture fixture;

  /** The server's own catalog. */
  private static SkadeCatalog served;

  /** Another catalog of this JVM on the server's directory: it shares the server's store. */
  private static SkadeCatalog embedded;

  @BeforeAll
  static void start() throws Exception {
    fixture = new ServerFixture(root);
    served = fixture.server.catalog();
    embedded =
        (SkadeCatalog)
            CatalogUtil.loadCatalog(
                SkadeCatalog.class.getName(),
                "embedded",
                Map.of(CatalogProperties.WAREHOUSE_LOCATION, root.resolve("warehouse").toString()),
                null);
    served.createNamespace(DB);
  }

  @AfterAll
  static void stop() throws Exception {
    if (embedded != null) {
      embedded.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  static Stream<Long> seeds() {
    return LongStream.rangeClosed(1, Long.getLong("skade.contention.seeds", 2)).boxed();
  }

  /** A commit that threw: which writer, which of its appends, on which table. */
  private record Failure(int writer, int append, TableIdentifier table, Throwable error) {}

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void writersThatOnlyContendAllSucceedEmbeddedAndThroughTheServer(long seed) throws Exception {
    List<TableIdentifier> tables =
        IntStream.range(0, TABLES)
            .mapToObj(i -> TableIdentifier.of(DB, "contended_s" + seed + "_t" + i))
            .toList();
    // One through the server, one in this JVM: both with the catalog's defaults, nothing set.
    fixture.rest().createTable(tables.get(0), SCHEMA);
    for (TableIdentifier id : tables.subList(1, TABLES)) {
      embedded.createTable(id, SCHEMA);
    }
    for (TableIdentifier id : tables) {
      assertThat(served.loadTable(id).properties())
          .as("seed %d: %s's properties", seed, id)
          .containsAllEntriesOf(SkadeCatalog.TABLE_DEFAULTS);
    }

    long seqBefore = served.commitSeq();
    int writers = EMBEDDED_WRITERS + REST_WRITERS;
    CountDownLatch go = new CountDownLatch(1);
    Queue<Failure> failures = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    List<Future<Map<TableIdentifier, List<String>>>> running = new ArrayList<>();
    long elapsedMs;
    try {
      for (int w = 0; w < writers; w++) {
        int writer = w;
        Catalog catalog = writer < EMBEDDED_WRITERS ? embedded : fixture.rest();
        running.add(pool.submit(() -> appendAtRandom(seed, writer, catalog, tables, go, failures)));
      }
      long started = System.nanoTime();
      go.countDown();
      pool.shutdown();
      assertThat(pool.awaitTermination(WRITERS_TIMEOUT_S, TimeUnit.SECONDS))
          .as("seed %d: all writers done within %d s", seed, WRITERS_TIMEOUT_S)
          .isTrue();
      elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    } finally {
      pool.shutdownNow();
    }
    int total = writers * APPENDS_PER_WRITER;
    System.out.printf(
        "seed %d: %d appends by %d writers (%d embedded, %d over REST) to %d tables in %d ms%n",
        seed, total, writers, EMBEDDED_WRITERS, REST_WRITERS, TABLES, elapsedMs);

    Map<TableIdentifier, List<String>> appended = new HashMap<>();
    for (int w = 0; w < writers; w++) {
      try {
        running
            .get(w)
            .get()
            .forEach(
                (id, paths) -> appended.computeIfAbsent(id, k -> new ArrayList<>()).addAll(paths));
      } catch (ExecutionException e) {
        failures.add(new Failure(w, -1, null, e.getCause()));
      }
    }
    if (!failures.isEmpty()) {
      Failure first = failures.peek();
      fail(
          String.format(
              "seed %d: %d of %d commits threw; the first: writer %d (%s), append %d to %s: %s",
              seed,
              failures.size(),
              total,
              first.writer(),
              first.writer() < EMBEDDED_WRITERS ? "embedded" : "REST",
              first.append(),
              first.table(),
              first.error()),
          first.error());
    }

    Map<TableIdentifier, List<Long>> snapshotIds = new HashMap<>();
    for (TableIdentifier id : tables) {
      Table table = served.loadTable(id);
      List<String> expected = appended.getOrDefault(id, List.of());
      List<Snapshot> ancestry =
          StreamSupport.stream(SnapshotUtil.currentAncestors(table).spliterator(), false).toList();
      assertThat(ancestry)
          .as("seed %d: %s's snapshots (the current one's ancestry)", seed, id)
          .hasSize(expected.size());
      assertThat(dataFiles(table))
          .as("seed %d: %s's data files, each appended once", seed, id)
          .containsExactlyInAnyOrderElementsOf(expected);
      snapshotIds.put(id, ancestry.stream().map(Snapshot::snapshotId).toList());
    }

    List<CommitEvent> log = new ArrayList<>();
    served.commitsSince(seqBefore).forEach(log::add);
    assertThat(log.stream().map(CommitEvent::commitSeq).toList())
        .as("seed %d: the commit log after %d, gapless, one commit per append", seed, seqBefore)
        .isEqualTo(LongStream.rangeClosed(seqBefore + 1, seqBefore + total).boxed().toList());
    Map<String, List<Long>> logged =
        log.stream()
            .collect(
                Collectors.groupingBy(
                    CommitEvent::tableKey,
                    Collectors.flatMapping(
                        event -> event.addedSnapshotIds().stream(), Collectors.toList())));
    assertThat(logged.keySet())
        .as("seed %d: the tables the commit log names", seed)
        .containsExactlyInAnyOrderElementsOf(tables.stream().map(served::commitTableKey).toList());
    for (TableIdentifier id : tables) {
      assertThat(logged.get(served.commitTableKey(id)))
          .as("seed %d: the snapshots the commit log names for %s, each once", seed, id)
          .containsExactlyInAnyOrderElementsOf(snapshotIds.get(id));
    }
  }

  /**
   * One writer: loads its own tables from {@code catalog}, waits for {@code go}, then appends
   * {@link #APPENDS_PER_WRITER} files, each to a table its seeded random picks. Commits that throw
   * go to {@code failures}; the answer is the files appended, by table.
   */
  private static Map<TableIdentifier, List<String>> appendAtRandom(
      long seed,
      int writer,
      Catalog catalog,
      List<TableIdentifier> tables,
      CountDownLatch go,
      Queue<Failure> failures)
      throws InterruptedException {
    Map<TableIdentifier, Table> own = new HashMap<>();
    tables.forEach(id -> own.put(id, catalog.loadTable(id)));
    Random random = new Random(seed * 1000 + writer);
    Map<TableIdentifier, List<String>> appended = new HashMap<>();
    go.await();
    for (int append = 0; append < APPENDS_PER_WRITER; append++) {
      TableIdentifier id = tables.get(random.nextInt(tables.size()));
      String path = "/data/s" + seed + "/w" + writer + "/a" + append + ".parquet";
      try {
        own.get(id).newAppend().appendFile(dataFile(path)).commit();
        appended.computeIfAbsent(id, k -> new ArrayList<>()).add(path);
      } catch (RuntimeException e) {
        failures.add(new Failure(writer, append, id, e));
      }
    }
    return appended;
  }

  @Test
  void propertyAndSchemaUpdatesThroughTheServerRacingAppendsAreReappliedNotRefused()
      throws Exception {
    TableIdentifier id = TableIdentifier.of(DB, "updates_racing_appends");
    // No client retries: a refused update fails its one attempt.
    embedded.buildTable(id, SCHEMA).withProperty(TableProperties.COMMIT_NUM_RETRIES, "0").create();
    int properties = 40;
    int columns = 10;

    AtomicBoolean updatesDone = new AtomicBoolean();
    Queue<String> appended = new ConcurrentLinkedQueue<>();
    AtomicInteger lostAppends = new AtomicInteger();
    Queue<String> failedUpdates = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> appenders = new ArrayList<>();
      for (int a = 0; a < 2; a++) {
        int appender = a;
        appenders.add(
            pool.submit(
                () -> {
                  Table table = embedded.loadTable(id);
                  for (int n = 0; !updatesDone.get(); n++) {
                    String path = "/data/racing/a" + appender + "/" + n + ".parquet";
                    while (true) {
                      try {
                        table.newAppend().appendFile(dataFile(path)).commit();
                        appended.add(path);
                        break;
                      } catch (CommitFailedException e) {
                        // an append lost a race (it is not under test here): made again
                        lostAppends.incrementAndGet();
                        if (updatesDone.get()) {
                          break;
                        }
                      }
                    }
                  }
                }));
      }
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> appended.size() >= 2); // the appenders are under way

      Future<?> propertyUpdates =
          pool.submit(
              () -> {
                Table table = fixture.rest().loadTable(id);
                for (int i = 0; i < properties; i++) {
                  try {
                    table.updateProperties().set("p" + i, "v" + i).commit();
                  } catch (RuntimeException e) {
                    failedUpdates.add("property p" + i + ": " + e);
                  }
                }
              });
      Future<?> schemaUpdates =
          pool.submit(
              () -> {
                Table table = fixture.rest().loadTable(id);
                for (int i = 0; i < columns; i++) {
                  try {
                    table.updateSchema().addColumn("c" + i, Types.IntegerType.get()).commit();
                  } catch (RuntimeException e) {
                    failedUpdates.add("column c" + i + ": " + e);
                  }
                }
              });
      propertyUpdates.get(WRITERS_TIMEOUT_S, TimeUnit.SECONDS);
      schemaUpdates.get(WRITERS_TIMEOUT_S, TimeUnit.SECONDS);
      updatesDone.set(true);
      for (Future<?> appender : appenders) {
        appender.get(WRITERS_TIMEOUT_S, TimeUnit.SECONDS);
      }
    } finally {
      updatesDone.set(true);
      pool.shutdownNow();
    }
    System.out.printf(
        "updates racing appends: %d appends made, %d attempts lost%n",
        appended.size(), lostAppends.get());

    assertThat(failedUpdates).as("updates refused (each made once, without retries)").isEmpty();
    Table table = served.loadTable(id);
    Map<String, String> expectedProperties = new HashMap<>();
    IntStream.range(0, properties).forEach(i -> expectedProperties.put("p" + i, "v" + i));
    assertThat(table.properties()).containsAllEntriesOf(expectedProperties);
    assertThat(table.schema().columns())
        .extracting(Types.NestedField::name)
        .containsExactlyElementsOf(
            Stream.concat(Stream.of("id"), IntStream.range(0, columns).mapToObj(i -> "c" + i))
                .toList());
    assertThat(dataFiles(table))
        .as("the table's data files: every append that returned, once")
        .containsExactlyInAnyOrderElementsOf(appended);
  }

  @Test
  void aStaleRestUpdateIsReappliedOnTheCurrentTable() {
    TableIdentifier id = TableIdentifier.of(DB, "stale_rest_update");
    embedded.buildTable(id, SCHEMA).withProperty(TableProperties.COMMIT_NUM_RETRIES, "0").create();
    staleUpdates(
        id, fixture.rest().loadTable(id), embedded.loadTable(id), fixture.rest().loadTable(id));
  }

  @Test
  void aStaleEmbeddedUpdateIsReappliedOnTheCurrentTable() {
    // The same in this JVM: the table operations, never refreshed, hand the stale base to the
    // catalog's own commit, which re-applies the change or refuses it.
    TableIdentifier id = TableIdentifier.of(DB, "stale_embedded_update");
    embedded.buildTable(id, SCHEMA).withProperty(TableProperties.COMMIT_NUM_RETRIES, "0").create();
    staleUpdates(id, embedded.loadTable(id), embedded.loadTable(id), embedded.loadTable(id));
  }

  /**
   * Through {@code stale}'s operations: a property change made on a base that an append (by {@code
   * appender}) has moved lands on the current table, beside the append; then of two column
   * additions made on one base, the first (by {@code columnAdder}) lands and the second is refused,
   * leaving nothing of it.
   */
  private static void staleUpdates(
      TableIdentifier id, Table stale, Table appender, Table columnAdder) {
    TableOperations ops = ((HasTableOperations) stale).operations();
    TableMetadata base = ops.current();
    appender.newAppend().appendFile(dataFile("/data/" + id.name() + "/a.parquet")).commit();
    long append = served.loadTable(id).currentSnapshot().snapshotId();

    ops.commit(base, TableMetadata.buildFrom(base).setProperties(Map.of("k", "v")).build());

    Table reloaded = served.loadTable(id);
    assertThat(reloaded.currentSnapshot().snapshotId())
        .as("the current snapshot: the append")
        .isEqualTo(append);
    assertThat(reloaded.properties()).containsEntry("k", "v");

    TableMetadata schemaBase = ops.refresh();
    columnAdder.refresh();
    columnAdder.updateSchema().addColumn("a", Types.IntegerType.get()).commit();
    List<Types.NestedField> withB = new ArrayList<>(schemaBase.schema().columns());
    withB.add(
        Types.NestedField.optional(schemaBase.lastColumnId() + 1, "b", Types.IntegerType.get()));
    TableMetadata bOnTheSameBase =
        TableMetadata.buildFrom(schemaBase)
            .setCurrentSchema(new Schema(withB), schemaBase.lastColumnId() + 1)
            .build();
    assertThatThrownBy(() -> ops.commit(schemaBase, bOnTheSameBase))
        .isInstanceOf(CommitFailedException.class)
        .hasMessageContaining("last assigned field id changed");

    Table after = served.loadTable(id);
    assertThat(after.schema().columns())
        .extracting(Types.NestedField::name)
        .containsExactly("id", "a");
    assertThat(after.schemas().values())
        .as("the table's schemas: none of the refused change")
        .allSatisfy(schema -> assertThat(schema.findField("b")).isNull());
    assertThat(after.currentSnapshot().snapshotId()).isEqualTo(append);
    assertThat(after.properties()).containsEntry("k", "v");
  }

  /** A data file entry; the file itself need not exist for a catalog-level test. */
  private static DataFile dataFile(String path) {
    return DataFiles.builder(PartitionSpec.unpartitioned())
        .withPath(path)
        .withFileSizeInBytes(10)
        .withRecordCount(1)
        .withFormat(FileFormat.PARQUET)
        .build();
  }

  /** The paths of the data files of {@code table}'s current snapshot, as many times as listed. */
  private static List<String> dataFiles(Table table) {
    List<String> paths = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> paths.add(task.file().location()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return paths;
  }
}
