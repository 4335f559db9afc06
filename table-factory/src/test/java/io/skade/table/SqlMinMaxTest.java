package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.write.TableWriter;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code MIN} and {@code MAX} (with {@code COUNT(*)}) at parallelism 2, differential against
 * Flink's own evaluation of the same aggregates over the same rows (behind a filter every row
 * passes, which keeps them out of the source): answered from the manifests' bounds (pushed into the
 * source, as {@code EXPLAIN} shows) of integer, decimal, date, timestamp and boolean columns, nulls
 * and a column null in a whole file included, and read from the rows where files keep no bounds;
 * left to Flink on a table with deletes and for a string column; exact when the row holding the
 * minimum is deleted between planning and running; null over an empty table.
 */
class SqlMinMaxTest extends SqlTestBase {
  private static final String COLUMNS =
      "id BIGINT NOT NULL, qty INT, price DECIMAL(10, 2), d DATE, ts TIMESTAMP(6), ok BOOLEAN,"
          + " name STRING";
  private static final String AGGREGATES =
      "COUNT(*), MIN(id), MAX(id), MIN(qty), MAX(qty), MIN(price), MAX(price), MIN(d),"
          + " MAX(d), MIN(ts), MAX(ts), MIN(ok), MAX(ok)";

  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "qty", Types.IntegerType.get()),
              Types.NestedField.optional(3, "price", Types.DecimalType.of(10, 2)),
              Types.NestedField.optional(4, "d", Types.DateType.get()),
              Types.NestedField.optional(5, "ts", Types.TimestampType.withoutZone()),
              Types.NestedField.optional(6, "ok", Types.BooleanType.get()),
              Types.NestedField.optional(7, "name", Types.StringType.get())),
          Set.of(1));

  private StreamTableEnvironment pushing;

  @BeforeEach
  void environments() {
    pushing = batch(new Configuration(), 2);
    catalog.catalog().createNamespace(Namespace.of("default_database"));
  }

  @Test
  void minAndMaxComeFromTheBoundsWhereNoDeleteAppliesAndEqualFlinksOwnEverywhere()
      throws Exception {
    table("appends");
    check("appends", AGGREGATES, true);
    check("appends", "MIN(name), MAX(name)", false); // string bounds may be truncated

    // Files without bounds (only counts kept): pushed, and the source reads the rows instead.
    Table noBounds = table("no_bounds", "counts");
    assertThat(noBounds.currentSnapshot().addedDataFiles(noBounds.io()))
        .allMatch(file -> file.lowerBounds() == null || file.lowerBounds().isEmpty());
    check("no_bounds", AGGREGATES, true);

    table("deletes");
    Table deletes = catalog.catalog().loadTable(TableIdentifier.of("default_database", "deletes"));
    new TableWriter(deletes)
        .deleteKeys(List.of(record(deletes, 0L, null, null, null, null, null, null)));
    check("deletes", AGGREGATES, false);

    catalog
        .catalog()
        .buildTable(TableIdentifier.of("default_database", "no_rows"), SCHEMA)
        .create();
    check("no_rows", AGGREGATES, true);
  }

  @Test
  void aMinimumPushedBeforeItsRowIsDeletedIsStillExact() throws Exception {
    Table table = table("late_deletes");
    declareOnce(pushing, "late_deletes");
    String query = "SELECT MIN(qty), MAX(qty), COUNT(*) FROM late_deletes";
    assertThat(pushing.explainSql(query)).contains("aggFunctions=");
    DataStream<Row> pushed = pushing.toDataStream(pushing.sqlQuery(query));
    Row before = flinkOwn("late_deletes", query);
    // After planning, before the job runs: the rows holding the least and greatest qty go.
    new TableWriter(table)
        .deleteKeys(
            List.of(
                record(table, lowestQtyId, null, null, null, null, null, null),
                record(table, highestQtyId, null, null, null, null, null, null)));
    Row after = flinkOwn("late_deletes", query);
    assertThat(after).isNotEqualTo(before);
    assertThat(pushed.executeAndCollect(10)).containsExactly(after);
  }

  private long lowestQtyId;
  private long highestQtyId;

  /**
   * {@code SELECT aggregates FROM name} through skade equals Flink's own evaluation over a scan,
   * pushed into the source or not as expected.
   */
  private void check(String name, String aggregates, boolean pushed) throws Exception {
    declareOnce(pushing, name);
    String query = "SELECT " + aggregates + " FROM " + name;
    String plan = pushing.explainSql(query);
    if (pushed) {
      assertThat(plan).as(name).contains("aggFunctions=");
    } else {
      assertThat(plan).as(name).doesNotContain("aggFunctions=");
    }
    Row expected = flinkOwn(name, query);
    assertThat(collect(pushing, query)).as(name + ": " + aggregates).containsExactly(expected);
  }

  private final Set<String> declared = new java.util.HashSet<>();

  /** Declares the skade table {@code name} in {@code env}, unless it was already. */
  private void declareOnce(StreamTableEnvironment env, String name) {
    if (declared.add(System.identityHashCode(env) + "/" + name)) {
      declare(env, name, COLUMNS);
    }
  }

  /**
   * The query's one row as Flink computes it over a scan of the table's rows: behind a filter every
   * row passes ({@code id >= 0}), which skade takes, so the aggregates stay in Flink.
   */
  private Row flinkOwn(String name, String query) throws Exception {
    declareOnce(pushing, name);
    String scanned = query + " WHERE id >= 0";
    assertThat(pushing.explainSql(scanned)).doesNotContain("aggFunctions=");
    List<Row> rows = collect(pushing, scanned);
    assertThat(rows).hasSize(1);
    return rows.get(0);
  }

  /**
   * Table {@code name}: 3 files of 100 rows with random values, some null; in the third file {@code
   * price} is null throughout (a file without bounds for it).
   */
  private Table table(String name) {
    return table(name, "truncate(16)");
  }

  /** As {@link #table(String)}, the files' column metrics kept as {@code metrics} says. */
  private Table table(String name, String metrics) {
    Table table =
        catalog
            .catalog()
            .buildTable(TableIdentifier.of("default_database", name), SCHEMA)
            .withProperty("format-version", "2")
            .withProperty("write.metadata.metrics.default", metrics)
            .create();
    Random random = new Random(name.hashCode());
    TableWriter writer = new TableWriter(table);
    int lowest = Integer.MAX_VALUE;
    int highest = Integer.MIN_VALUE;
    for (int file = 0; file < 3; file++) {
      List<Record> rows = new ArrayList<>();
      for (int n = 0; n < 100; n++) {
        long id = file * 100L + n;
        Integer qty = random.nextInt(10) == 0 ? null : random.nextInt(2_000_000) - 1_000_000;
        if (qty != null && qty < lowest) {
          lowest = qty;
          lowestQtyId = id;
        }
        if (qty != null && qty > highest) {
          highest = qty;
          highestQtyId = id;
        }
        rows.add(
            record(
                table,
                id,
                qty,
                file == 2 ? null : BigDecimal.valueOf(random.nextInt(1_000_000) - 500_000, 2),
                LocalDate.of(2026, 1, 1).plusDays(random.nextInt(700) - 350),
                LocalDateTime.of(2026, 6, 1, 0, 0).plusNanos(random.nextLong(1L << 50) * 1_000),
                random.nextInt(5) == 0 ? null : random.nextBoolean(),
                "n" + random.nextInt(1000)));
      }
      writer.append(rows);
    }
    return table;
  }
}
