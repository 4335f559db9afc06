package io.skade.lookup;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;
import org.apache.iceberg.util.UUIDUtil;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * Iceberg values and the values a Parquet column stores, both ways: a key as the file stores it (to
 * compare with page bounds and decoded pages), a stored value as Iceberg's generic one (for the
 * rows a probe returns), and which pairs of types convert here.
 *
 * <p>Hand-written because neither library offers it apart from a whole read: parquet-mr knows no
 * Iceberg types, and Iceberg's conversions live inside its Parquet value readers, which read a
 * column chunk in row order. It is a mapping per type, not measured apart: in
 * ProbeDecodingBenchmark it is inside every probe's figure.
 */
final class StoredValues {
  /** A key value no value of the file's column can equal. */
  static final Object NO_VALUE = new Object();

  private StoredValues() {}

  /** A column index or statistics bound, as parquet-mr's readers read the values. */
  static Object statValue(PrimitiveType type, ByteBuffer bound) {
    ByteBuffer little = bound.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    return switch (type.getPrimitiveTypeName()) {
      case INT32 -> little.getInt(little.position());
      case INT64 -> little.getLong(little.position());
      case FLOAT -> little.getFloat(little.position());
      case DOUBLE -> little.getDouble(little.position());
      case BOOLEAN -> little.get(little.position()) != 0;
      default -> {
        byte[] bytes = new byte[little.remaining()];
        little.get(bytes);
        yield Binary.fromConstantByteArray(bytes);
      }
    };
  }

  /**
   * An Iceberg internal key value as this file stores it: null when it has no stored form here (the
   * probe then reads through Iceberg), {@link #NO_VALUE} when no stored value can equal it.
   */
  static Object storedValue(Type type, PrimitiveType stored, Object value) {
    PrimitiveTypeName physical = stored.getPrimitiveTypeName();
    if (!decodable(type, stored)) {
      return null;
    }
    return switch (type.typeId()) {
      case BOOLEAN, INTEGER, DATE, TIME, TIMESTAMP -> value;
      case LONG -> {
        long v = (Long) value;
        if (physical == PrimitiveTypeName.INT64) {
          yield v;
        }
        yield v == (int) v ? (Object) (int) v : NO_VALUE;
      }
      case STRING -> Binary.fromString(value.toString());
      case BINARY, FIXED -> Binary.fromConstantByteBuffer(((ByteBuffer) value).duplicate());
      case UUID -> Binary.fromConstantByteArray(UUIDUtil.convert((java.util.UUID) value));
      default -> null; // decimals and floating point: compared by Iceberg's reader
    };
  }

  /** The Iceberg generic value of a stored one. */
  static Object generic(Type type, PrimitiveType stored, Object value) {
    return switch (type.typeId()) {
      case DATE -> DateTimeUtil.dateFromDays((Integer) value);
      case LONG -> value instanceof Integer i ? (Object) (long) i : value;
      case DOUBLE -> value instanceof Float f ? (Object) (double) f : value;
      case TIME -> DateTimeUtil.timeFromMicros((Long) value);
      case TIMESTAMP ->
          ((Types.TimestampType) type).shouldAdjustToUTC()
              ? DateTimeUtil.timestamptzFromMicros((Long) value)
              : DateTimeUtil.timestampFromMicros((Long) value);
      case STRING -> new String(((Binary) value).getBytesUnsafe(), StandardCharsets.UTF_8);
      case BINARY -> ByteBuffer.wrap(((Binary) value).getBytes());
      case FIXED -> ((Binary) value).getBytes();
      case UUID -> UUIDUtil.convert(((Binary) value).getBytes());
      case DECIMAL -> {
        int scale = ((Types.DecimalType) type).scale();
        if (value instanceof Integer i) {
          yield BigDecimal.valueOf(i, scale);
        }
        if (value instanceof Long l) {
          yield BigDecimal.valueOf(l, scale);
        }
        yield new BigDecimal(new BigInteger(((Binary) value).getBytes()), scale);
      }
      default -> value;
    };
  }

  /** Whether values of Parquet type {@code stored} decode to Iceberg type {@code type} here. */
  static boolean decodable(Type type, PrimitiveType stored) {
    PrimitiveTypeName physical = stored.getPrimitiveTypeName();
    LogicalTypeAnnotation logical = stored.getLogicalTypeAnnotation();
    return switch (type.typeId()) {
      case BOOLEAN -> physical == PrimitiveTypeName.BOOLEAN;
      case INTEGER, DATE -> physical == PrimitiveTypeName.INT32;
      case LONG -> physical == PrimitiveTypeName.INT64 || physical == PrimitiveTypeName.INT32;
      case FLOAT -> physical == PrimitiveTypeName.FLOAT;
      case DOUBLE -> physical == PrimitiveTypeName.DOUBLE || physical == PrimitiveTypeName.FLOAT;
      case TIME, TIMESTAMP -> physical == PrimitiveTypeName.INT64 && micros(logical);
      case STRING, BINARY -> physical == PrimitiveTypeName.BINARY;
      case FIXED, UUID -> physical == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
      case DECIMAL -> physical != PrimitiveTypeName.INT96 && physical != PrimitiveTypeName.BOOLEAN;
      default -> false;
    };
  }

  private static boolean micros(LogicalTypeAnnotation logical) {
    if (logical instanceof LogicalTypeAnnotation.TimestampLogicalTypeAnnotation timestamp) {
      return timestamp.getUnit() == LogicalTypeAnnotation.TimeUnit.MICROS;
    }
    if (logical instanceof LogicalTypeAnnotation.TimeLogicalTypeAnnotation time) {
      return time.getUnit() == LogicalTypeAnnotation.TimeUnit.MICROS;
    }
    return false;
  }
}
