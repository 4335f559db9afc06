package io.skade.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.source.ChangeDeserializer;
import io.skade.source.ChangeMetadata;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Changes of {@code (id bigint, <a string column>)} rows as text lines, e.g. {@code "+U 2 b2"}, and
 * the rows of such a table as Iceberg's own reader reads them.
 */
public final class ChangeLines {
  private ChangeLines() {}

  /** A source's changes as text lines. */
  public static final class Deserializer implements ChangeDeserializer<String> {
    @Override
    public void deserialize(RowData change, ChangeMetadata metadata, Collector<String> out) {
      out.collect(text(change));
    }

    @Override
    public TypeInformation<String> getProducedType() {
      return Types.STRING;
    }
  }

  /** The table's current rows by id, read by Iceberg's generic reader. */
  public static Map<Long, String> rows(Table table) {
    table.refresh();
    Map<Long, String> rows = new HashMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> rows.put(r.get(0, Long.class), r.get(1, String.class)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /**
   * Applies one change line to {@code rows} (guarded by {@code rows}' monitor), strictly: an insert
   * ({@code +I}, {@code +U}) must meet no row with its id, a retraction ({@code -U}, {@code -D})
   * exactly the row it retracts; a change that does not is added to {@code failures} (and applied
   * all the same, so one slip is not reported again by every later change).
   */
  public static void applyStrictly(String change, Map<Long, String> rows, List<String> failures) {
    String[] parts = change.split(" ", 3);
    long id = Long.parseLong(parts[1]);
    String value = parts[2];
    synchronized (rows) {
      boolean inserts = parts[0].equals("+I") || parts[0].equals("+U");
      String there = rows.get(id);
      if (inserts ? there != null : !value.equals(there)) {
        failures.add(change + " (the row there: " + there + ")");
      }
      if (inserts) {
        rows.put(id, value);
      } else {
        rows.remove(id);
      }
    }
  }

  public static String text(RowData row) {
    return row.getRowKind().shortString()
        + " "
        + row.getLong(0)
        + " "
        + (row.isNullAt(1) ? "null" : row.getString(1).toString());
  }

  /** The next {@code count} changes of a job; blocks until they came (the test's timeout). */
  public static List<String> take(Iterator<RowData> rows, int count) {
    List<String> taken = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      taken.add(text(rows.next()));
    }
    return taken;
  }

  /** Every remaining change of a job that ends on its own. */
  public static List<String> drain(Iterator<RowData> rows) {
    List<String> taken = new ArrayList<>();
    rows.forEachRemaining(row -> taken.add(text(row)));
    return taken;
  }

  public static int size(List<List<String>> commits) {
    return commits.stream().mapToInt(List::size).sum();
  }

  /**
   * Asserts that {@code seen} is the changes of {@code commits}, commit after commit: within a
   * commit in any order, except that each {@code -U} is directly followed by its {@code +U}.
   */
  public static void assertCommits(List<String> seen, List<List<String>> commits) {
    assertThat(seen).as("all changes").hasSize(size(commits));
    int at = 0;
    for (int c = 0; c < commits.size(); c++) {
      List<String> commit = commits.get(c);
      List<String> part = seen.subList(at, at + commit.size());
      assertThat(part)
          .as("commit %d of %s in %s", c + 1, commits, seen)
          .containsExactlyInAnyOrderElementsOf(commit);
      at += commit.size();
    }
    for (int i = 0; i < seen.size(); i++) {
      if (seen.get(i).startsWith("-U ")) {
        String key = seen.get(i).split(" ")[1];
        assertThat(i + 1 < seen.size() ? seen.get(i + 1) : "nothing")
            .as("the change after %s in %s", seen.get(i), seen)
            .startsWith("+U " + key + " ");
      }
    }
  }
}
