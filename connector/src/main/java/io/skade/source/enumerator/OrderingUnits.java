package io.skade.source.enumerator;

import io.skade.changelog.TableKind;
import io.skade.scan.FileSlice;
import io.skade.scan.MetadataCache;
import io.skade.scan.WindowFiles;
import io.skade.source.split.ChangelogSplit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotChanges;
import org.apache.iceberg.Table;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.iceberg.util.PartitionSet;

/**
 * Cuts a planned split into the ordering units of its table, grouped into a fixed number of {@link
 * #SLOTS}, and says which reader reads each slot.
 *
 * <p>Every change of one key (on a log table: of one row) must reach one reader, after the changes
 * before it. The unit is what keeps a row's changes together:
 *
 * <ul>
 *   <li>a primary-key table whose only partition spec partitions by identifier fields alone
 *       (identity or bucket transforms): the partition, where a key always lives;
 *   <li>any other primary-key table: the whole table, read by one reader;
 *   <li>a log table with one partitioned spec: the partition, which a row never leaves;
 *   <li>any other log table: the data file, which a row is inserted with and deleted from (by
 *       position, deletion vector or equality, or with the file); a rewrite that moves rows to a
 *       file of another slot re-emits them there ({@link FileSlice#movesRows}).
 * </ul>
 *
 * <p>A window becomes one split per slot it touches. Slots, not readers, are what a split keeps:
 * slot {@code s} is read by reader {@code s * parallelism / SLOTS} (Flink's own mapping of key
 * groups to subtasks), so a restore at another parallelism moves whole splits to the readers of
 * their slots and never has to cut one that was half emitted.
 */
final class OrderingUnits {
  /** The slots units are hashed into; as Flink's default maximum parallelism. */
  static final int SLOTS = 128;

  private final String tableKey;

  OrderingUnits(String tableKey) {
    this.tableKey = tableKey;
  }

  /** The reader of {@code split} at {@code parallelism}: the one its slot maps to. */
  static int readerOf(ChangelogSplit split, int parallelism) {
    FileSlice slice = split.slice();
    return (int) ((long) slice.slot() * parallelism / slice.slots());
  }

  /**
   * The splits of {@code split}, one per slot of its table's units it touches: read from table
   * {@code table} (which holds its snapshots); {@code window} lists the snapshots whose changes it
   * carries (for a full-snapshot split, none), and {@code appended}, per plain-append snapshot
   * among them, every data file it added ({@link WindowFiles#appendedBy}).
   */
  List<ChangelogSplit> cut(
      Table table,
      ChangelogSplit split,
      List<Snapshot> window,
      Map<Long, List<DataFile>> appended) {
    FileSlice.Unit unit = unit(table);
    if (unit == FileSlice.Unit.TABLE) {
      int slot = FileSlice.slotOf(tableKey, SLOTS);
      return List.of(split.withSlice(new FileSlice(FileSlice.Unit.TABLE, SLOTS, slot)));
    }
    FileSlice any = new FileSlice(unit, SLOTS, 0);
    Set<Integer> slots = new TreeSet<>();
    if (split.fullSnapshot() || split.betweenStates()) {
      // A step between two states changes only rows of the files live in one of them.
      List<Long> states =
          split.betweenStates()
              ? List.of(split.fromSnapshotId(), split.toSnapshotId())
              : List.of(split.toSnapshotId());
      for (long state : states) {
        for (FileScanTask task : WindowFiles.tasks(table, table.snapshot(state))) {
          slots.add(slotOf(any, task.file(), table));
        }
      }
    } else {
      touched(table, window, appended, any, slots);
    }
    List<ChangelogSplit> cut = new ArrayList<>(slots.size());
    for (int slot : slots) {
      cut.add(split.withSlice(new FileSlice(unit, SLOTS, slot)));
    }
    return cut;
  }

  /** What a unit of {@code table} is; see the class comment. */
  static FileSlice.Unit unit(Table table) {
    boolean onePartitionedSpec = table.specs().size() == 1 && table.spec().isPartitioned();
    if (TableKind.of(table.schema()) == TableKind.LOG) {
      return onePartitionedSpec ? FileSlice.Unit.PARTITION : FileSlice.Unit.FILE;
    }
    if (!onePartitionedSpec) {
      return FileSlice.Unit.TABLE;
    }
    Set<Integer> keys = table.schema().identifierFieldIds();
    for (PartitionField field : table.spec().fields()) {
      String transform = field.transform().toString();
      if (!keys.contains(field.sourceId())
          || !(transform.equals("identity") || transform.startsWith("bucket["))) {
        return FileSlice.Unit.TABLE;
      }
    }
    return FileSlice.Unit.PARTITION;
  }

  /**
   * Adds the slots whose rows {@code window}'s snapshots may change: of the data files they add or
   * remove, and of the data files their added or removed delete files may apply to — its referenced
   * file, or (by partition, or everywhere for a delete written unpartitioned) the data files live
   * at the window's end.
   */
  private static void touched(
      Table table,
      List<Snapshot> window,
      Map<Long, List<DataFile>> appended,
      FileSlice any,
      Set<Integer> slots) {
    PartitionSet deletedPartitions = PartitionSet.create(table.specs());
    boolean deletesEverywhere = false;
    for (Snapshot snapshot : window) {
      List<DataFile> added = appended.get(snapshot.snapshotId());
      if (added != null) { // a plain append: its files are all it touches
        added.forEach(file -> slots.add(slotOf(any, file, table)));
        continue;
      }
      SnapshotChanges changes = MetadataCache.shared().changes(table, snapshot);
      for (DataFile file : changes.addedDataFiles()) {
        slots.add(slotOf(any, file, table));
      }
      for (DataFile file : changes.removedDataFiles()) {
        slots.add(slotOf(any, file, table));
      }
      List<DeleteFile> deletes = new ArrayList<>();
      changes.addedDeleteFiles().forEach(deletes::add);
      changes.removedDeleteFiles().forEach(deletes::add);
      for (DeleteFile delete : deletes) {
        String referenced =
            delete.content() == FileContent.EQUALITY_DELETES
                ? null
                : ContentFileUtil.referencedDataFileLocation(delete);
        if (any.unit() == FileSlice.Unit.PARTITION
            && !table.specs().get(delete.specId()).isUnpartitioned()) {
          slots.add(slotOf(any, delete, table)); // a delete's rows share its partition
        } else if (referenced != null && any.unit() == FileSlice.Unit.FILE) {
          slots.add(FileSlice.slotOf(referenced, SLOTS));
        } else if (table.specs().get(delete.specId()).isUnpartitioned()) {
          deletesEverywhere = true;
        } else {
          deletedPartitions.add(delete.specId(), delete.partition());
        }
      }
    }
    if (deletesEverywhere || !deletedPartitions.isEmpty()) {
      Snapshot end = window.get(window.size() - 1);
      for (FileScanTask task : WindowFiles.tasks(table, end)) {
        DataFile file = task.file();
        if (deletesEverywhere || deletedPartitions.contains(file.specId(), file.partition())) {
          slots.add(slotOf(any, file, table));
        }
      }
    }
  }

  private static int slotOf(FileSlice any, ContentFile<?> file, Table table) {
    return FileSlice.slotOf(any.unitKey(file, table.specs()), SLOTS);
  }
}
