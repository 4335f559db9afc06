package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.SharedCatalogs;
import io.skade.write.TableWriter;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.runtime.typeutils.ExternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Differential test of SQL scans and CDC reads with generated {@code WHERE} predicates, projections
 * and metadata columns: on every read path, what skade returns (with whatever projection and
 * filters it accepts pushed into it), applied as a changelog, equals Flink's own evaluation of the
 * same query over the table's rows at the end snapshot as Iceberg's reader ({@link
 * IcebergGenerics}) reads them, handed to Flink as a stream of rows of the exact column types: a
 * table that takes no pushdown.
 *
 * <p>Two tables hold a column of every type skade reads (BOOLEAN, INT, BIGINT, FLOAT, DOUBLE,
 * DECIMAL, STRING, DATE, TIME, TIMESTAMP(6), TIMESTAMP_LTZ(6), BYTES), NULLs included: a
 * primary-key table and a LOG table (no key, partitioned, equal rows repeated). Their histories mix
 * engine appends, upserts (equality deletes), key deletes and overwrites with SQL's pushed-down
 * {@code DELETE ... WHERE} (position deletes, dropped files) and an {@code UPDATE} job, so windows
 * carry merge-on-read deletes.
 *
 * <p>The read paths: batch; streaming and bounded, startup {@code full} and {@code earliest},
 * {@code per-snapshot} and {@code collapsed}, full and (with the key) {@code key-only}
 * before-images, where the planner adds a ChangelogNormalize. Each table has its generated queries
 * (default 20), run on every path of the table in one Flink job per path; their columns sit in
 * slots whose order (so the order of the columns asked of the source) and whose metadata columns
 * differ from path to path. A query's changes are applied strictly (an insert must meet no row
 * under its key, a retraction exactly the row it retracts, or with key-only before-images a delete
 * its key; without a key a retraction must meet an equal row) and the final multiset compared.
 * Metadata columns are checked against the table's snapshots and the catalog's commits: a change
 * type naming the row kind, a snapshot of the table, a commit_seq of the table's commit of that
 * snapshot (or, where a window's last commit is reported, a later commit of the table), the
 * snapshot's commit time, commit_seq never decreasing for one key.
 *
 * <p>The predicates combine {@code = <> < <= > >= IN, NOT IN, BETWEEN, IS [NOT] NULL, LIKE} with
 * {@code AND}, {@code OR} and {@code NOT}, literals on either side and in several spellings, over
 * every column; each table's queries use every (operator, type) pair (the generator draws the pairs
 * not used yet first), so every pair meets every path. A query names the binary column in one atom
 * at most: Calcite folds two into a {@code SEARCH} of points, which Flink never finds TRUE on a
 * binary value (in a batch {@code SELECT} too), so Flink's evaluation and skade's would differ by
 * Flink's own plan.
 *
 * <p>Flink 2.1's planner can loop forever on some filters once it has put them into CNF for
 * pushdown (its SimplifyFilterConditionRule rewriting a comparison back and forth; seed 1 has one):
 * planning a statement is stopped after 30 s and the statement left out and reported.
 *
 * <p>The run is seeded; the seed is printed and named in every failure. Replay a run, run more
 * queries per table, or run only the paths whose name contains a text (as in the test's display
 * names, e.g. {@code "pk table, streaming"}):
 *
 * <pre>
 * mvn -B -q -pl table-factory -am -Dtest=SqlScanDifferentialTest \
 *     -Dsurefire.failIfNoSpecifiedTests=false -Dskade.scandiff.seed=SEED \
 *     -Dskade.scandiff.queries=100 -Dskade.scandiff.paths="log table" test
 * </pre>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SqlScanDifferentialTest {
  private static final String SEED_PROPERTY = "skade.scandiff.seed";
  private static final String QUERIES_PROPERTY = "skade.scandiff.queries";
  private static final String PATHS_PROPERTY = "skade.scandiff.paths";
  private static final int DEFAULT_QUERIES = 8;
  private static final int TAGS_PER_TABLE = 1_000_000;

  /** How long one statement may take to plan; planning takes at most seconds. */
  private static final Duration PLANNING_LIMIT = Duration.ofSeconds(30);

  /** A session time zone with an offset, so TIMESTAMP_LTZ literals are not UTC by accident. */
  private static final ZoneId SESSION_ZONE = ZoneId.of("Asia/Kolkata");

  private static final String DATABASE = "default_database";

  /** The column types of the tables, with their values (as Flink's external classes). */
  enum Kind {
    BOOLEAN("BOOLEAN", DataTypes.BOOLEAN()),
    INT("INT", DataTypes.INT()),
    BIGINT("BIGINT", DataTypes.BIGINT()),
    FLOAT("FLOAT", DataTypes.FLOAT()),
    DOUBLE("DOUBLE", DataTypes.DOUBLE()),
    DECIMAL("DECIMAL(10, 2)", DataTypes.DECIMAL(10, 2)),
    STRING("STRING", DataTypes.STRING()),
    DATE("DATE", DataTypes.DATE()),
    TIME("TIME", DataTypes.TIME()),
    TIMESTAMP("TIMESTAMP(6)", DataTypes.TIMESTAMP(6)),
    TIMESTAMP_LTZ("TIMESTAMP_LTZ(6)", DataTypes.TIMESTAMP_LTZ(6)),
    BYTES("BYTES", DataTypes.BYTES());

    final String sql;
    final DataType type;

    Kind(String sql, DataType type) {
      this.sql = sql;
      this.type = type;
    }
  }

  record Column(String name, Kind kind) {}

  /** The physical columns of both tables; {@code id} is the primary-key table's key. */
  static final List<Column> COLUMNS =
      List.of(
          new Column("id", Kind.INT),
          new Column("c_bool", Kind.BOOLEAN),
          new Column("c_int", Kind.INT),
          new Column("c_bigint", Kind.BIGINT),
          new Column("c_float", Kind.FLOAT),
          new Column("c_double", Kind.DOUBLE),
          new Column("c_dec", Kind.DECIMAL),
          new Column("c_str", Kind.STRING),
          new Column("c_date", Kind.DATE),
          new Column("c_time", Kind.TIME),
          new Column("c_ts", Kind.TIMESTAMP),
          new Column("c_ltz", Kind.TIMESTAMP_LTZ),
          new Column("c_bytes", Kind.BYTES));

  /** The metadata columns, declared {@code METADATA FROM 'key' VIRTUAL}. */
  enum Meta {
    KIND("m_kind", "change_type", DataTypes.STRING(), "STRING"),
    SEQ("m_seq", "commit_seq", DataTypes.BIGINT(), "BIGINT"),
    SNAPSHOT("m_snap", "snapshot_id", DataTypes.BIGINT(), "BIGINT"),
    TIME("m_time", "commit_time", DataTypes.TIMESTAMP_LTZ(3), "TIMESTAMP_LTZ(3)");

    final String column;
    final String key;
    final DataType type;
    final String sql;

    Meta(String column, String key, DataType type, String sql) {
      this.column = column;
      this.key = key;
      this.type = type;
      this.sql = sql;
    }
  }

  /** The operators of generated atoms; each meets every type it applies to on every path. */
  enum Op {
    EQ("="),
    NE("<>"),
    LT("<"),
    LE("<="),
    GT(">"),
    GE(">="),
    IN(null),
    BETWEEN(null),
    IS_NULL(null),
    IS_NOT_NULL(null),
    LIKE(null);

    final String sql;

    Op(String sql) {
      this.sql = sql;
    }

    boolean appliesTo(Kind kind) {
      return this != LIKE || kind == Kind.STRING;
    }
  }

  enum TableName {
    PK("pk"),
    LOG("log");

    final String name;

    TableName(String name) {
      this.name = name;
    }

    boolean keyed() {
      return this == PK;
    }
  }

  /** One way of reading a table through SQL. */
  record ReadPath(TableName table, boolean batch, String startup, String mode, String beforeImage) {
    boolean keyOnly() {
      return "key-only".equals(beforeImage);
    }

    @Override
    public String toString() {
      return batch
          ? table.name + " table, batch scan"
          : table.name
              + " table, streaming bounded, startup "
              + startup
              + ", "
              + mode
              + ", "
              + beforeImage
              + " before-images";
    }
  }

  static Stream<ReadPath> paths() {
    List<ReadPath> paths = new ArrayList<>();
    for (TableName table : TableName.values()) {
      paths.add(new ReadPath(table, true, "full", "per-snapshot", "full"));
      for (String startup : List.of("full", "earliest")) {
        for (String mode : List.of("per-snapshot", "collapsed")) {
          for (String beforeImage : table.keyed() ? List.of("full", "key-only") : List.of("full")) {
            paths.add(new ReadPath(table, false, startup, mode, beforeImage));
          }
        }
      }
    }
    return paths.stream();
  }

  @TempDir static Path dir;
  private static long seed;
  private static int queriesPerTable;
  private String warehouse;
  private SharedCatalogs.Handle catalog;

  /** Each table's rows at its end snapshot, by Iceberg's reader, as Flink rows. */
  private final Map<TableName, List<Row>> endRows = new HashMap<>();

  /** Each table's snapshots by id. */
  private final Map<TableName, Map<Long, Snapshot>> snapshots = new HashMap<>();

  /** The catalog's commit_seq of each snapshot of each table. */
  private final Map<TableName, Map<Long, Long>> commitSeqs = new HashMap<>();

  /** The catalog's stamp of each commit of each table, by commit_seq. */
  private final Map<TableName, TreeMap<Long, Instant>> commitTimes = new HashMap<>();

  /** Each table's generated queries, run on every path that reads the table. */
  private final Map<TableName, List<Query>> queries = new HashMap<>();

  /**
   * Flink's evaluation of each query over Iceberg's rows: by query number, the multiset of the
   * selected physical columns (in the order of {@link #COLUMNS}).
   */
  private final Map<TableName, Map<Integer, Map<Row, Integer>>> expected = new HashMap<>();

  @BeforeAll
  @Timeout(300)
  void writeHistories() throws Exception {
    String fixed = System.getProperty(SEED_PROPERTY);
    seed = fixed == null || fixed.isBlank() ? new Random().nextLong() : Long.parseLong(fixed);
    queriesPerTable = Integer.getInteger(QUERIES_PROPERTY, DEFAULT_QUERIES);
    if (queriesPerTable < 1 || queriesPerTable >= TAGS_PER_TABLE) {
      throw new IllegalArgumentException(
          "-D"
              + QUERIES_PROPERTY
              + " must be 1 to "
              + (TAGS_PER_TABLE - 1)
              + ", got "
              + queriesPerTable);
    }
    System.out.println(
        "SqlScanDifferentialTest seed "
            + seed
            + ", "
            + queriesPerTable
            + " queries per table (replay with -D"
            + SEED_PROPERTY
            + "="
            + seed
            + ")");
    warehouse = dir.resolve("warehouse").toString();
    catalog = SharedCatalogs.acquire(Map.of("warehouse", warehouse));
    Random random = new Random(seed);
    writeHistory(random);
    for (TableName table : TableName.values()) {
      Table iceberg = icebergTable(table);
      endRows.put(table, icebergRows(iceberg));
      Map<Long, Snapshot> byId = new LinkedHashMap<>();
      iceberg.snapshots().forEach(snapshot -> byId.put(snapshot.snapshotId(), snapshot));
      snapshots.put(table, byId);
      Map<Long, Long> seqs = new HashMap<>();
      TreeMap<Long, Instant> times = new TreeMap<>();
      String key = catalog.catalog().commitTableKey(id(table));
      for (CommitEvent event : catalog.catalog().commitsSince(0L)) {
        if (event.tableKey().equals(key)) {
          event.addedSnapshotIds().forEach(snapshot -> seqs.put(snapshot, event.commitSeq()));
          times.put(event.commitSeq(), Instant.EPOCH.plusMillis(event.tsMicros() / 1000));
        }
      }
      commitSeqs.put(table, seqs);
      commitTimes.put(table, times);
      Generator generator = new Generator(new Random(seed * 31 + table.ordinal()));
      queries.put(table, generator.queries(queriesPerTable));
      System.out.println(
          "SqlScanDifferentialTest: table "
              + table.name
              + " has "
              + byId.size()
              + " snapshots and "
              + endRows.get(table).size()
              + " rows at the end; "
              + generator.covered()
              + " of "
              + generator.pairs()
              + " (operator, type) pairs in its "
              + queriesPerTable
              + " queries");
    }
    evaluateByFlink();
  }

  /**
   * Runs every query of each table in Flink, in one job, over the table's end rows as Iceberg reads
   * them, handed to Flink as a stream of rows of the exact column types: a table that takes no
   * pushdown.
   */
  private void evaluateByFlink() throws Exception {
    Environment env = new Environment(false);
    List<String> slots = new ArrayList<>();
    COLUMNS.forEach(c -> slots.add(c.name()));
    Map<Integer, String> statements = new LinkedHashMap<>();
    for (TableName table : TableName.values()) {
      String view = "expected_" + table.name;
      env.table.createTemporaryView(
          view,
          env.table.fromDataStream(
              env.stream.fromData(endRows.get(table), ExternalTypeInfo.of(rowType()))));
      Map<Integer, Map<Row, Integer>> results = new HashMap<>();
      for (Query query : queries.get(table)) {
        results.put(query.number, new HashMap<>());
        statements.put(tag(table, query), query.sql(tag(table, query), view, slots, Set.of()));
      }
      expected.put(table, results);
    }
    Environment.Result result = env.run(statements, slots);
    result
        .unplanned()
        .forEach(
            (tag, statement) -> {
              TableName table = TableName.values()[tag / TAGS_PER_TABLE];
              expected.get(table).remove(tag % TAGS_PER_TABLE);
              System.out.println(
                  "SqlScanDifferentialTest: left out query "
                      + tag % TAGS_PER_TABLE
                      + " of table "
                      + table.name
                      + ": "
                      + result.why(tag));
            });
    for (Row row : result.rows()) {
      if (row.getKind() != RowKind.INSERT) {
        throw new IllegalStateException("Flink's evaluation over Iceberg's rows produced " + row);
      }
      int tag = (Integer) row.getField(0);
      TableName table = TableName.values()[tag / TAGS_PER_TABLE];
      Query query = queries.get(table).get(tag % TAGS_PER_TABLE);
      expected.get(table).get(query.number).merge(query.physical(row, slots), 1, Integer::sum);
    }
  }

  /** The tag of a query's rows in the job that evaluates every table's queries. */
  private static int tag(TableName table, Query query) {
    return table.ordinal() * TAGS_PER_TABLE + query.number;
  }

  /** A table environment over a stream environment, in the session zone, at parallelism 2. */
  private static final class Environment {
    final StreamExecutionEnvironment stream;
    final StreamTableEnvironment table;
    final boolean batch;

    Environment(boolean batch) {
      Configuration config = new Configuration();
      config.set(
          ExecutionOptions.RUNTIME_MODE,
          batch ? RuntimeExecutionMode.BATCH : RuntimeExecutionMode.STREAMING);
      stream = StreamExecutionEnvironment.getExecutionEnvironment(config);
      stream.setParallelism(2);
      table =
          StreamTableEnvironment.create(
              stream,
              batch ? EnvironmentSettings.inBatchMode() : EnvironmentSettings.inStreamingMode());
      table.getConfig().setLocalTimeZone(SESSION_ZONE);
      this.batch = batch;
    }

    /**
     * The rows of a run, each a change with its kind, and the statements Flink's planner did not
     * finish planning (by tag), which did not run.
     */
    record Result(List<Row> rows, Map<Integer, String> unplanned) {
      String why(int tag) {
        return "Flink's planner did not finish planning it within "
            + PLANNING_LIMIT.toSeconds()
            + " s (seen: Flink's SimplifyFilterConditionRule rewriting a filter back and forth"
            + " forever after the planner put it into CNF for pushdown; not skade's doing): "
            + unplanned.get(tag);
      }
    }

    /**
     * Runs {@code statements} (by tag, each {@code SELECT tag, slots...}) in one job. Each
     * statement is planned on its own (a SQL UNION ALL of them all is planned as one tree, which
     * takes the planner minutes) and given up on after {@link #PLANNING_LIMIT}.
     */
    Result run(Map<Integer, String> statements, List<String> slots) throws Exception {
      // One row type for all, so the streams can be united: every slot nullable.
      Schema.Builder schema = Schema.newBuilder().column("q", DataTypes.INT());
      List<DataTypes.Field> fields = new ArrayList<>();
      fields.add(DataTypes.FIELD("q", DataTypes.INT()));
      for (String slot : slots) {
        schema.column("s_" + slot, slotType(slot));
        fields.add(DataTypes.FIELD("s_" + slot, slotType(slot)));
      }
      Schema target = schema.build();
      DataType rowType = DataTypes.ROW(fields.toArray(DataTypes.Field[]::new));
      List<DataStream<Row>> streams = new ArrayList<>();
      Map<Integer, String> unplanned = new LinkedHashMap<>();
      for (Map.Entry<Integer, String> statement : statements.entrySet()) {
        DataStream<Row> stream =
            planned(
                () -> {
                  var result = table.sqlQuery(statement.getValue());
                  return batch
                      ? table.toDataStream(result, rowType)
                      : table.toChangelogStream(result, target);
                });
        if (stream == null) {
          unplanned.put(statement.getKey(), statement.getValue());
        } else {
          streams.add(stream);
        }
      }
      List<Row> rows = new ArrayList<>();
      if (streams.isEmpty()) {
        return new Result(rows, unplanned);
      }
      DataStream<Row> all = streams.get(0);
      if (streams.size() > 1) {
        all = all.union(streams.subList(1, streams.size()).toArray(DataStream[]::new));
      }
      try (CloseableIterator<Row> it = all.executeAndCollect()) {
        it.forEachRemaining(rows::add);
      }
      return new Result(rows, unplanned);
    }

    /**
     * What {@code planning} returns, or null when Flink's planner did not finish in time. It plans
     * on the calling thread (the planner keeps state in thread-locals), which a watchdog stops if
     * the time runs out (Thread.stop, which Java 17 still has).
     */
    @SuppressWarnings({"deprecation", "removal"})
    private static <T> T planned(Callable<T> planning) throws Exception {
      Thread caller = Thread.currentThread();
      Object lock = new Object();
      boolean[] doneOrStopped = {false, false};
      ScheduledFuture<?> watchdog =
          WATCHDOG.schedule(
              () -> {
                synchronized (lock) {
                  if (!doneOrStopped[0]) {
                    doneOrStopped[1] = true;
                    caller.stop();
                  }
                }
              },
              PLANNING_LIMIT.toMillis(),
              TimeUnit.MILLISECONDS);
      try {
        T result = planning.call();
        synchronized (lock) {
          doneOrStopped[0] = true;
        }
        return result;
      } catch (Throwable e) {
        synchronized (lock) {
          doneOrStopped[0] = true;
          if (doneOrStopped[1]) {
            Thread.interrupted(); // Thread.stop interrupts too
            return null; // stopped, wherever the planner caught and wrapped the ThreadDeath
          }
        }
        throw e;
      } finally {
        watchdog.cancel(false);
      }
    }
  }

  /** Stops planning that takes too long (see {@link Environment#planned}). */
  private static final ScheduledExecutorService WATCHDOG =
      Executors.newSingleThreadScheduledExecutor(
          runnable -> {
            Thread thread = new Thread(runnable, "SqlScanDifferentialTest planning watchdog");
            thread.setDaemon(true);
            return thread;
          });

  /** The SQL type of a slot: a physical or a metadata column, always nullable. */
  static DataType slotType(String slot) {
    Meta meta = meta(slot);
    if (meta != null) {
      return meta.type;
    }
    return COLUMNS.stream()
        .filter(c -> c.name().equals(slot))
        .findFirst()
        .orElseThrow()
        .kind()
        .type;
  }

  @AfterAll
  void closeWarehouse() {
    if (catalog != null) {
      catalog.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("paths")
  @Timeout(240)
  void everyGeneratedQueryAppliedAsAChangelogEqualsFlinksEvaluationOverIcebergsRows(ReadPath path)
      throws Exception {
    String only = System.getProperty(PATHS_PROPERTY);
    Assumptions.assumeTrue(
        only == null || path.toString().contains(only),
        () -> "-D" + PATHS_PROPERTY + "=" + only + " leaves this path out");
    int pathIndex = paths().toList().indexOf(path);
    Random random = new Random(seed * 31 + 7 + pathIndex);
    // Queries Flink could not plan over the values are left out on every path.
    List<Query> tableQueries =
        queries.get(path.table()).stream()
            .filter(query -> expected.get(path.table()).containsKey(query.number))
            .toList();
    List<String> slots = slotOrder(random);
    // Which metadata columns each query selects differs from path to path.
    Map<Integer, Set<Meta>> metadata = new HashMap<>();
    for (Query query : tableQueries) {
      Set<Meta> selected = new HashSet<>();
      if (random.nextInt(5) < 2) {
        for (Meta meta : Meta.values()) {
          if (random.nextBoolean()) {
            selected.add(meta);
          }
        }
      }
      metadata.put(query.number, selected);
    }

    Environment env = new Environment(path.batch());
    declareReader(env.table, path);
    Map<Integer, String> statements = new LinkedHashMap<>();
    for (Query query : tableQueries) {
      statements.put(
          query.number, query.sql(query.number, "skade_rows", slots, metadata.get(query.number)));
    }
    Environment.Result result = env.run(statements, slots);

    Map<Integer, List<Row>> byTag = new HashMap<>();
    for (Row row : result.rows()) {
      byTag.computeIfAbsent((Integer) row.getField(0), tag -> new ArrayList<>()).add(row);
    }
    List<String> failures = new ArrayList<>();
    int nonEmpty = 0;
    int withRetractions = 0;
    List<String> leftOut = new ArrayList<>();
    for (Query query : tableQueries) {
      if (result.unplanned().containsKey(query.number)) {
        leftOut.add("query " + query.number + ": " + result.why(query.number));
        continue;
      }
      List<Row> changes = byTag.getOrDefault(query.number, List.of());
      Map<Row, Integer> flink = expected.get(path.table()).get(query.number);
      Check check = new Check(path, query, slots, metadata.get(query.number));
      check.compare(flink, check.apply(changes));
      if (!flink.isEmpty()) {
        nonEmpty++;
      }
      if (changes.stream()
          .anyMatch(c -> c.getKind() == RowKind.UPDATE_BEFORE || c.getKind() == RowKind.DELETE)) {
        withRetractions++;
      }
      if (!check.problems.isEmpty()) {
        failures.add(
            "query "
                + query.number
                + ": "
                + query.describe(path, metadata.get(query.number))
                + "\n    "
                + String.join("\n    ", check.shownProblems())
                + "\n    changes from skade (tag, then slots "
                + slots
                + "): "
                + abbreviated(changes));
      }
    }
    System.out.println(
        "SqlScanDifferentialTest ["
            + path
            + "]: "
            + tableQueries.size()
            + " queries, "
            + nonEmpty
            + " with rows, "
            + withRetractions
            + " with retractions, "
            + failures.size()
            + " wrong, "
            + leftOut.size()
            + " left out");
    leftOut.forEach(
        line -> System.out.println("SqlScanDifferentialTest [" + path + "] left out " + line));
    String message =
        "seed "
            + seed
            + " (replay with -D"
            + SEED_PROPERTY
            + "="
            + seed
            + "), path "
            + path
            + ": "
            + failures.size()
            + " of "
            + tableQueries.size()
            + " queries wrong:\n"
            + String.join("\n", failures);
    if (!failures.isEmpty()) {
      System.out.println(message);
    }
    assertThat(failures).withFailMessage("%s", message).isEmpty();
    // A planner loop is Flink's; a few such queries are left out, not most of them.
    assertThat(leftOut)
        .as("queries Flink could not plan, seed %d, path %s", seed, path)
        .hasSizeLessThanOrEqualTo(Math.max(1, tableQueries.size() / 4));
    // The generator is meant to produce queries with rows and, on CDC paths over the history,
    // retractions; without them the comparison above proves little.
    assertThat(nonEmpty).as("queries with rows, seed %d, path %s", seed, path).isPositive();
    if (!path.batch() && path.startup().equals("earliest") && path.mode().equals("per-snapshot")) {
      assertThat(withRetractions)
          .as("queries whose changes retract rows, seed %d, path %s", seed, path)
          .isPositive();
    }
  }

  // ---------------------------------------------------------------------------------------
  // The tables and their histories

  private TableIdentifier id(TableName table) {
    return TableIdentifier.of(DATABASE, table.name);
  }

  private Table icebergTable(TableName table) {
    return catalog.catalog().loadTable(id(table));
  }

  private static String physicalColumns() {
    return COLUMNS.stream()
        .map(c -> c.name() + " " + c.kind().sql)
        .collect(Collectors.joining(", "));
  }

  private String with(String... options) {
    StringBuilder with =
        new StringBuilder("'connector' = 'skade', 'warehouse' = '").append(warehouse).append('\'');
    for (int i = 0; i < options.length; i += 2) {
      with.append(", '").append(options[i]).append("' = '").append(options[i + 1]).append('\'');
    }
    return " WITH (" + with + ")";
  }

  private void declareWriter(TableEnvironment env) {
    env.executeSql(
        "CREATE TABLE pk (" + physicalColumns() + ", PRIMARY KEY (id) NOT ENFORCED)" + with());
    env.executeSql("CREATE TABLE log (" + physicalColumns() + ") PARTITIONED BY (c_bool)" + with());
  }

  private void declareReader(TableEnvironment env, ReadPath path) {
    String metadata =
        Arrays.stream(Meta.values())
            .map(m -> ", " + m.column + " " + m.sql + " METADATA FROM '" + m.key + "' VIRTUAL")
            .collect(Collectors.joining());
    List<String> options = new ArrayList<>(List.of("table", path.table().name));
    if (!path.batch()) {
      options.addAll(
          List.of(
              "scan.startup.mode",
              path.startup(),
              "scan.bounded",
              "true",
              "changelog.mode",
              path.mode(),
              "changelog.before-image",
              path.beforeImage()));
    }
    env.executeSql(
        "CREATE TABLE skade_rows ("
            + physicalColumns()
            + metadata
            + (path.table().keyed() ? ", PRIMARY KEY (id) NOT ENFORCED" : "")
            + ")"
            + with(options.toArray(String[]::new)));
  }

  /**
   * Both tables' histories: engine appends, upserts (a no-op one too), key deletes and an
   * overwrite; SQL deletes pushed down (position deletes, dropped files) and an update (a job that
   * upserts by key).
   */
  private void writeHistory(Random random) throws Exception {
    TableEnvironment sql = TableEnvironment.create(EnvironmentSettings.inBatchMode());
    sql.getConfig().setLocalTimeZone(SESSION_ZONE);
    declareWriter(sql);
    List<Object[]> pkRows = new ArrayList<>();
    for (int id = 1; id <= 24; id++) {
      pkRows.add(randomRow(random, id));
    }
    List<Object[]> logRows = new ArrayList<>();
    for (int i = 0; i < 18; i++) {
      logRows.add(randomRow(random, random.nextInt(8)));
    }
    logRows.add(logRows.get(3).clone()); // equal rows: the LOG table keeps both
    logRows.add(logRows.get(3).clone());
    // Created as a skade sink creates a missing table from its DDL (key, sort order, bloom
    // filters, partitions); the first rows are appended by the engine, not by a slower SQL job.
    TableResolution.loadOrCreate(
        CatalogConnection.of(catalog.catalog()),
        id(TableName.PK),
        resolvedSchema(true),
        List.of(),
        Optional.empty());
    TableResolution.loadOrCreate(
        CatalogConnection.of(catalog.catalog()),
        id(TableName.LOG),
        resolvedSchema(false),
        List.of("c_bool"),
        Optional.empty());
    new TableWriter(icebergTable(TableName.PK))
        .append(pkRows.stream().map(r -> record(icebergTable(TableName.PK), r)).toList());
    new TableWriter(icebergTable(TableName.LOG))
        .append(logRows.stream().map(r -> record(icebergTable(TableName.LOG), r)).toList());

    Table pk = icebergTable(TableName.PK);
    TableWriter pkWriter = new TableWriter(pk);
    List<Record> upserts = new ArrayList<>();
    for (int id : new int[] {2, 5, 9, 13, 25, 26}) {
      upserts.add(record(pk, randomRow(random, id)));
    }
    pkWriter.upsert(upserts);
    pkWriter.deleteKeys(
        List.of(
            record(pk, randomRow(random, 3)),
            record(pk, randomRow(random, 9)),
            record(pk, randomRow(random, 17))));
    await(sql, "DELETE FROM pk WHERE c_int < 0"); // pushed down: position deletes, dropped files
    await(sql, "UPDATE pk SET c_str = 'upd', c_int = c_int + 1 WHERE c_bool"); // a job, by key
    pk.refresh();
    upserts = new ArrayList<>();
    for (int id : new int[] {3, 6, 11, 27, 28}) { // 3 comes back after its delete
      upserts.add(record(pk, randomRow(random, id)));
    }
    Record same = currentRow(pk, 20); // an upsert that changes nothing
    if (same != null) {
      upserts.add(same);
    }
    pkWriter.upsert(upserts);
    await(sql, "DELETE FROM pk WHERE c_str = 'bob' OR c_date IS NULL"); // pushed down
    pk.refresh();
    List<Record> appends = new ArrayList<>();
    for (int id = 29; id <= 32; id++) {
      appends.add(record(pk, randomRow(random, id)));
    }
    pkWriter.append(appends);
    await(sql, "DELETE FROM pk WHERE id = 7 OR id = 30"); // pushed down

    Table log = icebergTable(TableName.LOG);
    TableWriter logWriter = new TableWriter(log);
    List<Record> logAppends = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      logAppends.add(record(log, randomRow(random, random.nextInt(8))));
    }
    logWriter.append(logAppends);
    await(sql, "DELETE FROM log WHERE c_int > 5"); // pushed down
    log.refresh();
    logWriter.overwrite(
        Expressions.equal("c_str", "bob"),
        List.of(record(log, randomRow(random, 1)), record(log, randomRow(random, 2))));
    logAppends = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      logAppends.add(record(log, randomRow(random, random.nextInt(8))));
    }
    logAppends.add(logAppends.get(0)); // equal rows in one file
    logWriter.append(logAppends);
    await(sql, "DELETE FROM log WHERE c_bool IS NULL"); // a whole partition
    await(sql, "DELETE FROM log WHERE c_dec < 0 AND c_str LIKE 'a%'");
    log.refresh();
    logAppends = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      logAppends.add(record(log, randomRow(random, random.nextInt(8))));
    }
    logWriter.append(logAppends);
  }

  private static void await(TableEnvironment env, String statement) throws Exception {
    env.executeSql(statement).await();
  }

  /** A random row of the tables' columns with {@code id}; other values NULL one time in six. */
  private static Object[] randomRow(Random random, int id) {
    Object[] row = new Object[COLUMNS.size()];
    row[0] = id;
    for (int i = 1; i < row.length; i++) {
      row[i] = random.nextInt(6) == 0 ? null : pick(random, Values.data(COLUMNS.get(i).kind()));
    }
    return row;
  }

  /** The tables' columns as Flink resolves their DDL; with the key {@code id} when keyed. */
  private static ResolvedSchema resolvedSchema(boolean keyed) {
    List<org.apache.flink.table.catalog.Column> columns = new ArrayList<>();
    for (Column c : COLUMNS) {
      columns.add(
          org.apache.flink.table.catalog.Column.physical(
              c.name(), keyed && c.name().equals("id") ? c.kind().type.notNull() : c.kind().type));
    }
    return new ResolvedSchema(
        columns, List.of(), keyed ? UniqueConstraint.primaryKey("pk_id", List.of("id")) : null);
  }

  private static Record record(Table table, Object[] values) {
    GenericRecord record = GenericRecord.create(table.schema());
    for (int i = 0; i < values.length; i++) {
      record.setField(COLUMNS.get(i).name(), Values.toIceberg(values[i]));
    }
    return record;
  }

  /** The row of the primary-key table with {@code id}, by Iceberg's reader, or null. */
  private static Record currentRow(Table table, int id) throws Exception {
    try (CloseableIterable<Record> rows =
        IcebergGenerics.read(table).where(Expressions.equal("id", id)).build()) {
      for (Record row : rows) {
        if (Objects.equals(row.getField("id"), id)) {
          return row.copy();
        }
      }
    }
    return null;
  }

  /** The table's rows by Iceberg's own reader, as Flink rows of {@link #COLUMNS}. */
  private static List<Row> icebergRows(Table table) throws Exception {
    List<Row> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      for (Record record : records) {
        Row row = new Row(COLUMNS.size());
        for (int i = 0; i < COLUMNS.size(); i++) {
          row.setField(i, Values.fromIceberg(record.getField(COLUMNS.get(i).name())));
        }
        rows.add(row);
      }
    }
    return rows;
  }

  private static DataType rowType() {
    return DataTypes.ROW(
        COLUMNS.stream()
            .map(c -> DataTypes.FIELD(c.name(), c.kind().type))
            .toArray(DataTypes.Field[]::new));
  }

  /** The order of a path's union slots: the physical and metadata columns, shuffled. */
  private static List<String> slotOrder(Random random) {
    List<String> slots = new ArrayList<>();
    COLUMNS.forEach(c -> slots.add(c.name()));
    Arrays.stream(Meta.values()).forEach(m -> slots.add(m.column));
    Collections.shuffle(slots, random);
    return slots;
  }

  private static <T> T pick(Random random, List<T> values) {
    return values.get(random.nextInt(values.size()));
  }

  // ---------------------------------------------------------------------------------------
  // Values, literals and queries

  /** The values the tables hold and the literals predicates compare them with. */
  static final class Values {
    private static final DateTimeFormatter TIMESTAMP_FORMAT =
        DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");
    private static final DateTimeFormatter TIME_FORMAT = DateTimeFormatter.ofPattern("HH:mm:ss");

    private Values() {}

    /** The values rows are drawn from. */
    static List<Object> data(Kind kind) {
      return switch (kind) {
        case BOOLEAN -> List.of(true, false);
        case INT -> List.of(-7, -1, 0, 1, 2, 3, 5, 8, 13, Integer.MAX_VALUE);
        case BIGINT -> List.of(-3_000_000_000L, -1L, 0L, 7L, 42L, 3_000_000_000L, Long.MAX_VALUE);
        case FLOAT -> List.of(-1.5f, 0.0f, 0.25f, 2.5f, 1.0e10f);
        case DOUBLE -> List.of(-2.5, 0.0, 0.1, 3.75, 1.0e300);
        case DECIMAL ->
            Stream.of("-1.50", "0.00", "0.01", "12.34", "99999999.99")
                .map(BigDecimal::new)
                .map(Object.class::cast)
                .toList();
        case STRING ->
            List.of("", "ada", "adam", "bob", "Bob", "a_c", "a%c", "o'neil", "Tromsø", "x y");
        case DATE ->
            Stream.of("1969-12-31", "1970-01-01", "2000-02-29", "2024-07-15", "2099-12-31")
                .map(LocalDate::parse)
                .map(Object.class::cast)
                .toList();
        case TIME ->
            Stream.of("00:00:00", "06:30:00", "12:34:56", "23:59:59")
                .map(LocalTime::parse)
                .map(Object.class::cast)
                .toList();
        case TIMESTAMP ->
            Stream.of(
                    "1969-12-31T23:59:59.999999",
                    "1970-01-01T00:00:00",
                    "2024-02-29T12:00:00.000001",
                    "2024-02-29T12:00:00.500",
                    "2099-12-31T23:59:59")
                .map(LocalDateTime::parse)
                .map(Object.class::cast)
                .toList();
        case TIMESTAMP_LTZ ->
            Stream.of(
                    "1969-12-31T23:59:59.999999Z",
                    "1970-01-01T00:00:00Z",
                    "2024-02-29T12:00:00.000001Z",
                    "2024-02-29T12:00:00.500Z",
                    "2099-12-31T23:59:59Z")
                .map(Instant::parse)
                .map(Object.class::cast)
                .toList();
        case BYTES ->
            List.of(
                new byte[0],
                new byte[] {0},
                new byte[] {(byte) 0xCA},
                new byte[] {(byte) 0xCA, (byte) 0xFE},
                new byte[] {(byte) 0xFF, 0});
      };
    }

    /** The values literals take: the data's and some between them. */
    static List<Object> probes(Kind kind) {
      List<Object> probes = new ArrayList<>(data(kind));
      switch (kind) {
        case INT -> probes.addAll(List.of(4, -100));
        case BIGINT -> probes.addAll(List.of(5L, -10_000_000_000L));
        case FLOAT -> probes.addAll(List.of(1.0f, -0.5f));
        case DOUBLE -> probes.addAll(List.of(1.0, -10.0));
        case DECIMAL -> probes.addAll(List.of(new BigDecimal("5.00"), new BigDecimal("12.30")));
        case STRING -> probes.addAll(List.of("ad", "b", "Tromso", "zz"));
        case DATE -> probes.add(LocalDate.parse("2024-01-01"));
        case TIME -> probes.add(LocalTime.parse("12:00:00"));
        case TIMESTAMP -> probes.add(LocalDateTime.parse("2024-02-29T12:00:00"));
        case TIMESTAMP_LTZ -> probes.add(Instant.parse("2024-02-29T12:00:00Z"));
        case BYTES -> probes.add(new byte[] {(byte) 0xCA, 0});
        default -> {}
      }
      return probes;
    }

    /**
     * A SQL literal of {@code value} for a column of {@code kind}: its plain form, or (when {@code
     * random} is given, sometimes) another spelling of the same value.
     */
    static String sql(Kind kind, Object value, Random random) {
      boolean variant = random != null && random.nextInt(3) == 0;
      if (value == null) {
        return "CAST(NULL AS " + kind.sql + ")";
      }
      return switch (kind) {
        case BOOLEAN -> ((Boolean) value) ? "TRUE" : "FALSE";
        case INT -> variant ? "CAST(" + value + " AS INT)" : value.toString();
        case BIGINT -> {
          long v = (Long) value;
          boolean fitsInt = v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE;
          yield variant || !fitsInt && random == null
              ? "CAST(" + v + " AS BIGINT)"
              : Long.toString(v); // an INT literal where it fits: Flink widens it
        }
        case FLOAT ->
            variant
                ? new BigDecimal(Float.toString((Float) value)).toPlainString()
                : "CAST(" + value + " AS FLOAT)";
        case DOUBLE ->
            variant && Math.abs((Double) value) < 1e15
                ? new BigDecimal(Double.toString((Double) value)).toPlainString()
                : value + (value.toString().contains("E") ? "" : "E0");
        case DECIMAL ->
            variant
                ? "CAST(" + ((BigDecimal) value).toPlainString() + " AS DECIMAL(10, 2))"
                : ((BigDecimal) value).toPlainString();
        case STRING -> "'" + ((String) value).replace("'", "''") + "'";
        case DATE -> "DATE '" + value + "'";
        case TIME -> "TIME '" + TIME_FORMAT.format((LocalTime) value) + "'";
        case TIMESTAMP -> "TIMESTAMP '" + TIMESTAMP_FORMAT.format((LocalDateTime) value) + "'";
        case TIMESTAMP_LTZ -> {
          Instant instant = (Instant) value;
          if (variant && instant.getNano() % 1_000_000 == 0) {
            yield "TO_TIMESTAMP_LTZ(" + instant.toEpochMilli() + ", 3)";
          }
          yield "CAST(TIMESTAMP '"
              + TIMESTAMP_FORMAT.format(LocalDateTime.ofInstant(instant, SESSION_ZONE))
              + "' AS TIMESTAMP_LTZ(6))";
        }
        case BYTES -> {
          String hex = "X'" + HexFormat.of().withUpperCase().formatHex((byte[]) value) + "'";
          yield variant ? "CAST(" + hex + " AS BYTES)" : hex;
        }
      };
    }

    static Object toIceberg(Object value) {
      if (value instanceof Instant instant) {
        return instant.atOffset(ZoneOffset.UTC);
      } else if (value instanceof byte[] bytes) {
        return ByteBuffer.wrap(bytes);
      }
      return value;
    }

    static Object fromIceberg(Object value) {
      if (value instanceof OffsetDateTime time) {
        return time.toInstant();
      } else if (value instanceof ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
      } else if (value instanceof CharSequence text) {
        return text.toString();
      }
      return value;
    }
  }

  /** A generated query: the physical columns it selects and its WHERE predicate. */
  static final class Query {
    final int number;
    final Set<String> physical;
    final String where; // null: none

    Query(int number, Set<String> physical, String where) {
      this.number = number;
      this.physical = physical;
      this.where = where;
    }

    /**
     * The query as one statement: its tag, then every slot (the selected columns, NULL in the
     * others), from {@code from}.
     */
    String sql(int tag, String from, List<String> slots, Set<Meta> metadata) {
      StringBuilder sql = new StringBuilder("SELECT ").append(tag).append(" AS q");
      for (String slot : slots) {
        sql.append(", ");
        if (selects(slot, metadata)) {
          sql.append(slot);
        } else {
          sql.append("CAST(NULL AS ")
              .append(slotType(slot).getLogicalType().asSerializableString())
              .append(')');
        }
        sql.append(" AS s_").append(slot);
      }
      sql.append(" FROM ").append(from);
      if (where != null) {
        sql.append(" WHERE ").append(where);
      }
      return sql.toString();
    }

    private boolean selects(String slot, Set<Meta> metadata) {
      Meta meta = meta(slot);
      return meta == null ? physical.contains(slot) : metadata.contains(meta);
    }

    /** The selected physical columns of a result row, in the order of {@link #COLUMNS}. */
    Row physical(Row result, List<String> slots) {
      List<Object> values = new ArrayList<>();
      for (Column column : COLUMNS) {
        if (physical.contains(column.name())) {
          values.add(result.getField(1 + slots.indexOf(column.name())));
        }
      }
      return Row.of(values.toArray());
    }

    /**
     * The query as a user would write it, for failure messages: the physical columns in the table's
     * order (as rows in messages show them), then the metadata columns.
     */
    String describe(ReadPath path, Set<Meta> metadata) {
      List<String> columns = new ArrayList<>();
      COLUMNS.stream().map(Column::name).filter(physical::contains).forEach(columns::add);
      metadata.stream().sorted().map(meta -> meta.column).forEach(columns::add);
      return "SELECT "
          + (columns.isEmpty() ? "1" : String.join(", ", columns))
          + " FROM "
          + path.table().name
          + (where == null ? "" : " WHERE " + where);
    }
  }

  static Meta meta(String slot) {
    for (Meta meta : Meta.values()) {
      if (meta.column.equals(slot)) {
        return meta;
      }
    }
    return null;
  }

  /**
   * Generates a table's queries: the (operator, type) pairs not yet used are drawn first, so with
   * enough queries (the default and more) every pair is in some predicate.
   */
  static final class Generator {
    /** The most atoms in one predicate; larger trees cost the planner much more. */
    private static final int MAX_ATOMS = 7;

    private final Random random;
    private final List<Map.Entry<Op, Kind>> uncovered = new ArrayList<>();
    private final int pairs;

    Generator(Random random) {
      this.random = random;
      for (Op op : Op.values()) {
        for (Kind kind : Kind.values()) {
          if (op.appliesTo(kind)) {
            uncovered.add(Map.entry(op, kind));
          }
        }
      }
      pairs = uncovered.size();
      Collections.shuffle(uncovered, random);
    }

    int pairs() {
      return pairs;
    }

    int covered() {
      return pairs - uncovered.size();
    }

    List<Query> queries(int count) {
      List<Query> queries = new ArrayList<>();
      for (int number = 0; number < count; number++) {
        Set<String> selected = projection();
        String where = null;
        if (number > 0) { // the first query: the projection alone
          int left = count - number;
          int atoms = Math.max(1, Math.min(MAX_ATOMS, (uncovered.size() + left - 1) / left));
          List<String> parts = new ArrayList<>();
          boolean binary = false;
          for (int i = 0; i < atoms; i++) {
            Map.Entry<Op, Kind> pair = next(binary);
            binary |= pair.getValue() == Kind.BYTES;
            parts.add(atom(pair.getKey(), column(pair.getValue())));
          }
          where = tree(parts);
        }
        queries.add(new Query(number, selected, where));
      }
      return queries;
    }

    /**
     * The first pair not used yet, else a random one; none on the binary column when {@code
     * noBinary} (one atom on it a query: see the class comment).
     */
    private Map.Entry<Op, Kind> next(boolean noBinary) {
      for (int i = 0; i < uncovered.size(); i++) {
        if (!noBinary || uncovered.get(i).getValue() != Kind.BYTES) {
          return uncovered.remove(i);
        }
      }
      while (true) {
        Map.Entry<Op, Kind> pair = randomPair();
        if (!noBinary || pair.getValue() != Kind.BYTES) {
          return pair;
        }
      }
    }

    private Map.Entry<Op, Kind> randomPair() {
      while (true) {
        Op op = pick(random, List.of(Op.values()));
        Kind kind = pick(random, List.of(Kind.values()));
        if (op.appliesTo(kind)) {
          return Map.entry(op, kind);
        }
      }
    }

    /** A column of {@code kind}; the key often, as only its predicates reach key-only reads. */
    private Column column(Kind kind) {
      List<Column> candidates = COLUMNS.stream().filter(c -> c.kind() == kind).toList();
      if (kind == Kind.INT && random.nextBoolean()) {
        return COLUMNS.get(0);
      }
      return pick(random, candidates);
    }

    /** Some physical columns, with or without the key; now and then none at all. */
    private Set<String> projection() {
      Set<String> selected = new HashSet<>();
      if (random.nextInt(10) > 0) {
        double share = 0.2 + 0.7 * random.nextDouble();
        for (Column column : COLUMNS) {
          if (random.nextDouble() < share) {
            selected.add(column.name());
          }
        }
      }
      return selected;
    }

    private String tree(List<String> atoms) {
      String expression;
      if (atoms.size() == 1) {
        expression = atoms.get(0);
      } else {
        int split = 1 + random.nextInt(atoms.size() - 1);
        expression =
            "("
                + tree(atoms.subList(0, split))
                + (random.nextBoolean() ? " AND " : " OR ")
                + tree(atoms.subList(split, atoms.size()))
                + ")";
      }
      return random.nextInt(5) == 0 ? "NOT " + parenthesized(expression) : expression;
    }

    private static String parenthesized(String expression) {
      return expression.startsWith("(") ? expression : "(" + expression + ")";
    }

    private String literal(Kind kind) {
      return Values.sql(kind, pick(random, Values.probes(kind)), random);
    }

    private String atom(Op op, Column column) {
      String name = column.name();
      Kind kind = column.kind();
      return switch (op) {
        case EQ, NE, LT, LE, GT, GE -> {
          if (kind == Kind.BOOLEAN && op == Op.EQ && random.nextInt(3) == 0) {
            yield pick(
                random,
                List.of(name, name + " IS TRUE", name + " IS NOT FALSE", name + " IS NOT TRUE"));
          }
          String value = literal(kind);
          yield random.nextBoolean()
              ? "(" + name + " " + op.sql + " " + value + ")"
              : "(" + value + " " + op.sql + " " + name + ")";
        }
        case IN -> {
          List<String> values = new ArrayList<>();
          int n = 1 + random.nextInt(5);
          for (int i = 0; i < n; i++) {
            values.add(random.nextInt(12) == 0 ? Values.sql(kind, null, null) : literal(kind));
          }
          yield "("
              + name
              + (random.nextInt(4) == 0 ? " NOT IN (" : " IN (")
              + String.join(", ", values)
              + "))";
        }
        case BETWEEN ->
            "("
                + name
                + (random.nextInt(4) == 0 ? " NOT BETWEEN " : " BETWEEN ")
                + literal(kind)
                + " AND "
                + literal(kind)
                + ")";
        case IS_NULL -> "(" + name + " IS NULL)";
        case IS_NOT_NULL -> "(" + name + " IS NOT NULL)";
        case LIKE ->
            "("
                + name
                + (random.nextInt(4) == 0 ? " NOT LIKE " : " LIKE ")
                + Values.sql(Kind.STRING, pattern(), null)
                + ")";
      };
    }

    /** A LIKE pattern: mostly a prefix (which skade can push), else others Flink keeps. */
    private String pattern() {
      String value = (String) pick(random, Values.data(Kind.STRING));
      int cut = value.isEmpty() ? 0 : random.nextInt(value.length() + 1);
      return switch (random.nextInt(6)) {
        case 0, 1, 2 -> value.substring(0, cut) + "%";
        case 3 -> "%" + value.substring(cut) + "%";
        case 4 -> value; // no wildcard: equality
        default -> "a_c";
      };
    }
  }

  // ---------------------------------------------------------------------------------------
  // Applying a query's changes and checking them

  /** The strict application of one query's changes, and what was wrong with them. */
  final class Check {
    private final ReadPath path;
    private final Query query;
    private final List<String> slots;

    /** Position of the key among the selected physical columns, or -1. */
    private final int key;

    /** The union positions (after the tag) of the selected metadata columns. */
    private final Map<Meta, Integer> metadata = new LinkedHashMap<>();

    final List<String> problems = new ArrayList<>();

    Check(ReadPath path, Query query, List<String> slots, Set<Meta> selectedMetadata) {
      this.path = path;
      this.query = query;
      this.slots = slots;
      // id comes first in COLUMNS, so first among the selected physical columns.
      this.key = path.table().keyed() && query.physical.contains("id") ? 0 : -1;
      for (Meta meta : Meta.values()) {
        if (selectedMetadata.contains(meta)) {
          metadata.put(meta, 1 + slots.indexOf(meta.column));
        }
      }
    }

    /** The multiset the changes leave, applied strictly to an empty state. */
    Map<Row, Integer> apply(List<Row> changes) {
      Map<Object, Row> byKey = new HashMap<>();
      Map<Row, Integer> multiset = new HashMap<>();
      Map<Object, Long> lastSeq = new HashMap<>();
      for (Row change : changes) {
        Row row = query.physical(change, slots);
        checkMetadata(change, row, lastSeq);
        RowKind kind = change.getKind();
        boolean insert = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER;
        if (path.batch() && kind != RowKind.INSERT) {
          problems.add("a batch scan produced a change of kind " + kind + ": " + change);
        }
        if (key >= 0) {
          Object id = row.getField(key);
          Row current = byKey.get(id);
          if (insert) {
            if (current != null) {
              problems.add(
                  "an insert " + shown(kind, row) + " meets the row " + current + " under its key");
            }
            byKey.put(id, row);
          } else if (current == null) {
            problems.add("a retraction " + shown(kind, row) + " meets no row under its key");
          } else {
            if (!current.equals(row)
                && !(path.keyOnly() && kind == RowKind.DELETE && onlyKey(row))) {
              problems.add(
                  "a retraction "
                      + shown(kind, row)
                      + " meets "
                      + current
                      + ", another row under its key");
            }
            byKey.remove(id);
          }
        } else if (insert) {
          multiset.merge(row, 1, Integer::sum);
        } else if (multiset.getOrDefault(row, 0) == 0) {
          problems.add("a retraction " + shown(kind, row) + " meets no equal row");
        } else {
          multiset.merge(row, -1, (a, b) -> a + b == 0 ? null : a + b);
        }
      }
      if (key >= 0) {
        byKey.values().forEach(row -> multiset.merge(row, 1, Integer::sum));
      }
      return multiset;
    }

    /** The problems, at most a few of each kind (the first words name the kind). */
    List<String> shownProblems() {
      Map<String, Integer> byKind = new HashMap<>();
      List<String> shown = new ArrayList<>();
      int left = 0;
      for (String problem : problems) {
        String kind = problem.replaceAll("[\\d\\[].*", "");
        if (byKind.merge(kind, 1, Integer::sum) <= 3) {
          shown.add(problem);
        } else {
          left++;
        }
      }
      if (left > 0) {
        shown.add("... and " + left + " more like these");
      }
      return shown;
    }

    private boolean onlyKey(Row row) {
      for (int i = 0; i < row.getArity(); i++) {
        if (i != key && row.getField(i) != null) {
          return false;
        }
      }
      return true;
    }

    void compare(Map<Row, Integer> expected, Map<Row, Integer> actual) {
      List<String> missing = difference(expected, actual);
      List<String> unexpected = difference(actual, expected);
      if (!missing.isEmpty()) {
        problems.add("rows Flink's evaluation has and skade's changelog does not: " + missing);
      }
      if (!unexpected.isEmpty()) {
        problems.add("rows skade's changelog has and Flink's evaluation does not: " + unexpected);
      }
    }

    private List<String> difference(Map<Row, Integer> a, Map<Row, Integer> b) {
      List<String> rows = new ArrayList<>();
      a.forEach(
          (row, count) -> {
            int extra = count - b.getOrDefault(row, 0);
            if (extra > 0) {
              rows.add((extra > 1 ? extra + " x " : "") + row);
            }
          });
      Collections.sort(rows);
      return rows;
    }

    /**
     * The metadata columns of a change: a change type that names its row kind, a snapshot of the
     * table, the catalog's commit of (or, collapsed, after) it, the snapshot's commit time.
     */
    private void checkMetadata(Row change, Row row, Map<Object, Long> lastSeq) {
      if (metadata.isEmpty()) {
        return;
      }
      Map<Long, Snapshot> tableSnapshots = snapshots.get(path.table());
      Map<Long, Long> seqs = commitSeqs.get(path.table());
      String kind = (String) value(change, Meta.KIND);
      Long snapshotId = (Long) value(change, Meta.SNAPSHOT);
      Long seq = (Long) value(change, Meta.SEQ);
      Instant time = (Instant) value(change, Meta.TIME);
      for (Meta meta : metadata.keySet()) {
        if (value(change, meta) == null) {
          problems.add("metadata column " + meta.column + " is NULL in " + change);
        }
      }
      if (kind != null) {
        Set<String> allowed =
            path.keyOnly()
                // ChangelogNormalize emits the rows the source sent: inserts and upsert images.
                ? Set.of("INSERT", "UPDATE_AFTER")
                : Set.of(changeType(change.getKind()));
        if (!allowed.contains(kind)) {
          problems.add(
              "change_type "
                  + kind
                  + " on a change of kind "
                  + change.getKind()
                  + " (expected one of "
                  + new TreeSet<>(allowed)
                  + "): "
                  + change);
        }
      }
      Snapshot snapshot = snapshotId == null ? null : tableSnapshots.get(snapshotId);
      if (snapshotId != null && snapshot == null) {
        problems.add(
            "snapshot_id "
                + snapshotId
                + " is not a snapshot of the table "
                + tableSnapshots.keySet()
                + ": "
                + change);
      }
      if (seq != null && !seqs.containsValue(seq)) {
        problems.add(
            "commit_seq " + seq + " is not a commit of the table " + seqs.values() + ": " + change);
      }
      if (seq != null && snapshot != null) {
        long committed = seqs.getOrDefault(snapshotId, Long.MAX_VALUE);
        boolean exact =
            !path.batch()
                && path.startup().equals("earliest")
                && path.mode().equals("per-snapshot")
                && !path.keyOnly();
        if (exact ? seq != committed : seq < committed) {
          problems.add(
              "commit_seq "
                  + seq
                  + " of a change in snapshot "
                  + snapshotId
                  + ", committed as commit_seq "
                  + committed
                  + (exact ? "" : " (or later)")
                  + ": "
                  + change);
        }
      }
      if (time != null) {
        // The catalog's stamp of the change's commit_seq: of the commit that made its snapshot,
        // or (collapsed, or a snapshot's rows) a later one.
        TreeMap<Long, Instant> stamps = commitTimes.get(path.table());
        long first = snapshot == null ? 0 : seqs.getOrDefault(snapshotId, 0L);
        Set<Instant> times =
            seq != null
                ? Set.of(stamps.getOrDefault(seq, Instant.MIN))
                : new TreeSet<>(stamps.tailMap(first).values());
        if (!times.contains(time)) {
          problems.add(
              "commit_time "
                  + time
                  + " is not the catalog's stamp of "
                  + (seq != null ? "commit_seq " + seq : "a commit of snapshot " + snapshotId)
                  + " "
                  + new TreeSet<>(times)
                  + ": "
                  + change);
        }
      }
      // Changes of one key arrive in commit order (with full before-images, as read).
      if (seq != null && key >= 0 && !path.keyOnly()) {
        Object id = row.getField(key);
        Long before = lastSeq.put(id, seq);
        if (before != null && before > seq) {
          problems.add(
              "commit_seq "
                  + seq
                  + " after commit_seq "
                  + before
                  + " for key "
                  + id
                  + ": "
                  + change);
        }
      }
    }

    private Object value(Row change, Meta meta) {
      Integer position = metadata.get(meta);
      return position == null ? null : change.getField(position);
    }
  }

  private static String changeType(RowKind kind) {
    return switch (kind) {
      case INSERT -> "INSERT";
      case UPDATE_BEFORE -> "UPDATE_BEFORE";
      case UPDATE_AFTER -> "UPDATE_AFTER";
      case DELETE -> "DELETE";
    };
  }

  private static String shown(RowKind kind, Row row) {
    Row copy = Row.copy(row);
    copy.setKind(kind);
    return copy.toString();
  }

  private static String abbreviated(List<Row> changes) {
    int shown = Math.min(changes.size(), 40);
    return changes.subList(0, shown).stream()
        .map(Row::toString)
        .collect(
            Collectors.joining(
                ", ",
                "[",
                shown < changes.size() ? ", ... " + (changes.size() - shown) + " more]" : "]"));
  }
}
