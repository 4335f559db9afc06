package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.write.TableWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.runtime.typeutils.ExternalTypeInfo;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types.LongType;
import org.apache.iceberg.types.Types.NestedField;
import org.apache.iceberg.types.Types.StringType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lookup joins as of the probe's event time ({@code ON p.k = d.id AND d.as_of = p.event_time}) at
 * parallelism 2, differential against Flink's own event-time temporal join over the table's
 * changelog as a versioned table ({@code FOR SYSTEM_TIME AS OF p.rowtime} on a changelog read with
 * {@code commit_time} as its time): on a history of upserts and deletes, probes at random times
 * inside it, before it, after it, exactly at a commit's time and a millisecond before, get the same
 * rows, synchronously and asynchronously through skade's row cache. A probe older than {@code
 * lookup.as-of.retention} fails the job naming it; queries the engine could not answer are refused
 * at planning.
 */
class SqlAsOfLookupTest extends SqlTestBase {
  private static final org.apache.iceberg.Schema SCHEMA =
      new org.apache.iceberg.Schema(
          List.of(
              NestedField.required(1, "id", LongType.get()),
              NestedField.optional(2, "v", StringType.get())),
          Set.of(1));
  private static final TableIdentifier DIM = TableIdentifier.of("shop", "dim");
  private static final String AS_OF_COLUMNS =
      "id BIGINT, v STRING, as_of TIMESTAMP_LTZ(3) METADATA VIRTUAL, PRIMARY KEY (id) NOT ENFORCED";
  private static final int KEYS = 6;

  private Table dim;
  private StreamExecutionEnvironment streams;

  @BeforeEach
  void createDim() {
    catalog.catalog().createNamespace(Namespace.of("shop"));
    dim = catalog.catalog().buildTable(DIM, SCHEMA).withProperty("format-version", "2").create();
  }

  @Test
  @Timeout(240)
  void aLookupAsOfEventTimeEqualsFlinksEventTimeTemporalJoinOverTheChangelog() throws Exception {
    long seed = System.nanoTime();
    System.out.println("SqlAsOfLookupTest seed " + seed);
    Random random = new Random(seed);
    List<Long> commitMillis = writeHistory(random, 24);

    // probes: at each commit's millisecond and the one before, random times in and around the
    // history, well before it and well after it
    long first = commitMillis.get(0);
    long last = commitMillis.get(commitMillis.size() - 1);
    List<Long> times = new ArrayList<>();
    for (long at : commitMillis) {
      times.add(at);
      times.add(at - 1);
    }
    for (int i = 0; i < 150; i++) {
      times.add(first - 50 + (long) (random.nextDouble() * (last - first + 100)));
    }
    times.add(first - 60_000);
    times.add(last + 60_000);
    times.sort(Comparator.naturalOrder()); // the temporal join's probes come in time order
    List<Row> probes = new ArrayList<>();
    for (int i = 0; i < times.size(); i++) {
      // keys 0 and KEYS + 1 are never written
      probes.add(Row.of(i, (long) random.nextInt(KEYS + 2), Instant.ofEpochMilli(times.get(i))));
    }

    StreamTableEnvironment sql = streaming(2);
    declare(
        sql,
        "dim_sync",
        AS_OF_COLUMNS,
        "database",
        "shop",
        "table",
        "dim",
        "lookup.as-of.retention",
        "1 d");
    declare(
        sql,
        "dim_async",
        AS_OF_COLUMNS,
        "database",
        "shop",
        "table",
        "dim",
        "lookup.as-of.retention",
        "1 d",
        "lookup.async",
        "true",
        "lookup.row-cache.max-rows",
        "1000");
    declare(
        sql,
        "dim_versions",
        "id BIGINT, v STRING, commit_time TIMESTAMP_LTZ(3) METADATA VIRTUAL,"
            + " PRIMARY KEY (id) NOT ENFORCED, WATERMARK FOR commit_time AS SOURCE_WATERMARK()",
        "database",
        "shop",
        "table",
        "dim",
        "scan.startup.mode",
        "earliest",
        "scan.bounded",
        "true");
    registerProbes(sql, probes);

    List<Row> expected =
        collect(
            sql,
            "SELECT p.pid, d.v FROM probes_rt AS p LEFT JOIN dim_versions FOR SYSTEM_TIME AS OF"
                + " p.rt AS d ON p.k = d.id");
    assertThat(expected).hasSize(probes.size());
    assertThat(expected.stream().filter(row -> row.getField(1) != null).count())
        .as("the history answers some probes with a row")
        .isGreaterThan(probes.size() / 4);
    for (String table : List.of("dim_sync", "dim_async")) {
      List<Row> joined =
          collect(
              sql,
              "SELECT p.pid, d.v, d.as_of, p.et FROM probes_pt AS p LEFT JOIN "
                  + table
                  + " FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id AND d.as_of = p.et");
      assertThat(joined.stream().map(row -> Row.of(row.getField(0), row.getField(1))).toList())
          .as("%s, seed %d", table, seed)
          .containsExactlyInAnyOrderElementsOf(expected);
      for (Row row : joined) {
        if (row.getField(1) != null) {
          assertThat(row.getField(2))
              .as("the joined row carries the probe's time")
              .isEqualTo(row.getField(3));
        }
      }
    }
  }

