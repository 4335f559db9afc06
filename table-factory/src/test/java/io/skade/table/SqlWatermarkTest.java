package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.BucketUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Event time in SQL, at parallelism 2: {@code WATERMARK FOR commit_time AS SOURCE_WATERMARK()} is
 * the readers' own exact watermark on commit time, and {@code WATERMARK FOR c AS c - INTERVAL ...}
 * is generated in the source; filters stay pushed down either way (EXPLAIN); a table without
 * commits is marked idle after {@code scan.watermark.idle-timeout}.
 */
class SqlWatermarkTest extends SqlTestBase {
  private static final Schema EVENTS =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "qty", Types.IntegerType.get()),
              Types.NestedField.optional(3, "ts", Types.TimestampType.withZone())),
          Set.of(1));

  private static final String COLUMNS =
      "id BIGINT, qty INT, ts TIMESTAMP_LTZ(6), PRIMARY KEY (id) NOT ENFORCED, commit_time"
          + " TIMESTAMP_LTZ(3) METADATA VIRTUAL";

  /** A watermark on the rows' timestamps, at the millisecond precision Flink's watermarks take. */
  private static final String TS_WATERMARK =
      COLUMNS
          + ", ts3 AS CAST(ts AS TIMESTAMP_LTZ(3)), WATERMARK FOR ts3 AS ts3 - INTERVAL '1' SECOND";

  private static final String SOURCE_WATERMARK =
      COLUMNS + ", WATERMARK FOR commit_time AS SOURCE_WATERMARK()";

  /**
   * A tumbling window on commit time over the changelog, while commits land (a backlog, then live,
   * some in one bucket only so that one reader is given nothing for a while), with watermark
   * alignment holding back a reader ahead, equals the grouping of the same changes by a bounded
   * read: no change was dropped as late, and every window closed.
   */
  @Test
  @Timeout(240)
  void aTumblingWindowOnCommitTimeEqualsTheGroupingOfTheSameChanges() throws Exception {
    Table events = createEvents(4);
    TableWriter writer = new TableWriter(events);
    long id = 0;
    for (int commit = 0; commit < 8; commit++) { // the backlog
      id = append(writer, events, id, commit, false);
    }
    TableEnvironment sql = streamingUtc();
    declare(
        sql,
        "events",
        SOURCE_WATERMARK,
        "scan.startup.mode",
        "earliest",
        "scan.append-only",
        "true",
        "scan.watermark.alignment.group",
        "commits",
        "scan.watermark.alignment.max-drift",
        "200 ms");
    TableResult result =
        sql.executeSql(
            "SELECT window_start, COUNT(*) AS n, SUM(qty) AS q FROM TABLE(TUMBLE(TABLE events,"
                + " DESCRIPTOR(commit_time), INTERVAL '1' SECOND)) GROUP BY window_start,"
                + " window_end");
    List<Row> closed = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, closed);
    try {
      // Live commits until they span three seconds of commit time.
      for (int commit = 8; commit < 8 + 40 || secondsSpanned(events) < 3; commit++) {
        id = append(writer, events, id, commit, commit % 10 < 4);
      }
      // The next commit is stamped after the last window's end: the clock passes it first.
      long lastWindowEnd = (lastStamp(events) / 1000 + 1) * 1000;
      for (long now = System.currentTimeMillis();
          now < lastWindowEnd;
          now = System.currentTimeMillis()) {
        Thread.sleep(lastWindowEnd - now);
      }
      Table other =
          catalog.catalog().createTable(TableIdentifier.of("default_database", "other"), EVENTS);
      new TableWriter(other).append(List.of(record(other, 1L, 1, null))); // moves the log on

      Map<Instant, List<Long>> expected = grouped(sql);
      // A change dropped as late would leave its window short or missing: never equal.
      await("every window closed, each equal to the grouping of its changes")
          .atMost(Duration.ofMinutes(2))
          .pollInterval(Duration.ofMillis(100))
          .untilAsserted(() -> assertThat(windows(closed)).isEqualTo(expected));
      assertThat(expected).hasSizeGreaterThanOrEqualTo(3);
    } finally {
      result.getJobClient().orElseThrow().cancel().get();
      collector.join();
    }
  }

  /** The windows closed so far: their start, count and sum; each result final. */
  private static Map<Instant, List<Long>> windows(List<Row> closed) {
    Map<Instant, List<Long>> windows = new HashMap<>();
    synchronized (closed) {
      for (Row row : closed) {
        assertThat(row.getKind()).as("a window's result is final").isEqualTo(RowKind.INSERT);
        windows.put(
            ((LocalDateTime) row.getField("window_start")).toInstant(ZoneOffset.UTC),
            List.of((Long) row.getField("n"), ((Integer) row.getField("q")).longValue()));
      }
    }
    return windows;
  }

  /**
   * The changes of {@code events} grouped by the second of their commit time, by Flink's regular
   * aggregation over a bounded read of the changelog: no watermark decides what counts.
   */
  private Map<Instant, List<Long>> grouped(TableEnvironment sql) throws Exception {
    declare(
        sql,
        "events_bounded",
        COLUMNS,
        "table",
        "events",
        "scan.startup.mode",
        "earliest",
        "scan.bounded",
        "true");
    Map<Instant, List<Long>> grouped = new HashMap<>();
    for (Row row :
        collect(
            sql,
            "SELECT FLOOR(commit_time TO SECOND) AS w, COUNT(*) AS n, SUM(qty) AS q FROM"
                + " events_bounded GROUP BY FLOOR(commit_time TO SECOND)")) {
      Instant window = (Instant) row.getField("w");
      if (row.getKind() == RowKind.INSERT || row.getKind() == RowKind.UPDATE_AFTER) {
        grouped.put(
            window, List.of((Long) row.getField("n"), ((Integer) row.getField("q")).longValue()));
      } else {
        grouped.remove(window);
      }
    }
    return grouped;
  }

  @Test
  void explainShowsTheWatermarkAndFiltersOnOtherColumnsPushedIntoTheSource() throws Exception {
    createEvents(1);
    TableEnvironment sql = streamingUtc();
    declare(sql, "by_commit", SOURCE_WATERMARK, "table", "events");
    declare(sql, "by_ts", TS_WATERMARK, "table", "events");
    for (String table : List.of("by_commit", "by_ts")) {
      String plan = sql.explainSql("SELECT id, qty FROM " + table + " WHERE qty > 5 AND id < 100");
      String optimized = plan.substring(plan.indexOf("== Optimized Execution Plan =="));
      String scan = optimized.substring(optimized.indexOf("TableSourceScan"));
      assertThat(optimized).as(plan).doesNotContain("WatermarkAssigner");
      assertThat(scan.substring(0, scan.indexOf('\n')))
          .as(plan)
          .contains("watermark=[")
          .contains("filter=[and(>(qty, 5), <(id, 100))]");
    }
  }

  /**
   * A watermark on a column of the rows is the planner's, generated in the source per split: while
   * the job runs on, its windows close, each equal to the grouping of its rows (those with the
   * column at or before one second before the newest, which a last commit in every bucket sets an
   * hour later, so that each reader's watermark passes the windows before it).
   */
  @Test
  @Timeout(120)
  void aWatermarkOnADataColumnIsGeneratedInTheSource() throws Exception {
    Table events = createEvents(4);
    TableWriter writer = new TableWriter(events);
    Instant base = Instant.parse("2026-01-01T00:00:00Z");
    Map<Instant, List<Long>> expected = new HashMap<>();
    for (int commit = 0; commit < 6; commit++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        long id = commit * 100L + i;
        Instant ts = base.plusMillis(id * 37);
        rows.add(record(events, id, (int) (id % 7), ts.atOffset(ZoneOffset.UTC)));
        if (id % 7 > 0) { // WHERE qty > 0
          Instant window = ts.minusMillis(Math.floorMod(ts.toEpochMilli(), 2000));
          List<Long> sums = expected.getOrDefault(window, List.of(0L, 0L));
          expected.put(window, List.of(sums.get(0) + 1, sums.get(1) + id % 7));
        }
      }
      writer.append(rows);
    }
    List<Record> last = new ArrayList<>();
    Set<Long> buckets = new TreeSet<>();
    for (long id = 10_000; buckets.size() < 4; id++) {
      if (buckets.add((long) (BucketUtil.hash(id) & Integer.MAX_VALUE) % 4)) {
        last.add(record(events, id, 1, base.plusSeconds(3600).atOffset(ZoneOffset.UTC)));
      }
    }
    writer.append(last);
    TableEnvironment sql = streamingUtc();
    declare(
        sql, "events", TS_WATERMARK, "scan.startup.mode", "earliest", "scan.append-only", "true");
    TableResult result =
        sql.executeSql(
            "SELECT window_start, COUNT(*) AS n, SUM(qty) AS q FROM TABLE(TUMBLE(TABLE events,"
                + " DESCRIPTOR(ts3), INTERVAL '2' SECOND)) WHERE qty > 0 GROUP BY window_start,"
                + " window_end");
    List<Row> closed = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, closed);
    try {
      await("the windows before the newest rows closed, each equal to the grouping of its rows")
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(100))
          .untilAsserted(() -> assertThat(windows(closed)).isEqualTo(expected));
    } finally {
      result.getJobClient().orElseThrow().cancel().get();
      collector.join();
    }
  }

  /**
   * A table that sees no commits does not hold back a job's other input past the idle timeout: an
   * event-time join of a generator's ticks with the table's changes emits the ticks no change
   * matched, which it does only once the watermarks of both inputs passed them.
   */
  @Test
  @Timeout(120)
  void aTableWithoutCommitsIsMarkedIdleAfterTheIdleTimeout() throws Exception {
    Table events = createEvents(1);
    new TableWriter(events).append(List.of(record(events, 1L, 1, null)));
    TableEnvironment sql = streamingUtc();
    declare(
        sql,
        "events",
        SOURCE_WATERMARK,
        "scan.watermark.idle-timeout",
        "300 ms",
        "scan.append-only",
        "true");
    sql.executeSql(
        "CREATE TEMPORARY TABLE ticks (n BIGINT, tick_time TIMESTAMP_LTZ(3),"
            + " WATERMARK FOR tick_time AS tick_time) WITH ('connector' = 'datagen',"
            + " 'rows-per-second' = '20', 'fields.n.min' = '1000', 'fields.n.max' = '2000')");
    String query =
        "SELECT t.n, t.tick_time FROM ticks t LEFT JOIN events e ON t.n = e.id AND"
            + " e.commit_time BETWEEN t.tick_time - INTERVAL '1' SECOND AND t.tick_time";
    assertThat(sql.explainSql(query)).contains("IntervalJoin").contains("events");
    TableResult joined = sql.executeSql(query);
    List<Row> unmatched = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(joined, unmatched);
    try {
      await("ticks the table's changes did not match")
          .atMost(Duration.ofMinutes(1))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> !unmatched.isEmpty());
    } finally {
      joined.getJobClient().orElseThrow().cancel().get();
      collector.join();
    }
  }

  @Test
  void aSourceWatermarkOnAColumnOtherThanCommitTimeIsRefusedWithTheFix() {
    createEvents(1);
    TableEnvironment sql = streamingUtc();
    declare(
        sql,
        "events",
        COLUMNS + ", ts3 AS CAST(ts AS TIMESTAMP_LTZ(3)), WATERMARK FOR ts3 AS SOURCE_WATERMARK()");
    assertThatThrownBy(() -> sql.explainSql("SELECT * FROM events"))
        .rootCause()
        .isInstanceOf(ValidationException.class)
        .hasMessageContaining("default_database.events")
        .hasMessageContaining("WATERMARK FOR ts3 AS SOURCE_WATERMARK()")
        .hasMessageContaining("METADATA FROM 'commit_time'")
        .hasMessageContaining("WATERMARK FOR ts3 AS ts3 - INTERVAL");
  }

  /** Streaming at parallelism 2, in UTC. */
  private static TableEnvironment streamingUtc() {
    TableEnvironment sql = streaming();
    sql.getConfig().set("parallelism.default", "2");
    sql.getConfig().set("table.local-time-zone", "UTC");
    return sql;
  }

  private Table createEvents(int buckets) {
    catalog.catalog().createNamespace(Namespace.of("default_database"));
    PartitionSpec spec =
        buckets > 1
            ? PartitionSpec.builderFor(EVENTS).bucket("id", buckets).build()
            : PartitionSpec.unpartitioned();
    return catalog
        .catalog()
        .createTable(TableIdentifier.of("default_database", "events"), EVENTS, spec);
  }

  /**
   * One commit of new rows after {@code id} (of one bucket's ids only, when asked); the next id.
   */
  private static long append(
      TableWriter writer, Table events, long id, int commit, boolean oneBucket) {
    List<Record> rows = new ArrayList<>();
    for (int i = 0; i < 8; i++, id++) {
      if (!oneBucket || (BucketUtil.hash(id) & Integer.MAX_VALUE) % 4 == 0) {
        rows.add(record(events, id, commit % 5 + i, null));
      }
    }
    writer.append(rows);
    return id;
  }

  /** The distinct seconds of commit time the table's commits span. */
  private long secondsSpanned(Table events) {
    TreeSet<Long> seconds = new TreeSet<>();
    stamps(events).forEach(micros -> seconds.add(micros / 1_000_000));
    return seconds.size();
  }

  private long lastStamp(Table events) {
    return stamps(events).stream().mapToLong(Long::longValue).max().orElseThrow() / 1000;
  }

  /** The catalog's stamps of the table's commits, microseconds. */
  private List<Long> stamps(Table events) {
    String key = catalog.catalog().commitTableKey(TableIdentifier.of("default_database", "events"));
    List<Long> stamps = new ArrayList<>();
    for (CommitEvent event : catalog.catalog().commitsSince(0L)) {
      if (event.tableKey().equals(key)) {
        stamps.add(event.tsMicros());
      }
    }
    return stamps;
  }
}
