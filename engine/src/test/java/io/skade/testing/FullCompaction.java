package io.skade.testing;

import io.skade.write.TableWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * A compaction a test makes by hand: every data and delete file of the table's current snapshot
 * rewritten, with skade's writer, into data files of the live rows, committed as one Iceberg
 * rewrite (a {@code replace} snapshot) validated from the snapshot it read.
 */
public final class FullCompaction {
  private FullCompaction() {}

  /** Rewrites the table; false, committing nothing, when it has no data file. */
  public static boolean rewrite(Table table, TableWriter writer) throws IOException {
    Set<DataFile> dataFiles = new HashSet<>();
    Set<DeleteFile> deleteFiles = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        dataFiles.add(task.file());
        deleteFiles.addAll(task.deletes());
      }
    }
    if (dataFiles.isEmpty()) {
      return false;
    }
    long base = table.currentSnapshot().snapshotId();
    List<DataFile> rewritten = writer.writeDataFiles(liveRows(table));
    table
        .newRewrite()
        .validateFromSnapshot(base)
        .rewriteFiles(dataFiles, deleteFiles, new HashSet<>(rewritten), Set.of())
        .commit();
    return true;
  }

  /** The table's live rows at its latest snapshot, as Iceberg's generic reader reads them. */
  public static List<Record> liveRows(Table table) throws IOException {
    table.refresh();
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(row -> rows.add(row.copy()));
    }
    return rows;
  }
}
