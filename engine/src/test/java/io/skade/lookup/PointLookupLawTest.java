package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The lookup law as a property test: over seeded random histories (appends, upserts, key deletes,
 * re-inserts of deleted keys, position deletes, overwrites by a filter that leave position deletes
 * in partly matching files, compactions) of format v2 tables with identifier fields, a probe at any
 * snapshot returns exactly the rows of that snapshot whose key columns hold the probed values, as a
 * multiset. Four key spaces: a long key unpartitioned, an int key bucketed, a (string, string) key
 * partitioned by identity of its first column, and a (date, timestamp) key partitioned by identity
 * of the date.
 *
 * <p>The expected rows are Iceberg's: every snapshot is read whole with Iceberg's generic reader
 * and indexed by key here (values made internal with java.time, matched exactly); one probe in
 * {@value #FILTERED_READ_EVERY}, at random, is also compared with Iceberg's filtered read of that
 * key (exactly matched too: its filter only prunes). Probes are hits, keys deleted (or not live at
 * a pinned snapshot), keys never written inside the written range, and keys out of every range; at
 * the latest snapshot after each commit and at pinned older snapshots (through a table loaded
 * afresh); by the identifier fields and by a non-identifier column ({@code city}, and {@code
 * (region, city)}), whose probes return several rows. One string probe in ten passes a {@code
 * CharSequence} that is not a {@code String}.
 *
 * <p>Sizes: {@code -Dskade.lookup.snapshots} (default {@value #SNAPSHOTS}), {@code
 * -Dskade.lookup.latestProbes} per commit (default {@value #LATEST_PROBES}), {@code
 * -Dskade.lookup.pinnedProbes} per history (default {@value #PINNED_PROBES}), {@code
 * -Dskade.lookup.histories} seeds per key space (default 1); {@code -Dskade.lookup.format=3} runs
 * the histories on format v3 tables (deletion vectors instead of position delete files). A failure
 * names its seed and key space; replay it with {@code -Dskade.lookup.seed=<seed>
 * -Dskade.lookup.keys=<key space>}.
 */
class PointLookupLawTest {
  static final int SNAPSHOTS = 30;
  static final int LATEST_PROBES = 450;
  static final int PINNED_PROBES = 11_500;
  static final int FILTERED_READ_EVERY = 1_000;
  private static final long DEFAULT_SEED = 20260607L;
  private static final List<String> CITIES =
      List.of("Oslo", "Bergen", "Lima", "Quito", "Hanoi", "Perth", "Cork", "Turku");
  static final TableIdentifier ID = TableIdentifier.of("db", "law");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  LookupCaches.Handle caches; // package-private: PointLookupOnS3LawTest runs histories on S3

  @BeforeEach
  void acquireCaches() {
    caches = LookupCaches.acquire();
  }

  @AfterEach
  void releaseCaches() {
    caches.close();
  }

  static Stream<Arguments> histories() {
    long base = Long.getLong("skade.lookup.seed", DEFAULT_SEED);
    int count = Integer.getInteger("skade.lookup.histories", 1);
    String only = System.getProperty("skade.lookup.keys");
    return LongStream.range(base, base + count)
        .boxed()
        .flatMap(
            seed ->
                Arrays.stream(KeySpace.values())
                    .filter(keys -> only == null || keys.name().equalsIgnoreCase(only))
                    .map(keys -> Arguments.of(keys, seed)));
  }

  @ParameterizedTest(name = "{0}, seed {1}")
  @MethodSource("histories")
  void aProbeReturnsExactlyTheRowsIcebergReadsForItsKeyAtItsSnapshot(KeySpace keys, long seed) {
    long started = System.nanoTime();
    History history = new History(catalog.get(), keys, seed);
    history.run(
        Integer.getInteger("skade.lookup.snapshots", SNAPSHOTS),
        Integer.getInteger("skade.lookup.latestProbes", LATEST_PROBES),
        Integer.getInteger("skade.lookup.pinnedProbes", PINNED_PROBES));
    history.report((System.nanoTime() - started) / 1_000_000);
  }

  // ---- key spaces --------------------------------------------------------------------------

  /**
   * The tables, each with a map from a key ordinal {@code n >= 0} to a key: ordinals are written in
   * increasing order (with gaps, never written), so files appended later hold later keys.
   */
  enum KeySpace {
    /** {@code id long}, unpartitioned, small row groups. */
    LONG_UNPARTITIONED(List.of("id")) {
      @Override
      Schema schema() {
        return withValueColumns(Types.NestedField.required(1, "id", Types.LongType.get()));
      }

      @Override
      PartitionSpec spec(Schema schema) {
        return PartitionSpec.unpartitioned();
      }

      @Override
      Map<String, String> properties() {
        return layout(PointLookup.LOOKUP_FILE_PROPERTIES); // LZ4 pages, small dictionaries
      }

      @Override
      List<Object> key(long n) {
        return List.of(1_000 + n);
      }

      @Override
      void setKey(Record row, long n) {
        row.setField("id", 1_000 + n);
      }

      @Override
      List<Object> outOfRange(Random random, long end) {
        return List.of(
            random.nextBoolean()
                ? 999L - random.nextInt(1_000)
                : 1_000L + end + random.nextInt(1_000));
      }

      @Override
      Expression slice(long from, long to) {
        return Expressions.and(
            Expressions.greaterThanOrEqual("id", 1_000 + from),
            Expressions.lessThan("id", 1_000 + to));
      }
    },

    /** {@code id int}, partitioned by {@code bucket(id, 4)}, Parquet's default row groups. */
    INT_BUCKETED(List.of("id")) {
      @Override
      Schema schema() {
        return withValueColumns(Types.NestedField.required(1, "id", Types.IntegerType.get()));
      }

      @Override
      PartitionSpec spec(Schema schema) {
        return PartitionSpec.builderFor(schema).bucket("id", 4).build();
      }

      @Override
      List<Object> key(long n) {
        return List.of(Math.toIntExact(-50_000 + n));
      }

      @Override
      void setKey(Record row, long n) {
        row.setField("id", Math.toIntExact(-50_000 + n));
      }

      @Override
      List<Object> outOfRange(Random random, long end) {
        return List.of(
            random.nextBoolean()
                ? Integer.MIN_VALUE + random.nextInt(1_000)
                : Math.toIntExact(-50_000 + end + random.nextInt(100_000)));
      }

      @Override
      Expression slice(long from, long to) {
        return Expressions.and(
            Expressions.greaterThanOrEqual("id", (int) (-50_000 + from)),
            Expressions.lessThan("id", (int) (-50_000 + to)));
      }
    },

    /**
     * {@code (region string, code string)}, partitioned by {@code identity(region)}, small row
     * groups. Codes sort as their ordinals; a quarter of them are longer than the 16 characters
     * Iceberg keeps of string bounds.
     */
    STRING_IDENTITY(List.of("region", "code")) {
      private static final List<String> REGIONS = List.of("eu", "us", "ap");

      @Override
      Schema schema() {
        return withValueColumns(
            Types.NestedField.required(1, "region", Types.StringType.get()),
            Types.NestedField.required(2, "code", Types.StringType.get()));
      }

      @Override
      PartitionSpec spec(Schema schema) {
        return PartitionSpec.builderFor(schema).identity("region").build();
      }

      @Override
      Map<String, String> properties() {
        return layout(
            Map.of(
                "write.parquet.page-version",
                "v2",
                "write.parquet.compression-codec",
                "snappy",
                "write.parquet.page-row-limit",
                "50"));
      }

      @Override
      List<Object> key(long n) {
        return List.of(REGIONS.get((int) (n % 3)), code(n));
      }

      private String code(long n) {
        return String.format("c%07d", n) + (n % 4 == 0 ? "-customer-account" : "");
      }

      @Override
      void setKey(Record row, long n) {
        row.setField("region", REGIONS.get((int) (n % 3)));
        row.setField("code", code(n));
      }

      @Override
      List<Object> outOfRange(Random random, long end) {
        String region = REGIONS.get(random.nextInt(3));
        // Every code starts with "c0"; "zz" is no region.
        return switch (random.nextInt(5)) {
          case 0 -> List.of("zz", code(random.nextInt((int) end + 1)));
          case 1 -> List.of(region, "d" + random.nextInt(1_000));
          case 2 -> List.of(region, "c9" + random.nextInt(1_000));
          case 3 -> List.of(region, "b" + random.nextInt(1_000));
          default -> List.of(region, "");
        };
      }

      @Override
      List<String> otherProbeColumns() {
        return List.of("region", "city");
      }

      /** One region's codes of the ten ordinals that share all but the last digit of from. */
      @Override
      Expression slice(long from, long to) {
        return Expressions.and(
            Expressions.equal("region", REGIONS.get((int) (from % 3))),
            Expressions.startsWith("code", String.format("c%06d", from / 10)));
      }
    },

    /**
     * {@code (day date, at timestamp)}, partitioned by {@code identity(day)}: key {@code n} is on
     * day {@code n % 4}, at {@code n} seconds (and a few micros) after its midnight.
     */
    DATE_TIMESTAMP_IDENTITY(List.of("day", "at")) {
      private static final LocalDate FIRST_DAY = LocalDate.of(2024, 2, 27);

      @Override
      Schema schema() {
        return withValueColumns(
            Types.NestedField.required(1, "day", Types.DateType.get()),
            Types.NestedField.required(2, "at", Types.TimestampType.withoutZone()));
      }

      @Override
      PartitionSpec spec(Schema schema) {
        return PartitionSpec.builderFor(schema).identity("day").build();
      }

      @Override
      Map<String, String> properties() {
        return layout(
            Map.of(
                "write.parquet.page-version",
                "v2",
                "write.parquet.page-row-limit",
                "20")); // zstd, Iceberg's default
      }

      private LocalDate day(long n) {
        return FIRST_DAY.plusDays(n % 4);
      }

      private LocalDateTime at(long n) {
        return day(n).atStartOfDay().plus(n * 1_000_003L, ChronoUnit.MICROS);
      }

      @Override
      List<Object> key(long n) {
        return List.of((int) day(n).toEpochDay(), micros(at(n)));
      }

      private static long micros(LocalDateTime time) {
        return ChronoUnit.MICROS.between(LocalDateTime.of(1970, 1, 1, 0, 0), time);
      }

      @Override
      void setKey(Record row, long n) {
        row.setField("day", day(n));
        row.setField("at", at(n));
      }

      @Override
      List<Object> outOfRange(Random random, long end) {
        LocalDate day = day(random.nextInt(4));
        return switch (random.nextInt(3)) {
          case 0 ->
              List.of(
                  (int) FIRST_DAY.plusDays(4 + random.nextInt(100)).toEpochDay(),
                  micros(at(random.nextInt((int) end + 1))));
          case 1 ->
              List.of(
                  (int) day.toEpochDay(),
                  micros(day.atStartOfDay()) - 1 - random.nextInt(1_000_000));
          default ->
              List.of(
                  (int) day.toEpochDay(),
                  micros(day.atStartOfDay().plusDays(1)) + random.nextInt(1_000_000));
        };
      }

      @Override
      Expression slice(long from, long to) {
        LocalDate day = day(from);
        return Expressions.and(
            Expressions.equal("day", (int) day.toEpochDay()),
            Expressions.and(
                Expressions.greaterThanOrEqual("at", micros(at(from))),
                Expressions.lessThan("at", micros(at(to)))));
      }
    };

    static final Map<String, String> SMALL_ROW_GROUPS =
        Map.of(
            "write.parquet.row-group-size-bytes", "2048",
            "write.parquet.row-group-check-min-record-count", "16",
            "write.parquet.row-group-check-max-record-count", "64");

    /**
     * Small row groups over {@code pages}: each key space writes its files differently (page
     * versions, codecs, page sizes), so that probes decode every kind of page; the key space
     * without properties keeps Iceberg's defaults.
     */
    static Map<String, String> layout(Map<String, String> pages) {
      Map<String, String> properties = new java.util.HashMap<>(pages);
      properties.putAll(SMALL_ROW_GROUPS);
      return properties;
    }

    final List<String> keyColumns;

    KeySpace(List<String> keyColumns) {
      this.keyColumns = keyColumns;
    }

    abstract Schema schema();

    abstract PartitionSpec spec(Schema schema);

    Map<String, String> properties() {
      return Map.of();
    }

    /** Key {@code n}'s values, internal. */
    abstract List<Object> key(long n);

    /** Sets key {@code n} in a row. */
    abstract void setKey(Record row, long n);

    /** A key beyond every bound of the table's files, given that ordinals are below end. */
    abstract List<Object> outOfRange(Random random, long end);

    /**
     * A filter on the key columns, not aligned with the partitioning, that holds a few keys near
     * {@code from} (those from {@code from} to {@code to - 1}, or a prefix's).
     */
    abstract Expression slice(long from, long to);

    /** Non-identifier columns to probe by besides {@code city}, if any. */
    List<String> otherProbeColumns() {
      return List.of();
    }

    private static Schema withValueColumns(Types.NestedField... key) {
      List<Types.NestedField> columns = new ArrayList<>(List.of(key));
      int next = key.length + 1;
      columns.add(Types.NestedField.optional(next, "city", Types.StringType.get()));
      columns.add(Types.NestedField.optional(next + 1, "amount", Types.IntegerType.get()));
      columns.add(Types.NestedField.optional(next + 2, "note", Types.StringType.get()));
      Set<Integer> identifiers = new HashSet<>();
      for (Types.NestedField field : key) {
        identifiers.add(field.fieldId());
      }
      return new Schema(columns, identifiers);
    }
  }

  // ---- states ------------------------------------------------------------------------------

  /**
   * A snapshot as Iceberg's reader sees it: its rows indexed by the values of each probed column
   * list (rows with a null there are in no entry: null matches nothing).
   */
  private static final class State {
    final int index;
    final long snapshotId;
    final Map<List<String>, Map<String, List<String>>> rowsByColumns = new HashMap<>();
    final List<String> liveKeys = new ArrayList<>();

    /** Written ordinals whose key this snapshot does not hold, computed when first needed. */
    List<Long> notLive;

    State(int index, Table table, List<List<String>> probedColumns) {
      this.index = index;
      this.snapshotId = table.currentSnapshot().snapshotId();
      List<Record> rows = IcebergReference.allRows(table, snapshotId);
      for (List<String> columns : probedColumns) {
        Map<String, List<String>> byValues = new HashMap<>();
        for (Record row : rows) {
          if (columns.stream().allMatch(c -> row.getField(c) != null)) {
            byValues
                .computeIfAbsent(IcebergReference.keyOf(row, columns), k -> new ArrayList<>())
                .add(IcebergReference.canonical(row, table.schema()));
          }
        }
        byValues.values().forEach(Collections::sort);
        rowsByColumns.put(columns, byValues);
      }
      liveKeys.addAll(new TreeSet<>(rowsByColumns.get(probedColumns.get(0)).keySet()));
    }

    List<String> expected(List<String> columns, List<?> values) {
      return rowsByColumns.get(columns).getOrDefault(IcebergReference.keyOf(values), List.of());
    }
  }

  /** What a probe was meant to be, to show the probes cover every case. */
  enum Kind {
    HIT,
    WRITTEN_NOT_LIVE,
    NEVER_WRITTEN,
    OUT_OF_RANGE,
    OTHER_COLUMNS
  }

  // ---- histories ---------------------------------------------------------------------------

  /** A seeded random history of one table, probed as it is written. */
  final class History {
    private final SkadeCatalog catalog;
    private final KeySpace keys;
    private final long seed;
    private final Random random;
    private final Table table;
    private final Schema schema;
    private final TableWriter writer;
    private final List<List<String>> probedColumns = new ArrayList<>();
    private final Map<String, Long> ordinalOfKey = new HashMap<>();
    private final TreeSet<Long> written = new TreeSet<>();
    private final List<Long> neverWritten = new ArrayList<>();
    private final List<State> states = new ArrayList<>();
    private final List<String> operations = new ArrayList<>();
    private final PointLookup.Counters counters = new PointLookup.Counters();
    private final Map<Kind, Integer> latestProbes = new EnumMap<>(Kind.class);
    private final Map<Kind, Integer> pinnedProbes = new EnumMap<>(Kind.class);
    private int filteredReads;
    private int severalRows;
    private long writeNanos;
    private long referenceNanos;
    private long filteredNanos;
    private long lookupNanos;
    private long nextOrdinal;

    History(SkadeCatalog catalog, KeySpace keys, long seed) {
      this.catalog = catalog;
      this.keys = keys;
      this.seed = seed;
      this.random = new Random(seed * 31 + keys.ordinal());
      Schema schema = keys.schema();
      var create =
          catalog
              .buildTable(ID, schema)
              .withPartitionSpec(keys.spec(schema))
              .withProperty("format-version", System.getProperty("skade.lookup.format", "2"));
      keys.properties().forEach(create::withProperty);
      this.table = create.create();
      this.schema = table.schema();
      this.writer = new TableWriter(table);
      probedColumns.add(keys.keyColumns);
      probedColumns.add(List.of("city"));
      if (!keys.otherProbeColumns().isEmpty()) {
        probedColumns.add(keys.otherProbeColumns());
      }
    }

    String context() {
      return keys
          + ", seed "
          + seed
          + " (replay with -Dskade.lookup.seed="
          + seed
          + " -Dskade.lookup.keys="
          + keys
          + ")";
    }

    void run(int snapshots, int latestPerCommit, int pinned) {
      while (states.size() < snapshots) {
        long before = table.currentSnapshot() == null ? -1 : table.currentSnapshot().snapshotId();
        long writing = System.nanoTime();
        String operation = step();
        writeNanos += System.nanoTime() - writing;
        if (table.currentSnapshot() == null || table.currentSnapshot().snapshotId() == before) {
          continue; // nothing to commit
        }
        operations.add(operation);
        long reading = System.nanoTime();
        State state = new State(states.size(), table, probedColumns);
        referenceNanos += System.nanoTime() - reading;
        states.add(state);
        // The table as the writer left it: its current snapshot is the one just committed.
        PointLookup byKey = new PointLookup(table, keys.keyColumns, caches.caches(), counters);
        for (int p = 0; p < latestPerCommit; p++) {
          probeKey(byKey, state, null, latestProbes);
        }
        probeOtherColumns(table, state, null, 3, latestProbes);
        state.notLive = null; // at pinned probes, keys written later are not live either
      }
      // Pinned snapshots, in random order, through the table loaded afresh from the catalog.
      Table loaded = catalog.loadTable(ID);
      PointLookup byKey = new PointLookup(loaded, keys.keyColumns, caches.caches(), counters);
      for (int p = 0; p < pinned; p++) {
        State state = states.get(random.nextInt(states.size()));
        probeKey(byKey, state, state.snapshotId, pinnedProbes);
      }
      for (State state : states) {
        probeOtherColumns(loaded, state, state.snapshotId, 2, pinnedProbes);
      }
    }

    // ---- probes ----------------------------------------------------------------------------

    private void probeKey(PointLookup lookup, State state, Long pinned, Map<Kind, Integer> counts) {
      Kind kind;
      List<Object> values;
      int dice = random.nextInt(100);
      if (dice < 40 && !state.liveKeys.isEmpty()) {
        kind = Kind.HIT;
        values =
            keys.key(ordinalOfKey.get(state.liveKeys.get(random.nextInt(state.liveKeys.size()))));
      } else if (dice < 60 && !notLive(state).isEmpty()) {
        kind = Kind.WRITTEN_NOT_LIVE;
        values = keys.key(notLive(state).get(random.nextInt(notLive(state).size())));
      } else if (dice < 80 && !neverWritten.isEmpty()) {
        kind = Kind.NEVER_WRITTEN;
        values = keys.key(neverWritten.get(random.nextInt(neverWritten.size())));
      } else {
        kind = Kind.OUT_OF_RANGE;
        values = keys.outOfRange(random, nextOrdinal);
      }
      List<String> expected = state.expected(keys.keyColumns, values);
      assertThat(kind == Kind.HIT)
          .as(
              () ->
                  describe(state, pinned, keys.keyColumns, values)
                      + ": whether Iceberg has the key")
          .isEqualTo(!expected.isEmpty());
      counts.merge(kind, 1, Integer::sum);
      check(lookup, state, pinned, keys.keyColumns, probeValues(values), expected);
    }

    /** Some probes give a string key as a CharSequence that is not a String. */
    private List<Object> probeValues(List<Object> values) {
      if (random.nextInt(10) != 0) {
        return values;
      }
      List<Object> probe = new ArrayList<>();
      for (Object value : values) {
        probe.add(value instanceof String s ? new StringBuilder(s) : value);
      }
      return probe;
    }

    /** The ordinals written so far whose keys the state does not hold (deleted, or later). */
    private List<Long> notLive(State state) {
      if (state.notLive == null) {
        Set<String> live = new HashSet<>(state.liveKeys);
        state.notLive =
            written.stream()
                .filter(n -> !live.contains(IcebergReference.keyOf(keys.key(n))))
                .toList();
      }
      return state.notLive;
    }

    private void probeOtherColumns(
        Table on, State state, Long pinned, int probes, Map<Kind, Integer> counts) {
      for (int p = 0; p < probes; p++) {
        List<String> columns = probedColumns.get(1 + random.nextInt(probedColumns.size() - 1));
        List<Object> values = new ArrayList<>();
        for (String column : columns) {
          if (column.equals("city")) {
            values.add(
                random.nextInt(10) == 0 ? "Atlantis" : CITIES.get(random.nextInt(CITIES.size())));
          } else {
            values.add(
                keys.key(random.nextInt((int) nextOrdinal)).get(keys.keyColumns.indexOf(column)));
          }
        }
        PointLookup lookup = new PointLookup(on, columns, caches.caches(), counters);
        counts.merge(Kind.OTHER_COLUMNS, 1, Integer::sum);
        List<String> expected = state.expected(columns, values);
        severalRows += expected.size() > 1 ? 1 : 0;
        check(lookup, state, pinned, columns, values, expected);
      }
    }

    private void check(
        PointLookup lookup,
        State state,
        Long pinned,
        List<String> columns,
        List<Object> values,
        List<String> expected) {
      long looking = System.nanoTime();
      List<Record> rows = lookup.lookup(pinned, values);
      lookupNanos += System.nanoTime() - looking;
      List<String> found = IcebergReference.sortedCanonical(rows, schema);
      assertThat(found).as(() -> describe(state, pinned, columns, values)).isEqualTo(expected);
      if (random.nextInt(FILTERED_READ_EVERY) == 0) {
        filteredReads++;
        long reading = System.nanoTime();
        List<String> filtered =
            IcebergReference.rowsWith(table, state.snapshotId, columns, values).stream()
                .sorted()
                .toList();
        filteredNanos += System.nanoTime() - reading;
        assertThat(found)
            .as(
                () ->
                    describe(state, pinned, columns, values) + ", against Iceberg's filtered read")
            .isEqualTo(filtered);
      }
    }

    private String describe(State state, Long pinned, List<String> columns, List<?> values) {
      return context()
          + ": probe "
          + columns
          + " = "
          + values
          + " at "
          + (pinned == null ? "the latest snapshot" : "pinned snapshot")
          + " #"
          + state.index
          + " ("
          + state.snapshotId
          + ", after "
          + operations.get(state.index)
          + ")";
    }

    void report(long millis) {
      int latest = latestProbes.values().stream().mapToInt(Integer::intValue).sum();
      int pinned = pinnedProbes.values().stream().mapToInt(Integer::intValue).sum();
      LookupStats stats = counters.stats();
      System.out.printf(
          "%s: %d snapshots (%s); %d probes at the latest snapshot %s, %d at"
              + " pinned snapshots %s (%d by other columns found several rows), %d also against"
              + " Iceberg's filtered read; per probe"
              + " %.2f files read, %.2f opens, %.0f bytes, %.1f rows decoded; %d ms: %d writing,"
              + " %d reading snapshots with Iceberg, %d in Iceberg's filtered reads,"
              + " %d in lookups%n",
          context(),
          states.size(),
          String.join(" ", operations),
          latest,
          latestProbes,
          pinned,
          pinnedProbes,
          severalRows,
          filteredReads,
          stats.filesRead() / (double) stats.probes(),
          stats.fileOpens() / (double) stats.probes(),
          stats.bytesRead() / (double) stats.probes(),
          stats.rowsDecoded() / (double) stats.probes(),
          millis,
          writeNanos / 1_000_000,
          referenceNanos / 1_000_000,
          filteredNanos / 1_000_000,
          lookupNanos / 1_000_000);
      assertThat(severalRows)
          .as("%s: probes by other columns that found several rows", context())
          .isPositive();
      for (Map<Kind, Integer> counts : List.of(latestProbes, pinnedProbes)) {
        for (Kind kind : Kind.values()) {
          assertThat(counts.getOrDefault(kind, 0))
              .as(
                  "%s: %s probes of %s",
                  context(),
                  kind,
                  counts == latestProbes ? "the latest snapshots" : "pinned snapshots")
              .isPositive();
        }
      }
    }

    // ---- writes ----------------------------------------------------------------------------

    /** One random write; returns what it was. */
    private String step() {
      if (table.currentSnapshot() == null) {
        writer.append(newRows(400 + random.nextInt(400)));
        return "append";
      }
      int op = random.nextInt(100);
      if (op < 22) {
        writer.append(newRows(20 + random.nextInt(150)));
        return "append";
      } else if (op < 44) {
        writer.upsert(upsertRows());
        return "upsert";
      } else if (op < 56) {
        writer.deleteKeys(deletedKeys());
        return "deleteKeys";
      } else if (op < 62) {
        List<Record> rows = reinsertedRows();
        if (rows.isEmpty()) {
          return "nothing";
        }
        writer.append(rows);
        return "reinsert";
      } else if (op < 76) {
        return deleteSomePositions() ? "deletePositions" : "nothing";
      } else if (op < 92) {
        overwriteSlice();
        return "overwrite";
      } else {
        return compact() ? "compact" : "nothing";
      }
    }

    private List<Record> newRows(int count) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        if (random.nextInt(6) == 0) {
          neverWritten.add(nextOrdinal++); // a gap: a key inside the range, never written
        }
        rows.add(row(nextOrdinal++));
      }
      return rows;
    }

    private Record row(long n) {
      GenericRecord row = GenericRecord.create(schema);
      keys.setKey(row, n);
      row.setField(
          "city", random.nextInt(12) == 0 ? null : CITIES.get(random.nextInt(CITIES.size())));
      row.setField("amount", random.nextInt(20) == 0 ? null : random.nextInt(1_000));
      row.setField("note", "n" + random.nextInt(100_000));
      String key = IcebergReference.keyOf(keys.key(n));
      ordinalOfKey.put(key, n);
      written.add(n);
      return row;
    }

    private List<Long> liveOrdinals() {
      State current = states.get(states.size() - 1);
      return current.liveKeys.stream().map(ordinalOfKey::get).sorted().toList();
    }

    /**
     * Some live keys, mostly a run of neighbours (so the new file's bounds stay narrow), sometimes
     * scattered over the table.
     */
    private List<Long> pickLive(int count) {
      List<Long> live = liveOrdinals();
      if (live.isEmpty()) {
        return List.of();
      }
      Set<Long> picked = new LinkedHashSet<>();
      if (random.nextInt(5) > 0) {
        int start = random.nextInt(live.size());
        for (int i = start; i < Math.min(live.size(), start + count); i++) {
          picked.add(live.get(i));
        }
      } else {
        for (int i = 0; i < count; i++) {
          picked.add(live.get(random.nextInt(live.size())));
        }
      }
      return new ArrayList<>(picked);
    }

    private List<Record> upsertRows() {
      List<Record> rows = new ArrayList<>();
      for (long n : pickLive(1 + random.nextInt(40))) {
        rows.add(row(n));
      }
      if (rows.isEmpty() || random.nextInt(3) == 0) {
        rows.addAll(newRows(1 + random.nextInt(5)));
      }
      return rows;
    }

    private List<Record> deletedKeys() {
      List<Record> doomed = new ArrayList<>();
      for (long n : pickLive(1 + random.nextInt(15))) {
        doomed.add(keyRow(n));
      }
      if (doomed.isEmpty() || (random.nextInt(4) == 0 && !neverWritten.isEmpty())) {
        // A key never written: its delete must not hide anything.
        doomed.add(keyRow(neverWritten.get(random.nextInt(neverWritten.size()))));
      }
      return doomed;
    }

    private Record keyRow(long n) {
      GenericRecord row = GenericRecord.create(schema);
      keys.setKey(row, n);
      return row;
    }

    /** Keys written before but not live now, appended again (no upsert: nothing to replace). */
    private List<Record> reinsertedRows() {
      Set<Long> live = new HashSet<>(liveOrdinals());
      List<Long> dead = written.stream().filter(n -> !live.contains(n)).toList();
      List<Record> rows = new ArrayList<>();
      if (!dead.isEmpty()) {
        int start = random.nextInt(dead.size());
        for (int i = start; i < Math.min(dead.size(), start + 1 + random.nextInt(10)); i++) {
          rows.add(row(dead.get(i)));
        }
      }
      return rows;
    }

    private List<FileScanTask> liveFiles() {
      List<FileScanTask> tasks = new ArrayList<>();
      try (CloseableIterable<FileScanTask> planned = table.newScan().planFiles()) {
        planned.forEach(tasks::add);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      tasks.sort(java.util.Comparator.comparing(task -> task.file().location()));
      return tasks;
    }

    private boolean deleteSomePositions() {
      List<FileScanTask> tasks = liveFiles();
      if (tasks.isEmpty()) {
        return false;
      }
      Map<String, List<Long>> positions = new HashMap<>();
      for (int f = 0; f < 1 + random.nextInt(3); f++) {
        DataFile file = tasks.get(random.nextInt(tasks.size())).file();
        List<Long> inFile = positions.computeIfAbsent(file.location(), l -> new ArrayList<>());
        for (int i = 0; i < 1 + random.nextInt(12); i++) {
          inFile.add((long) random.nextInt((int) file.recordCount()));
        }
      }
      writer.deletePositions(positions);
      return true;
    }

    /**
     * An overwrite of the rows of one city within a slice of keys: the slice is not the
     * partitioning, so files partly matching get position deletes. Most matching rows come back
     * with new values; some are dropped.
     */
    private void overwriteSlice() {
      long from = random.nextInt((int) nextOrdinal);
      long to = from + 1 + random.nextInt(100);
      String city = CITIES.get(random.nextInt(CITIES.size()));
      Expression filter = Expressions.and(keys.slice(from, to), Expressions.equal("city", city));
      List<Record> rows = new ArrayList<>();
      Evaluator exactly = new Evaluator(schema.asStruct(), filter);
      InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct());
      try (CloseableIterable<Record> matching = IcebergGenerics.read(table).where(filter).build()) {
        for (Record row : matching) {
          if (exactly.eval(internal.wrap(row)) && random.nextInt(4) > 0) {
            Record again = row.copy();
            again.setField("amount", random.nextInt(1_000));
            again.setField("note", "o" + random.nextInt(100_000));
            rows.add(again);
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      writer.overwrite(filter, rows);
    }

    /** A compaction: every data and delete file rewritten into files of the live rows. */
    private boolean compact() {
      Set<DataFile> dataFiles = new HashSet<>();
      Set<DeleteFile> deleteFiles = new HashSet<>();
      for (FileScanTask task : liveFiles()) {
        dataFiles.add(task.file());
        deleteFiles.addAll(task.deletes());
      }
      if (dataFiles.isEmpty()) {
        return false;
      }
      long base = table.currentSnapshot().snapshotId();
      List<Record> rows = IcebergReference.allRows(table, base);
      table
          .newRewrite()
          .validateFromSnapshot(base)
          .rewriteFiles(
              dataFiles, deleteFiles, new HashSet<>(writer.writeDataFiles(rows)), Set.of())
          .commit();
      return true;
    }
  }
}
