package io.skade.source.enumerator;

import io.skade.changelog.TableKind;
import io.skade.source.split.ChangelogSplit;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotChanges;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.transforms.Transform;
import org.apache.iceberg.util.Pair;
import org.apache.iceberg.util.PartitionSet;

/**
 * Cuts a planned split into the ordering units of its table and pins each unit to one reader.
 *
 * <p>All changes of one key must reach one reader, in commit order. On a primary-key table whose
 * only partition spec partitions by identifier fields alone (identity or bucket transforms), a
 * key always lives in one partition, so the unit is the partition: a window becomes one split
 * per reader that owns some of the partitions it touched, filtered to those partitions. On any
 * other primary-key table the unit is the whole table, pinned to one reader. A {@code LOG}
 * table's rows have no key to keep in order, so its splits go round-robin to every reader.
 */
final class OrderingUnits {
  private final String tableKey;
  private int nextReader;

  OrderingUnits(String tableKey) {
    this.tableKey = tableKey;
  }

  /**
   * The pinned splits of {@code split}, read from table {@code table} (which holds its
   * snapshots); {@code window} lists the snapshots whose changes it carries.
   */
  List<PinnedSplit> pin(Table table, ChangelogSplit split, List<Snapshot> window,
      int parallelism) {
    if (TableKind.of(table.schema()) == TableKind.LOG) {
      int reader = nextReader;
      nextReader = (nextReader + 1) % parallelism;
      return List.of(new PinnedSplit(split, reader));
    }
    PartitionSpec spec = partitionUnitSpec(table);
    if (spec == null || parallelism == 1) {
      return List.of(new PinnedSplit(split, Math.floorMod(tableKey.hashCode(), parallelism)));
    }
    PartitionSet partitions = split.fullSnapshot()
        ? partitionsAt(table, split.toSnapshotId())
        : partitionsTouched(table, window);
    Map<Integer, List<Expression>> byReader = new TreeMap<>();
    for (Pair<Integer, StructLike> specAndPartition : partitions) {
      StructLike partition = specAndPartition.second();
      int reader = Math.floorMod(spec.partitionToPath(partition).hashCode(), parallelism);
      byReader.computeIfAbsent(reader, r -> new ArrayList<>()).add(predicate(spec, partition));
    }
    List<PinnedSplit> pinned = new ArrayList<>(byReader.size());
    byReader.forEach((reader, predicates) -> pinned.add(new PinnedSplit(
        split.withFilter(predicates.stream().reduce(Expressions.alwaysFalse(), Expressions::or)),
        reader)));
    return pinned;
  }

  /**
   * The spec whose partitions are ordering units: the table's only spec, when every partition
   * field is an identity or bucket transform of an identifier field; otherwise null.
   */
  static PartitionSpec partitionUnitSpec(Table table) {
    if (table.specs().size() != 1 || table.spec().isUnpartitioned()) {
      return null;
    }
    Set<Integer> keys = table.schema().identifierFieldIds();
    for (PartitionField field : table.spec().fields()) {
      String transform = field.transform().toString();
      if (!keys.contains(field.sourceId())
          || !(transform.equals("identity") || transform.startsWith("bucket["))) {
        return null;
      }
    }
    return table.spec();
  }

  private static PartitionSet partitionsTouched(Table table, List<Snapshot> window) {
    PartitionSet partitions = PartitionSet.create(table.specs());
    for (Snapshot snapshot : window) {
      SnapshotChanges changes = SnapshotChanges.builderFor(table).snapshot(snapshot).build();
      changes.addedDataFiles().forEach(f -> add(partitions, f));
      changes.removedDataFiles().forEach(f -> add(partitions, f));
      changes.addedDeleteFiles().forEach(f -> add(partitions, f));
      changes.removedDeleteFiles().forEach(f -> add(partitions, f));
    }
    return partitions;
  }

  private static PartitionSet partitionsAt(Table table, long snapshotId) {
    PartitionSet partitions = PartitionSet.create(table.specs());
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(snapshotId).planFiles()) {
      tasks.forEach(task -> add(partitions, task.file()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return partitions;
  }

  private static void add(PartitionSet partitions, ContentFile<?> file) {
    partitions.add(file.specId(), file.partition());
  }

  /** The rows of one partition, as a row filter: each field's transform equals its value. */
  private static Expression predicate(PartitionSpec spec, StructLike partition) {
    Expression all = Expressions.alwaysTrue();
    List<PartitionField> fields = spec.fields();
    for (int i = 0; i < fields.size(); i++) {
      PartitionField field = fields.get(i);
      String column = spec.schema().findColumnName(field.sourceId());
      Object value = partition.get(i, Object.class);
      Transform<?, ?> transform = field.transform();
      Expression one;
      if (value == null) {
        one = Expressions.isNull(column);
      } else if (transform.isIdentity()) {
        one = Expressions.equal(column, value);
      } else {
        int buckets = Integer.parseInt(transform.toString().replaceAll("\\D", ""));
        one = Expressions.equal(Expressions.bucket(column, buckets), value);
      }
      all = Expressions.and(all, one);
    }
    return all;
  }
}
