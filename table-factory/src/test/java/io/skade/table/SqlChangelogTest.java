package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Streaming reads of skade tables through SQL, while other statements change them. */
class SqlChangelogTest extends SqlTestBase {
  private static final String ORDERS =
      "id INT, name STRING, qty INT, PRIMARY KEY (id) NOT ENFORCED";

  @Test
  @Timeout(300)
  void streamingSelectAppliedToEmptyStateEqualsTheTable() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1), (2, 'bob', 2), (3, 'cy', 3)");

    TableEnvironment reader = streaming();
    declare(reader, "orders", ORDERS);
    TableResult result = reader.executeSql("SELECT * FROM orders");
    List<Row> changes = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, changes);

    run(writer, "INSERT INTO orders VALUES (4, 'dee', 4), (5, 'eve', 5)"); // inserts
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 10), (6, 'fay', 6)"); // upsert + insert
    run(writer, "UPDATE orders SET qty = qty + 100 WHERE id IN (2, 4)"); // upserts by key
    run(writer, "UPDATE orders SET name = 'BOB' WHERE UPPER(name) = 'BOB'"); // row-level
    run(writer, "DELETE FROM orders WHERE id = 3"); // pushed down: position deletes
    run(writer, "DELETE FROM orders WHERE UPPER(name) = 'EVE'"); // row-level: by key
    run(writer, "INSERT INTO orders VALUES (3, 'cy', 33)"); // a deleted key comes back

    Map<Integer, Row> expected = new HashMap<>();
    for (Record row : icebergRows("orders")) {
      expected.put(
          (Integer) row.getField("id"),
          Row.of(row.getField("id"), row.getField("name"), row.getField("qty")));
    }
    assertThat(expected).hasSize(5); // 1 2 3 4 6

    Map<Integer, Row> state = waitForState(changes, expected, Duration.ofSeconds(60));
    result.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
    collector.join(30_000);

    assertThat(state).isEqualTo(expected);
    assertThat(changes)
        .extracting(Row::getKind)
        .contains(RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE);
  }

  @Test
  @Timeout(120)
  void columnsSelectedInAnotherOrderThanTheTablesComeOutInTheQuerysOrder() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 7), (2, 'bob', 8)");
    assertThat(sorted(collect(writer, "SELECT qty, name, id FROM orders")))
        .containsExactly("+I[7, ada, 1]", "+I[8, bob, 2]");
    // The sort key, used after the selected columns, is read last.
    assertThat(
            collect(writer, "SELECT name, qty FROM orders ORDER BY id DESC").stream()
                .map(Row::toString))
        .containsExactly("+I[bob, 8]", "+I[ada, 7]");
  }

  @Test
  @Timeout(300)
  void aStreamingInsertReplicatesOneTablesChangelogIntoAnother() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    declare(writer, "replica", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1), (2, 'bob', 2), (3, 'cy', 3)");

    TableEnvironment pipeline = streaming();
    pipeline.getConfig().set("execution.checkpointing.interval", "300 ms");
    declare(pipeline, "orders", ORDERS);
    declare(pipeline, "replica", ORDERS);
    TableResult job = pipeline.executeSql("INSERT INTO replica SELECT * FROM orders");
    try {
      run(writer, "INSERT INTO orders VALUES (1, 'ada', 10), (4, 'dee', 4)");
      run(writer, "DELETE FROM orders WHERE id = 2");
      run(writer, "UPDATE orders SET name = 'CY' WHERE UPPER(name) = 'CY'");

      List<String> expected = sortedRows("orders");
      assertThat(expected).containsExactly("1|ada|10", "3|CY|3", "4|dee|4");
      await()
          .atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(200))
          .untilAsserted(() -> assertThat(sortedRows("replica")).isEqualTo(expected));
    } finally {
      job.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  @Timeout(300)
  void keyOnlyBeforeImagesStreamUpsertsThatRebuildTheTable() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1), (2, 'bob', 2)");

    TableEnvironment reader = streaming();
    declare(reader, "orders", ORDERS, "changelog.before-image", "key-only");
    TableResult result = reader.executeSql("SELECT * FROM orders");
    List<Row> changes = Collections.synchronizedList(new ArrayList<>());
    Thread collector = collectInBackground(result, changes);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 5), (3, 'cy', 3)");
    run(writer, "DELETE FROM orders WHERE id = 2");

    Map<Integer, Row> expected = new HashMap<>();
    for (Record row : icebergRows("orders")) {
      expected.put(
          (Integer) row.getField("id"),
          Row.of(row.getField("id"), row.getField("name"), row.getField("qty")));
    }
    // The planner's ChangelogNormalize turns the upserts back into full retractions.
    Map<Integer, Row> state = waitForState(changes, expected, Duration.ofSeconds(60));
    result.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
    collector.join(30_000);
    assertThat(state).isEqualTo(expected);
    assertThat(reader.explainSql("SELECT * FROM orders")).contains("ChangelogNormalize");
  }

  private List<String> sortedRows(String table) throws Exception {
    return icebergRows(table).stream()
        .map(row -> row.getField("id") + "|" + row.getField("name") + "|" + row.getField("qty"))
        .sorted()
        .toList();
  }

  @Test
  @Timeout(180)
  void aBoundedWindowReturnsExactlyTheWindowsChanges() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1), (2, 'bob', 2)");
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 10)");
    long first = icebergTable("orders").currentSnapshot().snapshotId();
    run(writer, "DELETE FROM orders WHERE id = 2");
    run(writer, "INSERT INTO orders VALUES (3, 'cy', 3)");
    long last = icebergTable("orders").currentSnapshot().snapshotId();
    run(writer, "INSERT INTO orders VALUES (4, 'dee', 4)"); // after the window

    TableEnvironment reader = streaming();
    declare(
        reader,
        "orders",
        ORDERS,
        "scan.startup.mode",
        "from-snapshot",
        "scan.startup.snapshot-id",
        Long.toString(first),
        "scan.end.snapshot-id",
        Long.toString(last));
    List<String> changes =
        collect(reader, "SELECT * FROM orders").stream().map(Row::toString).toList();

    assertThat(changes)
        .containsExactly(
            "-U[1, ada, 1]",
            "+U[1, ada, 10]", // the upsert of snapshot 'first'
            "-D[2, bob, 2]",
            "+I[3, cy, 3]");
  }

  @Test
  @Timeout(180)
  void metadataColumnsNameEachChangesKindCommitAndSnapshot() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1)");
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 2)");
    run(writer, "DELETE FROM orders WHERE id = 1");
    List<Snapshot> snapshots = new ArrayList<>();
    icebergTable("orders").snapshots().forEach(snapshots::add);
    assertThat(snapshots).hasSize(3);

    TableEnvironment reader = streaming();
    declare(
        reader,
        "orders",
        ORDERS
            + ", kind STRING METADATA FROM 'change_type' VIRTUAL,"
            + " commit_seq BIGINT METADATA VIRTUAL, snapshot_id BIGINT METADATA VIRTUAL,"
            + " commit_time TIMESTAMP_LTZ(3) METADATA VIRTUAL",
        "scan.startup.mode",
        "earliest",
        "scan.bounded",
        "true");
    List<Row> rows =
        collect(reader, "SELECT id, qty, kind, commit_seq, snapshot_id, commit_time FROM orders");

    List<Row> expected = new ArrayList<>();
    expected.add(metadataRow(RowKind.INSERT, 1, "INSERT", snapshots.get(0)));
    expected.add(metadataRow(RowKind.UPDATE_BEFORE, 1, "UPDATE_BEFORE", snapshots.get(1)));
    expected.add(metadataRow(RowKind.UPDATE_AFTER, 2, "UPDATE_AFTER", snapshots.get(1)));
    expected.add(metadataRow(RowKind.DELETE, 2, "DELETE", snapshots.get(2)));
    assertThat(rows).containsExactlyElementsOf(expected);
  }

  private Row metadataRow(RowKind kind, int qty, String changeType, Snapshot snapshot) {
    CommitEvent commit =
        catalog
            .catalog()
            .commitOf(TableIdentifier.of("default_database", "orders"), snapshot.snapshotId())
            .orElseThrow();
    return Row.ofKind(
        kind,
        1,
        qty,
        changeType,
        commit.commitSeq(),
        snapshot.snapshotId(),
        Instant.ofEpochMilli(commit.tsMicros() / 1000));
  }

  @Test
  void explainShowsProjectedFieldsAndExactFiltersPushedIntoTheSource() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 1)");
    TableEnvironment reader = streaming();
    declare(reader, "orders", ORDERS);

    String plan = reader.explainSql("SELECT name FROM orders WHERE id > 5");

    // The source applies the filter; Flink's Calc keeps it too (see SkadeTableSource).
    assertThat(plan)
        .contains("filter=[>(id, 5)], project=[id, name]")
        .contains("Calc(select=[name], where=[(id > 5)])");
    // A condition skade cannot apply exactly stays in Flink's Calc.
    assertThat(reader.explainSql("SELECT name FROM orders WHERE UPPER(name) = 'X'"))
        .contains("Calc(select=[name], where=[(UPPER(name) = 'X')])");
  }

  @Test
  @Timeout(180)
  void pushedFiltersKeepExactlyTheRowsSqlKeeps() throws Exception {
    TableEnvironment writer = batch();
    declare(writer, "orders", ORDERS);
    run(
        writer,
        "INSERT INTO orders VALUES (1, 'ada', 1), (2, CAST(NULL AS STRING), 7),"
            + " (6, 'fay', CAST(NULL AS INT)), (7, 'gus', 9), (8, 'hal', 2)");

    TableEnvironment reader = batch();
    declare(reader, "orders", ORDERS);
    String[] queries = {
      "SELECT name FROM orders WHERE id > 5",
      "SELECT id FROM orders WHERE NOT (qty > 3)",
      "SELECT id FROM orders WHERE qty <> 7",
      "SELECT id FROM orders WHERE NOT (name = 'ada' OR qty < 5)",
      "SELECT id FROM orders WHERE name LIKE 'g%' OR name IS NULL",
      "SELECT id FROM orders WHERE id IN (1, 6, 9)",
    };
    // Flink alone evaluates the same conditions on the unfiltered rows.
    declare(reader, "everything", ORDERS, "table", "orders");
    for (String query : queries) {
      List<String> pushed = sorted(collect(reader, query));
      List<String> byFlink =
          sorted(
              collect(
                  reader,
                  query.replace(
                      "FROM orders WHERE",
                      "FROM (SELECT * FROM everything"
                          + " /*+ OPTIONS('scan.bounded'='true') */ WHERE UPPER('x') = 'X') WHERE")));
      assertThat(pushed).as(query).isEqualTo(byFlink).isNotEmpty();
    }
  }

  private static List<String> sorted(List<Row> rows) {
    return rows.stream().map(Row::toString).sorted().toList();
  }

  /**
   * Applies the changes collected so far until they give {@code expected}, or time runs out; the
   * state they give then. A timeout is not a failure here: the caller stops its job first, then
   * asserts on the state.
   */
  private static Map<Integer, Row> waitForState(
      List<Row> changes, Map<Integer, Row> expected, Duration timeout) {
    try {
      await()
          .atMost(timeout)
          .pollInterval(Duration.ofMillis(100))
          .until(() -> apply(changes), expected::equals);
    } catch (ConditionTimeoutException timedOut) {
      // the state below is not the expected one; the caller's assertion says how
    }
    return apply(changes);
  }

  /** The state the changelog leaves, starting from empty; a retraction must match its row. */
  static Map<Integer, Row> apply(List<Row> changes) {
    Map<Integer, Row> state = new HashMap<>();
    List<Row> copy;
    synchronized (changes) {
      copy = new ArrayList<>(changes);
    }
    for (Row change : copy) {
      Integer id = (Integer) change.getField(0);
      Row row = Row.of(change.getField(0), change.getField(1), change.getField(2));
      switch (change.getKind()) {
        case INSERT, UPDATE_AFTER -> state.put(id, row);
        case UPDATE_BEFORE, DELETE -> {
          Row removed = state.remove(id);
          if (!Objects.equals(removed, row)) {
            throw new AssertionError(
                "retraction " + change + " of a row not in the state: " + removed);
          }
        }
      }
    }
    return state;
  }
}