  @Test
  @Timeout(120)
  void aProbeOlderThanTheRetentionFailsTheJobNamingIt() throws Exception {
    writeHistory(new Random(1), 2);
    StreamTableEnvironment sql = streaming(1);
    declare(
        sql,
        "dim_hour",
        AS_OF_COLUMNS,
        "database",
        "shop",
        "table",
        "dim",
        "lookup.as-of.retention",
        "1 h");
    registerProbes(sql, List.of(Row.of(0, 1L, Instant.now().minus(Duration.ofHours(2)))));
    assertThatThrownBy(
            () ->
                collect(
                    sql,
                    "SELECT p.pid, d.v FROM probes_pt AS p JOIN dim_hour FOR SYSTEM_TIME AS OF"
                        + " p.pt AS d ON p.k = d.id AND d.as_of = p.et"))
        .hasStackTraceContaining("skade lookup on shop.dim: a lookup as of")
        .hasStackTraceContaining("is older than the as-of retention (PT1H")
        .hasStackTraceContaining("Raise the retention");
  }

  @Test
  void queriesAnAsOfLookupCannotAnswerAreRefusedWhenPlanned() {
    StreamTableEnvironment sql = streaming(1);
    declare(sql, "dim", AS_OF_COLUMNS, "database", "shop", "table", "dim");
    registerProbes(sql, List.of(Row.of(0, 1L, Instant.now())));
    String plan =
        sql.explainSql(
            "SELECT p.pid, d.v FROM probes_pt AS p JOIN dim FOR SYSTEM_TIME AS OF p.pt AS d ON"
                + " p.k = d.id AND d.as_of = CAST(p.ts AS TIMESTAMP_LTZ(3))");
    assertThat(plan)
        .as("a probe time of another type, cast, is a lookup key")
        .containsPattern("LookupJoin\\(table=\\[.*dim\\].*lookup=\\[id=k, as_of=");
    declare(
        sql, "dim_full", AS_OF_COLUMNS, "database", "shop", "table", "dim", "lookup.cache", "FULL");
    assertThatThrownBy(() -> sql.explainSql("SELECT id, as_of FROM dim"))
        .hasStackTraceContaining(
            "skade table shop.dim: the metadata column 'as_of' has a value only in a lookup join"
                + " as of a time");
    assertThatThrownBy(
            () ->
                sql.explainSql(
                    "SELECT p.pid, d.as_of FROM probes_pt AS p JOIN dim FOR SYSTEM_TIME AS OF p.pt"
                        + " AS d ON p.k = d.id"))
        .hasStackTraceContaining("the metadata column 'as_of' has a value only as a lookup key")
        .hasStackTraceContaining("d.as_of = <the probe's time>");
    assertThatThrownBy(
            () ->
                sql.explainSql(
                    "SELECT p.pid, d.v FROM probes_pt AS p JOIN dim_full FOR SYSTEM_TIME AS OF p.pt"
                        + " AS d ON p.k = d.id AND d.as_of = p.et"))
        .hasStackTraceContaining("'lookup.cache' = 'FULL' keeps only the latest rows")
        .hasRootCauseInstanceOf(ValidationException.class);
  }

