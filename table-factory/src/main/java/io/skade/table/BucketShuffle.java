package io.skade.table;

import java.io.Serializable;
import java.util.List;
import java.util.Optional;
import org.apache.flink.table.connector.source.abilities.SupportsLookupCustomShuffle.InputDataPartitioner;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.RowDataWrapper;
import org.apache.iceberg.transforms.Transform;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.SerializableFunction;

/**
 * A lookup join's input sent to the lookup task that owns its key's bucket ({@link
 * org.apache.flink.table.connector.source.abilities.SupportsLookupCustomShuffle}, asked for with
 * the hint {@code LOOKUP('table'='dim', 'shuffle'='true')}): the probes of one bucket all go to one
 * task, so each task reads, and its caches hold, only the files of its own buckets.
 *
 * <p>The bucket is the one Iceberg's {@code bucket(column, N)} partition field of the table's
 * current spec gives the key's value, as its writers computed it. Routing is an optimization only:
 * a probe reads the table's current files wherever it runs, so a spec that changed since the job
 * was planned costs cache locality, never a row.
 *
 * @param column the bucketed column
 * @param type its Iceberg type
 * @param transform its {@code bucket[N]} transform
 */
record BucketShuffle(String column, Type type, Transform<?, ?> transform) implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The table's single bucket field, when its current spec has exactly one. */
  static Optional<BucketShuffle> of(Table table) {
    List<PartitionField> buckets =
        table.spec().fields().stream()
            .filter(field -> field.transform().toString().startsWith("bucket["))
            .toList();
    if (buckets.size() != 1) {
      return Optional.empty();
    }
    PartitionField field = buckets.get(0);
    Types.NestedField source = table.schema().findField(field.sourceId());
    return Optional.of(new BucketShuffle(source.name(), source.type(), field.transform()));
  }

  /**
   * The partitioner of lookup keys {@code keyColumns} (Iceberg names, in the order of the key rows
   * Flink passes), of Flink type {@code keyType}; empty when the keys do not hold the bucketed
   * column, whose probes may need every bucket.
   */
  Optional<InputDataPartitioner> partitioner(List<String> keyColumns, RowType keyType) {
    int position = keyColumns.indexOf(column);
    if (position < 0) {
      return Optional.empty();
    }
    return Optional.of(new Partitioner(this, keyType, position));
  }

  /** Sends a key row to its bucket's task: the bucket modulo the tasks. */
  private static final class Partitioner implements InputDataPartitioner {
    private static final long serialVersionUID = 1L;

    private final BucketShuffle buckets;
    private final LogicalType columnType;
    private final int position;
    private transient RowData.FieldGetter value;
    private transient RowDataWrapper column;
    private transient SerializableFunction<Object, Integer> bucket;

    Partitioner(BucketShuffle buckets, RowType keyType, int position) {
      this.buckets = buckets;
      this.columnType = keyType.getTypeAt(position);
      this.position = position;
    }

    @Override
    public int partition(RowData joinKeys, int numPartitions) {
      if (bucket == null) {
        value = RowData.createFieldGetter(columnType.copy(true), position);
        // Iceberg's view of the value in the form its transforms take (strings, decimals, times).
        column =
            new RowDataWrapper(
                RowType.of(columnType.copy(true)),
                Types.StructType.of(Types.NestedField.optional(1, "key", buckets.type())));
        @SuppressWarnings("unchecked")
        Transform<Object, Integer> transform = (Transform<Object, Integer>) buckets.transform();
        bucket = transform.bind(buckets.type());
      }
      Object key =
          column.wrap(GenericRowData.of(value.getFieldOrNull(joinKeys))).get(0, Object.class);
      Integer b = bucket.apply(key);
      return b == null ? 0 : b % numPartitions; // a null key joins nothing: any task will do
    }

    @Override
    public boolean isDeterministic() {
      return true;
    }
  }
}
