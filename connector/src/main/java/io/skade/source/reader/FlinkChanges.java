package io.skade.source.reader;

import io.skade.changelog.ChangeType;
import io.skade.changelog.ChangelogBatch;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * The changelog engine's changes as Flink sees them: a {@link ChangeType} as a {@link RowKind}, and
 * a row of a {@link ChangelogBatch} as Flink internal data read straight from its Arrow vectors
 * (strings as UTF-8 bytes, never through {@code String}). The engine itself knows no Flink.
 */
public final class FlinkChanges {
  private FlinkChanges() {}

  /** The Flink row kind of a change type. */
  public static RowKind rowKind(ChangeType type) {
    return switch (type) {
      case INSERT -> RowKind.INSERT;
      case UPDATE_BEFORE -> RowKind.UPDATE_BEFORE;
      case UPDATE_AFTER -> RowKind.UPDATE_AFTER;
      case DELETE -> RowKind.DELETE;
    };
  }

  /** Row {@code row} of {@code batch} as Flink internal data with its row kind. */
  public static RowData rowData(ChangelogBatch batch, int row) {
    GenericRowData data = new GenericRowData(rowKind(batch.changeType(row)), batch.columnCount());
    for (int c = 0; c < batch.columnCount(); c++) {
      FieldVector vector = batch.vector(c);
      data.setField(c, vector.isNull(row) ? null : value(vector, batch.columnType(c), row));
    }
    return data;
  }

  private static Object value(FieldVector vector, Type type, int row) {
    return switch (type.typeId()) {
      case BOOLEAN -> ((BitVector) vector).get(row) == 1;
      case INTEGER -> ((IntVector) vector).get(row);
      case LONG -> ((BigIntVector) vector).get(row);
      case FLOAT -> ((Float4Vector) vector).get(row);
      case DOUBLE -> ((Float8Vector) vector).get(row);
      case DATE -> ((DateDayVector) vector).get(row);
      case TIME -> (int) (((TimeMicroVector) vector).get(row) / 1000); // Flink TIME: millis
      case TIMESTAMP ->
          timestamp(
              vector instanceof TimeStampMicroTZVector tz
                  ? tz.get(row)
                  : ((TimeStampMicroVector) vector).get(row));
      case STRING -> StringData.fromBytes(((VarCharVector) vector).get(row));
      case UUID, FIXED -> ((FixedSizeBinaryVector) vector).get(row);
      case BINARY -> ((VarBinaryVector) vector).get(row);
      case DECIMAL -> {
        Types.DecimalType decimal = (Types.DecimalType) type;
        yield DecimalData.fromBigDecimal(
            ((DecimalVector) vector).getObject(row), decimal.precision(), decimal.scale());
      }
      default -> throw new UnsupportedOperationException("type " + type);
    };
  }

  private static TimestampData timestamp(long micros) {
    return TimestampData.fromEpochMillis(
        Math.floorDiv(micros, 1000), (int) Math.floorMod(micros, 1000) * 1000);
  }
}
