package io.skade.source;

import java.io.Serializable;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;

/**
 * Turns a change into the records a {@link SkadeSource} emits. The change is a {@link RowData} of
 * the source's projected columns whose {@code RowKind} says what happened ({@code +I -U +U -D}); it
 * is only valid during the call, so keep a copy, not the row itself.
 *
 * @param <T> the emitted type
 */
public interface ChangeDeserializer<T> extends Serializable, ResultTypeQueryable<T> {

  /** Emits the records of one change (any number, usually one). */
  void deserialize(RowData change, ChangeMetadata metadata, Collector<T> out) throws Exception;

  /** The changes themselves, as Flink's internal rows of {@code rowType}. */
  static ChangeDeserializer<RowData> rowData(RowType rowType) {
    InternalTypeInfo<RowData> type = InternalTypeInfo.of(rowType);
    return new ChangeDeserializer<>() {
      @Override
      public void deserialize(RowData change, ChangeMetadata metadata, Collector<RowData> out) {
        out.collect(change);
      }

      @Override
      public InternalTypeInfo<RowData> getProducedType() {
        return type;
      }
    };
  }
}
