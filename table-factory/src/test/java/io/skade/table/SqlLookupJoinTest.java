package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Flink SQL lookup joins against a skade table that changes while the join runs. */
class SqlLookupJoinTest extends SqlTestBase {
  private static final String CUSTOMERS =
      "id BIGINT, name STRING, city STRING, PRIMARY KEY (id) NOT ENFORCED";
  private static final String ORDERS =
      "order_id BIGINT, customer_id BIGINT," + " PRIMARY KEY (order_id) NOT ENFORCED";

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sync", "async", "row-cache", "full-cache"})
  @Timeout(240)
  void aLookupJoinSeesEachDimensionCommitFromTheNextProbeOn(String mode) throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "customers", CUSTOMERS);
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO customers VALUES (1, 'ada', 'oslo'), (2, 'bo', 'bergen')");
    run(writer, "INSERT INTO orders VALUES (0, 1)"); // before the stream's start: not joined

    TableEnvironment join = streaming();
    String[] lookupOptions =
        switch (mode) {
          case "async" -> new String[] {"lookup.async", "true"};
          case "row-cache" -> new String[] {"lookup.row-cache.max-rows", "1000"};
          case "full-cache" -> new String[] {"lookup.cache", "FULL"};
          default -> new String[0];
        };
    declare(join, "customers", CUSTOMERS, lookupOptions);
    join.executeSql(
        "CREATE TABLE orders ("
            + ORDERS
            + ", proc_time AS PROCTIME()) WITH ("
            + "'connector' = 'skade', 'warehouse' = '"
            + warehouse
            + "',"
            + " 'scan.startup.mode' = 'from-commit-seq', 'scan.startup.commit-seq' = '"
            + catalog.catalog().commitSeq()
            + "')"); // the orders committed from here on
    TableResult result =
        join.executeSql(
            "SELECT o.order_id, o.customer_id, c.name, c.city"
                + " FROM orders AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c"
                + " ON o.customer_id = c.id");
    List<Row> joined = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, joined);
    try {
      run(writer, "INSERT INTO orders VALUES (1, 1), (2, 9)");
      waitFor(() -> joined.size() >= 2);

      run(writer, "INSERT INTO customers VALUES (1, 'ada', 'tromso'), (9, 'nine', 'bodo')");
      run(writer, "DELETE FROM customers WHERE id = 2");
      run(writer, "INSERT INTO orders VALUES (3, 1), (4, 9), (5, 2)");
      waitFor(() -> joined.size() >= 5);
    } finally {
      result.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
      collector.join(30_000);
    }

    assertThat(joined.stream().map(Row::toString).sorted())
        .containsExactly(
            "+I[1, 1, ada, oslo]",
            "+I[2, 9, null, null]",
            "+I[3, 1, ada, tromso]", // the upsert, committed before this order
            "+I[4, 9, nine, bodo]", // a new key
            "+I[5, 2, null, null]"); // a deleted key
  }

  @Test
  @Timeout(240)
  void aLookupJoinReturnsEveryColumnAsTheTableHoldsIt() throws Exception {
    String columns =
        "id BIGINT, flag BOOLEAN, n INT, amount DECIMAL(10, 2), ratio DOUBLE,"
            + " birthday DATE, at_time TIMESTAMP(6), at_instant TIMESTAMP_LTZ(6), payload BYTES,"
            + " label STRING, PRIMARY KEY (id) NOT ENFORCED";
    TableEnvironment writer = batch();
    declare(writer, "dim", columns);
    run(
        writer,
        "INSERT INTO dim VALUES (1, TRUE, 7, 12.34, 0.5, DATE '2026-11-30',"
            + " TIMESTAMP '2026-11-30 12:34:56.123456', TO_TIMESTAMP_LTZ(1764506096123, 3), X'CAFE',"
            + " 'Tromsø ✓')");
    run(writer, "INSERT INTO dim (id, flag) VALUES (2, FALSE)"); // the other columns null

    TableEnvironment join = streaming();
    declare(join, "dim", columns);
    join.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS proc_time"
            + " FROM (VALUES (1), (2), (3)) AS t(k)");
    List<Row> rows =
        collect(
            join,
            "SELECT p.k, d.flag, d.n, d.amount, d.ratio, d.birthday,"
                + " d.at_time, d.at_instant, d.payload, d.label FROM probes AS p"
                + " LEFT JOIN dim FOR SYSTEM_TIME AS OF p.proc_time AS d ON p.k = d.id");

    assertThat(rows).hasSize(3);
    rows.sort(Comparator.comparing(row -> (Integer) row.getField(0)));
    Row full = rows.get(0);
    assertThat(full.getField(1)).isEqualTo(true);
    assertThat(full.getField(2)).isEqualTo(7);
    assertThat(full.getField(3)).isEqualTo(new BigDecimal("12.34"));
    assertThat(full.getField(4)).isEqualTo(0.5);
    assertThat(full.getField(5)).isEqualTo(LocalDate.of(2026, 11, 30));
    assertThat(full.getField(6)).isEqualTo(LocalDateTime.of(2026, 11, 30, 12, 34, 56, 123_456_000));
    assertThat(full.getField(7)).isEqualTo(Instant.ofEpochMilli(1764506096123L));
    assertThat((byte[]) full.getField(8)).containsExactly(0xCA, 0xFE);
    assertThat(full.getField(9)).isEqualTo("Tromsø ✓"); // multi-byte UTF-8
    Row empty = rows.get(1);
    assertThat(empty.getField(1)).isEqualTo(false);
    for (int i = 2; i < empty.getArity(); i++) {
      assertThat(empty.getField(i)).as("column %d of a row holding nulls", i).isNull();
    }
    Row missing = rows.get(2);
    for (int i = 1; i < missing.getArity(); i++) {
      assertThat(missing.getField(i)).as("column %d of a key with no row", i).isNull();
    }
  }

  /**
   * The planner hands a condition on the dimension table's columns to the source as a filter, which
   * the lookups apply, in every caching mode: people of other cities are never joined, and a left
   * join pads them with nulls.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"sync", "async", "row-cache", "partial-cache", "full-cache"})
  @Timeout(240)
  void aLookupJoinAppliesTheConditionOnTheDimensionTableThatTheSourceAccepted(String mode)
      throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "people", CUSTOMERS);
    run(
        writer,
        "INSERT INTO people VALUES (1, 'ada', 'Oslo'), (2, 'bo', 'Bergen'),"
            + " (3, 'cy', CAST(NULL AS STRING))");
    run(writer, "INSERT INTO people VALUES (4, 'di', 'Oslo')");

    TableEnvironment join = streaming();
    String[] lookupOptions =
        switch (mode) {
          case "async" -> new String[] {"lookup.async", "true"};
          case "row-cache" -> new String[] {"lookup.row-cache.max-rows", "1000"};
          case "partial-cache" ->
              new String[] {"lookup.cache", "PARTIAL", "lookup.partial-cache.max-rows", "1000"};
          case "full-cache" -> new String[] {"lookup.cache", "FULL"};
          default -> new String[0];
        };
    declare(join, "people", CUSTOMERS, lookupOptions);
    join.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS pt"
            + " FROM (VALUES (1), (2), (3), (4), (5), (1), (2)) AS t(k)");
    String on = " FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id AND d.city = 'Oslo'";

    List<String> inner =
        collect(join, "SELECT p.k, d.name FROM probes AS p JOIN people" + on).stream()
            .map(Row::toString)
            .sorted()
            .toList();
    List<String> left =
        collect(join, "SELECT p.k, d.name FROM probes AS p LEFT JOIN people" + on).stream()
            .map(Row::toString)
            .sorted()
            .toList();

    assertThat(inner).containsExactly("+I[1, ada]", "+I[1, ada]", "+I[4, di]");
    assertThat(left)
        .containsExactly(
            "+I[1, ada]",
            "+I[1, ada]",
            "+I[2, null]",
            "+I[2, null]",
            "+I[3, null]",
            "+I[4, di]",
            "+I[5, null]");
  }

  /**
   * Two lookup joins of one table in one query, on one input, with other conditions on the table:
   * Flink's sub-plan reuse would run them as one if the conditions were only in the source (its
   * digest of a lookup join leaves them out), so each must keep its own rows.
   */
  @Test
  @Timeout(240)
  void twoLookupJoinsOfOneTableWithOtherConditionsInOneQueryKeepTheirOwnRows() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "people", CUSTOMERS);
    run(writer, "INSERT INTO people VALUES (1, 'ada', 'Oslo'), (2, 'bo', 'Bergen')");
    TableEnvironment join = streaming();
    declare(join, "people", CUSTOMERS);
    join.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS pt"
            + " FROM (VALUES (1), (2)) AS t(k)");
    String lookup =
        " FROM probes AS p LEFT JOIN people FOR SYSTEM_TIME AS OF p.pt AS d"
            + " ON p.k = d.id AND d.city = ";

    List<String> rows =
        collect(
                join,
                "SELECT 'oslo', p.k, d.name"
                    + lookup
                    + "'Oslo'"
                    + " UNION ALL SELECT 'bergen', p.k, d.name"
                    + lookup
                    + "'Bergen'")
            .stream()
            .map(Row::toString)
            .sorted()
            .toList();

    assertThat(rows)
        .containsExactly(
            "+I[bergen, 1, null]", "+I[bergen, 2, bo]", "+I[oslo, 1, ada]", "+I[oslo, 2, null]");
  }

  /** Metadata columns describe changes; a lookup join asking for one fails, naming them. */
  @Test
  @Timeout(120)
  void aLookupJoinSelectingAMetadataColumnFailsNamingIt() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "people", CUSTOMERS);
    run(writer, "INSERT INTO people VALUES (1, 'ada', 'Oslo')");
    TableEnvironment join = streaming();
    declare(
        join,
        "people",
        "id BIGINT, name STRING, city STRING,"
            + " seq BIGINT METADATA FROM 'commit_seq' VIRTUAL, PRIMARY KEY (id) NOT ENFORCED");
    join.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS pt"
            + " FROM (VALUES (1)) AS t(k)");

    assertThatThrownBy(
            () ->
                join.explainSql(
                    "SELECT p.k, d.name, d.seq FROM probes AS p"
                        + " JOIN people FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id"))
        .hasStackTraceContaining("metadata columns [commit_seq]")
        .hasStackTraceContaining("leave them out of the query");
  }

  private static void waitFor(Callable<Boolean> check) {
    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50)).until(check);
  }
}
