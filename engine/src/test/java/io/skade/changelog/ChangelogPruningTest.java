package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An upsert of one key reads only the older file that can hold it: column bounds rule out files of
 * other key ranges, and bloom filters rule out files whose ranges overlap but lack the key.
 */
class ChangelogPruningTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final int FILES = 8;
  private static final int ROWS_PER_FILE = 1000;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void boundsSkipFilesOfOtherKeyRanges() {
    // File f holds ids f*1000 .. f*1000+999: disjoint ranges.
    assertOneFileScanned("ranges", i -> i);
  }

  @Test
  void bloomFiltersSkipFilesWhoseRangesOverlapButLackTheKey() {
    // File f holds ids congruent to f modulo 8: every range spans nearly all keys.
    assertOneFileScanned("interleaved", i -> (i % ROWS_PER_FILE) * FILES + i / ROWS_PER_FILE);
  }

  private void assertOneFileScanned(String name, LongUnaryOperator idOfRow) {
    Table table = catalog.get().createTable(TableIdentifier.of("db", name), SCHEMA);
    TableWriter writer = new TableWriter(table);
    List<Long> fileOfKey = new ArrayList<>();
    for (int f = 0; f < FILES; f++) {
      List<Record> rows = new ArrayList<>();
      for (int i = 0; i < ROWS_PER_FILE; i++) {
        rows.add(row(idOfRow.applyAsLong((long) f * ROWS_PER_FILE + i), "v1"));
      }
      writer.append(rows);
    }
    long start = table.currentSnapshot().snapshotId();
    long key = idOfRow.applyAsLong(5L * ROWS_PER_FILE + 17);
    long end = writer.upsert(List.of(row(key, "v2"))).snapshotId();

    ChangelogReader reader =
        new ChangelogReader(table, ChangelogOptions.defaults().withMode(Mode.COLLAPSED));
    assertThat(reader.read(start, end))
        .extracting(
            change ->
                change.type().symbol()
                    + " "
                    + change.row().getField("id")
                    + " "
                    + change.row().getField("name"))
        .containsExactly("-U " + key + " v1", "+U " + key + " v2");
    // The file holding the key, and the one new row; the seven other files are not decoded.
    assertThat(reader.rowsScanned()).isEqualTo(ROWS_PER_FILE + 1);
  }
}