  /**
   * Writes {@code commits} commits of upserts and deletes of keys 1..KEYS to the table, each in a
   * millisecond of its own (as {@code commit_time} shows them), and returns their commit times.
   */
  private List<Long> writeHistory(Random random, int commits) {
    TableWriter writer = new TableWriter(dim);
    List<Long> millis = new ArrayList<>();
    for (int c = 0; c < commits; c++) {
      long snapshot;
      if (c > 0 && random.nextInt(4) == 0) {
        snapshot = writer.deleteKeys(List.of(row(1 + random.nextInt(KEYS), null))).snapshotId();
      } else {
        List<Record> rows = new ArrayList<>();
        for (int k = 1 + random.nextInt(KEYS); k <= KEYS; k += 1 + random.nextInt(3)) {
          rows.add(row(k, "v" + c + "-" + k));
        }
        snapshot = writer.upsert(rows).snapshotId();
      }
      long stamp = catalog.catalog().commitOf(DIM, snapshot).orElseThrow().tsMicros() / 1000;
      millis.add(stamp);
      await().pollInterval(Duration.ofMillis(1)).until(() -> System.currentTimeMillis() > stamp);
    }
    return millis;
  }

  private static Record row(long id, String v) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, v);
    return row;
  }

  /**
   * The probes {@code (pid, k, et)} in time order, as {@code probes_rt} (event time {@code rt} =
   * {@code et}, for the temporal join) and {@code probes_pt} (processing time {@code pt}, for the
   * lookup join).
   */
  private void registerProbes(StreamTableEnvironment sql, List<Row> probes) {
    DataStream<Row> rows =
        streams.fromData(
            ExternalTypeInfo.of(
                DataTypes.ROW(
                    DataTypes.FIELD("pid", DataTypes.INT()),
                    DataTypes.FIELD("k", DataTypes.BIGINT()),
                    DataTypes.FIELD("et", DataTypes.TIMESTAMP_LTZ(3)))),
            probes.toArray(new Row[0]));
    DataStream<Row> timed =
        rows.assignTimestampsAndWatermarks(
            WatermarkStrategy.<Row>forMonotonousTimestamps()
                .withTimestampAssigner((row, ts) -> ((Instant) row.getField(2)).toEpochMilli()));
    sql.createTemporaryView(
        "probes_rt",
        sql.fromDataStream(
            timed,
            probeColumns()
                .columnByMetadata("rt", DataTypes.TIMESTAMP_LTZ(3), "rowtime")
                .watermark("rt", "SOURCE_WATERMARK()")
                .build()));
    sql.createTemporaryView(
        "probes_pt",
        sql.fromDataStream(
            rows,
            probeColumns()
                .columnByExpression("pt", "PROCTIME()")
                .columnByExpression("ts", "CAST(et AS TIMESTAMP(3))")
                .build()));
  }

  /** The probes' own columns, as both views declare them. */
  private static Schema.Builder probeColumns() {
    return Schema.newBuilder()
        .column("pid", DataTypes.INT())
        .column("k", DataTypes.BIGINT())
        .column("et", DataTypes.TIMESTAMP_LTZ(3));
  }

  /** Streaming at {@code parallelism}, restarts off: a failed job fails the test at once. */
  private StreamTableEnvironment streaming(int parallelism) {
    Configuration config = new Configuration();
    config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    streams = StreamExecutionEnvironment.getExecutionEnvironment(config);
    streams.setParallelism(parallelism);
    return StreamTableEnvironment.create(streams);
  }
}
