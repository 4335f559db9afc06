package io.skade.lookup;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.transforms.Transform;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SerializableFunction;

/**
 * Which partitions may hold a key, per partition spec, by applying each partition field's transform
 * to the key's value: for a probe {@code column = v} the partition field {@code t(column)} of a
 * file that may hold the key equals {@code t(v)}, for every Iceberg transform (identity, bucket,
 * truncate, year to hour); fields over other columns, and void ones, rule nothing out. What
 * Iceberg's inclusive projection of the key's equalities gives, without building, projecting and
 * binding an expression at each probe.
 */
final class KeyPartitions {
  private final List<Types.NestedField> key;
  private final Map<Integer, Spec> specs = new ConcurrentHashMap<>();

  /** The partitions of keys of the columns {@code key}. */
  KeyPartitions(List<Types.NestedField> key) {
    this.key = key;
  }

  /**
   * Whether a file of {@code spec} in partition {@code partition} may hold the key {@code
   * keyValues} (Iceberg internal values, none null).
   */
  boolean mayHold(PartitionSpec spec, StructLike partition, List<?> keyValues) {
    return specs.computeIfAbsent(spec.specId(), id -> new Spec(spec)).mayHold(partition, keyValues);
  }

  /** One spec's fields over key columns: the key column, the transform, the order of results. */
  private final class Spec {
    private final int[] fields;
    private final int[] keyColumns;
    private final SerializableFunction<Object, Object>[] transforms;
    private final Comparator<Object>[] order;

    @SuppressWarnings("unchecked")
    Spec(PartitionSpec spec) {
      List<PartitionField> all = spec.fields();
      List<Types.NestedField> results = spec.partitionType().fields();
      int n = 0;
      int[] fieldsFound = new int[all.size()];
      int[] columnsFound = new int[all.size()];
      for (int i = 0; i < all.size(); i++) {
        int column = keyColumn(all.get(i).sourceId());
        if (column >= 0 && !all.get(i).transform().isVoid()) {
          fieldsFound[n] = i;
          columnsFound[n++] = column;
        }
      }
      fields = Arrays.copyOf(fieldsFound, n);
      keyColumns = Arrays.copyOf(columnsFound, n);
      transforms = new SerializableFunction[n];
      order = new Comparator[n];
      for (int j = 0; j < n; j++) {
        Transform<Object, Object> transform =
            (Transform<Object, Object>) all.get(fields[j]).transform();
        transforms[j] = transform.bind(key.get(keyColumns[j]).type());
        // Compares as Iceberg orders the field's values: a string as any CharSequence.
        order[j] = Comparators.forType(results.get(fields[j]).type().asPrimitiveType());
      }
    }

    boolean mayHold(StructLike partition, List<?> keyValues) {
      for (int j = 0; j < fields.length; j++) {
        Object stored = partition.get(fields[j], Object.class);
        Object wanted;
        try {
          wanted = transforms[j].apply(keyValues.get(keyColumns[j]));
        } catch (UnsupportedOperationException e) {
          continue; // a transform this Iceberg does not know (a newer writer's): no pruning
        }
        if (stored == null || wanted == null
            ? stored != wanted
            : order[j].compare(stored, wanted) != 0) {
          return false;
        }
      }
      return true;
    }
  }

  private int keyColumn(int fieldId) {
    for (int i = 0; i < key.size(); i++) {
      if (key.get(i).fieldId() == fieldId) {
        return i;
      }
    }
    return -1;
  }
}
