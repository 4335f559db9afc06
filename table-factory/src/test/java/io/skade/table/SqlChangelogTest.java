package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
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
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.data.Record;
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
    Thread collector = new Thread(() -> {
      try (CloseableIterator<Row> it = result.collect()) {
        it.forEachRemaining(changes::add);
      } catch (Exception e) {
        // cancelled at the end of the test
      }
    });
    collector.start();

    run(writer, "INSERT INTO orders VALUES (4, 'dee', 4), (5, 'eve', 5)"); // inserts
    run(writer, "INSERT INTO orders VALUES (1, 'ada', 10), (6, 'fay', 6)"); // upsert + insert
    run(writer, "UPDATE orders SET qty = qty + 100 WHERE id IN (2, 4)"); // upserts by key
    run(writer, "UPDATE orders SET name = 'BOB' WHERE UPPER(name) = 'BOB'"); // row-level
    run(writer, "DELETE FROM orders WHERE id = 3"); // pushed down: position deletes
    run(writer, "DELETE FROM orders WHERE UPPER(name) = 'EVE'"); // row-level: by key
    run(writer, "INSERT INTO orders VALUES (3, 'cy', 33)"); // a deleted key comes back

    Map<Integer, Row> expected = new HashMap<>();
    for (Record row : icebergRows("orders")) {
      expected.put((Integer) row.getField("id"),
          Row.of(row.getField("id"), row.getField("name"), row.getField("qty")));
    }
    assertThat(expected).hasSize(5); // 1 2 3 4 6

    Map<Integer, Row> state = waitForState(changes, expected, Duration.ofSeconds(60));
    result.getJobClient().orElseThrow().cancel().get(30, TimeUnit.SECONDS);
    collector.join(30_000);

    assertThat(state).isEqualTo(expected);
    assertThat(changes).extracting(Row::getKind)
        .contains(RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE);
  }

  /** Applies the changes collected so far until they give {@code expected}, or time runs out. */
  private static Map<Integer, Row> waitForState(List<Row> changes, Map<Integer, Row> expected,
      Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    Map<Integer, Row> state;
    do {
      state = apply(changes);
      if (state.equals(expected)) {
        break;
      }
      Thread.sleep(100);
    } while (System.nanoTime() < deadline);
    return state;
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
            throw new AssertionError("retraction " + change + " of a row not in the state: "
                + removed);
          }
        }
      }
    }
    return state;
  }
}
