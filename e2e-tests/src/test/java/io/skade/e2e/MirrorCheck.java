package io.skade.e2e;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Waits for a mirroring job's table to hold exactly its source table's rows, and when it does not
 * in time, fails with what differs (keys missing, extra or with other values) and how far the
 * mirror got (its commits against the source's), so a failure explains itself.
 */
final class MirrorCheck {
  /** How many keys of each kind of difference a failure lists. */
  private static final int SHOWN = 20;

  private MirrorCheck() {}

  /**
   * Waits up to {@code atMost} for {@code copy} to hold {@code source}'s rows, compared by the
   * table's columns and keyed by {@code key}; returns them.
   */
  static Map<Long, Record> awaitCaughtUp(
      Catalog rest, TableIdentifier source, TableIdentifier copy, String key, Duration atMost)
      throws Exception {
    Map<Long, Record> expected = rowsByKey(rest, source, key);
    try {
      await(copy + " caught up with " + source)
          .atMost(atMost)
          .pollInterval(Duration.ofSeconds(1))
          .until(() -> rowsByKey(rest, copy, key).equals(expected));
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          copy
              + " did not catch up with "
              + source
              + " within "
              + atMost
              + "\n"
              + diff(expected, rowsByKey(rest, copy, key))
              + progress(rest.loadTable(source), rest.loadTable(copy)),
          e);
    }
    return expected;
  }

  /** Each row of the table by its key, as the table's own columns. */
  static Map<Long, Record> rowsByKey(Catalog rest, TableIdentifier id, String key)
      throws Exception {
    Map<Long, Record> rows = new TreeMap<>();
    for (Record row : SkadeOnFlinkClusterTest.rows(rest, id)) {
      Record other = rows.put((Long) row.getField(key), row);
      if (other != null) {
        throw new AssertionError(id + " holds two rows of key " + key + ": " + other + ", " + row);
      }
    }
    return rows;
  }

  private static String diff(Map<Long, Record> expected, Map<Long, Record> actual) {
    List<Long> missing = new ArrayList<>();
    List<String> different = new ArrayList<>();
    expected.forEach(
        (key, row) -> {
          Record other = actual.get(key);
          if (other == null) {
            missing.add(key);
          } else if (!Objects.equals(row, other)) {
            different.add(key + ": " + row + " but " + other);
          }
        });
    TreeSet<Long> extra = new TreeSet<>(actual.keySet());
    extra.removeAll(expected.keySet());
    return String.format(
        "keys missing: %d %s%nkeys extra: %d %s%nkeys with other values: %d %s%n",
        missing.size(),
        first(missing),
        extra.size(),
        first(new ArrayList<>(extra)),
        different.size(),
        first(different));
  }

  private static <T> List<T> first(List<T> items) {
    return items.subList(0, Math.min(SHOWN, items.size()));
  }

  /** Commits of each table; the mirror's last one that changed rows, and the checkpoint of each. */
  private static String progress(Table source, Table copy) {
    return String.format(
        "%s: %s%n%s: %s%n", source.name(), commits(source), copy.name(), commits(copy));
  }

  private static String commits(Table table) {
    int count = 0;
    Snapshot lastChange = null;
    for (Snapshot snapshot : table.snapshots()) {
      count++;
      if (!snapshot.addedDataFiles(table.io()).iterator().hasNext()
          && !snapshot.addedDeleteFiles(table.io()).iterator().hasNext()) {
        continue;
      }
      if (lastChange == null || snapshot.sequenceNumber() > lastChange.sequenceNumber()) {
        lastChange = snapshot;
      }
    }
    Snapshot current = table.currentSnapshot();
    return String.format(
        "%d commits, the last at %s (checkpoint %s); the last changing rows: %s",
        count,
        current == null ? "-" : Instant.ofEpochMilli(current.timestampMillis()),
        current == null ? "-" : current.summary().get("flink.max-committed-checkpoint-id"),
        lastChange == null
            ? "none"
            : Instant.ofEpochMilli(lastChange.timestampMillis()) + " " + lastChange.summary());
  }
}
