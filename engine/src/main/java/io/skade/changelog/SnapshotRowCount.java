package io.skade.changelog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.OptionalLong;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;

/**
 * How many rows a snapshot of a table holds (a SQL {@code COUNT(*)}): from its manifests' record
 * counts when no delete file applies to any of its data files, where those counts are the rows;
 * otherwise by reading the rows with every delete applied (equality deletes, position deletes,
 * deletion vectors), so a merge-on-read table is never miscounted.
 */
public final class SnapshotRowCount {
  private SnapshotRowCount() {}

  /**
   * The rows of snapshot {@code snapshotId} from its manifests alone: the sum of its data files'
   * record counts, when no delete file applies to any of them; empty otherwise.
   */
  public static OptionalLong fromManifests(Table table, long snapshotId) {
    long rows = 0;
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(snapshotId).planFiles()) {
      for (FileScanTask task : tasks) {
        if (!task.deletes().isEmpty()) {
          return OptionalLong.empty();
        }
        rows += task.file().recordCount();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the manifests of " + table.name(), e);
    }
    return OptionalLong.of(rows);
  }

  /**
   * Whether the manifests of snapshot {@code snapshotId} give its row count ({@link #fromManifests}
   * is present): as its summary's total of delete files says, without reading a manifest; from the
   * manifests when the summary keeps no totals.
   */
  public static boolean countedByManifests(Table table, long snapshotId) {
    String deleteFiles =
        table.snapshot(snapshotId).summary().get(SnapshotSummary.TOTAL_DELETE_FILES_PROP);
    return deleteFiles != null
        ? Long.parseLong(deleteFiles) == 0
        : fromManifests(table, snapshotId).isPresent();
  }

  /**
   * The rows of snapshot {@code snapshotId} (0 for a table with no snapshot, {@code null}): from
   * its manifests where that is exact, else read.
   */
  public static long of(Table table, Long snapshotId) {
    if (snapshotId == null) {
      return 0;
    }
    OptionalLong counted = fromManifests(table, snapshotId);
    if (counted.isPresent()) {
      return counted.getAsLong();
    }
    // One column suffices to count rows; the reader reads what the deletes need besides.
    String column = table.schema().columns().get(0).name();
    long rows = 0;
    try (CloseableIterator<ChangeRow> read =
        new ChangelogReader(table, ChangelogOptions.defaults().withColumns(List.of(column)))
            .snapshotChanges(snapshotId)) {
      while (read.hasNext()) {
        read.next();
        rows++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the rows of " + table.name(), e);
    }
    return rows;
  }
}
