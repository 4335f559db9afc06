package io.skade.changelog;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
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
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.arrow.ArrowSchemaUtil;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Change rows in Arrow columns: the data columns (Iceberg's Arrow mapping) plus {@value
 * #CHANGE_TYPE} holding the exact strings {@code INSERT}, {@code UPDATE_BEFORE}, {@code
 * UPDATE_AFTER}, {@code DELETE}. Flink's view of a row (its row kind and its values read straight
 * from the vectors) is {@code io.skade.source.reader.FlinkChanges}: this engine class knows no
 * Flink.
 *
 * <p>Identity keys for matching rows are built once per batch into one buffer: per key column a
 * null marker, then the value's fixed-width bytes or its length and bytes. The encoding can be read
 * back column by column, so it is injective: two rows have equal keys exactly when their key values
 * are equal (no separator to collide with, null distinct from empty).
 *
 * <p>Owns its vectors: close it.
 */
public final class ChangelogBatch implements AutoCloseable {
  /** The change-type column's name. */
  public static final String CHANGE_TYPE = "_change_type";

  private static final byte[][] TYPE_NAMES =
      Arrays.stream(ChangeType.values())
          .map(type -> type.name().getBytes(StandardCharsets.US_ASCII))
          .toArray(byte[][]::new);

  private final VectorSchemaRoot root;

  /** The data columns' vectors and types, by position: looked up once, read per row. */
  private final FieldVector[] vectors;

  private final Type[] columnTypes;
  private final ChangeType[] types;
  private final long[] snapshotIds;
  private final byte[] keys;
  private final int[] keyOffsets;

  private ChangelogBatch(
      Schema schema,
      VectorSchemaRoot root,
      ChangeType[] types,
      long[] snapshotIds,
      byte[] keys,
      int[] keyOffsets) {
    this.snapshotIds = snapshotIds;
    this.root = root;
    List<Types.NestedField> columns = schema.columns();
    this.vectors = new FieldVector[columns.size()];
    this.columnTypes = new Type[columns.size()];
    for (int c = 0; c < vectors.length; c++) {
      vectors[c] = root.getVector(c);
      columnTypes[c] = columns.get(c).type();
    }
    this.types = types;
    this.keys = keys;
    this.keyOffsets = keyOffsets;
  }

  /**
   * Builds a batch of {@code changes}, whose rows are of {@code schema}; identity keys are built
   * from {@code keyColumns} (all columns when empty, as on a log table).
   */
  public static ChangelogBatch of(
      Schema schema, List<String> keyColumns, List<ChangeRow> changes, BufferAllocator allocator) {
    List<Field> fields = new ArrayList<>(ArrowSchemaUtil.convert(schema).getFields());
    fields.add(new Field(CHANGE_TYPE, FieldType.notNullable(ArrowType.Utf8.INSTANCE), null));
    VectorSchemaRoot root =
        VectorSchemaRoot.create(new org.apache.arrow.vector.types.pojo.Schema(fields), allocator);
    try {
      root.allocateNew();
      int rows = changes.size();
      ChangeType[] types = new ChangeType[rows];
      long[] snapshotIds = new long[rows];
      List<Types.NestedField> columns = schema.columns();
      FieldVector[] vectors = new FieldVector[columns.size()];
      Type[] columnTypes = new Type[columns.size()];
      for (int c = 0; c < vectors.length; c++) {
        vectors[c] = root.getVector(c);
        columnTypes[c] = columns.get(c).type();
      }
      VarCharVector changeType = (VarCharVector) root.getVector(CHANGE_TYPE);
      for (int i = 0; i < rows; i++) {
        ChangeRow change = changes.get(i);
        types[i] = change.type();
        snapshotIds[i] = change.snapshotId();
        changeType.setSafe(i, TYPE_NAMES[change.type().ordinal()]);
        Record row = change.row();
        for (int c = 0; c < vectors.length; c++) {
          // Rows are of the batch's schema: by position, not by name.
          set(vectors[c], columnTypes[c], i, row.get(c));
        }
      }
      root.setRowCount(rows);
      List<String> keyNames =
          keyColumns.isEmpty()
              ? columns.stream().map(Types.NestedField::name).toList()
              : keyColumns;
      FieldVector[] keyVectors = keyNames.stream().map(root::getVector).toArray(FieldVector[]::new);
      KeyBuffer keys = new KeyBuffer(rows);
      for (int i = 0; i < rows; i++) {
        keys.startRow(i);
        for (FieldVector key : keyVectors) {
          keys.append(key, i);
        }
      }
      keys.finish(rows);
      return new ChangelogBatch(schema, root, types, snapshotIds, keys.bytes(), keys.offsets());
    } catch (RuntimeException e) {
      root.close();
      throw e;
    }
  }

  public int rowCount() {
    return root.getRowCount();
  }

  /** The Arrow columns: the data columns, then {@value #CHANGE_TYPE}. */
  public VectorSchemaRoot root() {
    return root;
  }

  public ChangeType changeType(int row) {
    return types[row];
  }

  /** The snapshot that made the change of {@code row} (in collapsed mode, the window's last). */
  public long snapshotId(int row) {
    return snapshotIds[row];
  }

  /** The identity key of a row: a read-only view of its bytes in the batch's key buffer. */
  public ByteBuffer key(int row) {
    return ByteBuffer.wrap(keys, keyOffsets[row], keyOffsets[row + 1] - keyOffsets[row])
        .asReadOnlyBuffer();
  }

  public boolean sameKey(int a, int b) {
    return Arrays.equals(
        keys, keyOffsets[a], keyOffsets[a + 1], keys, keyOffsets[b], keyOffsets[b + 1]);
  }

  /** How many data columns a row has (the vectors before {@value #CHANGE_TYPE}). */
  public int columnCount() {
    return vectors.length;
  }

  /** The vector of data column {@code column}. */
  public FieldVector vector(int column) {
    return vectors[column];
  }

  /** The Iceberg type of data column {@code column}. */
  public Type columnType(int column) {
    return columnTypes[column];
  }

  @Override
  public void close() {
    root.close();
  }

  // ---- values ------------------------------------------------------------------------------

  private static void set(FieldVector vector, Type type, int row, Object value) {
    if (value == null) {
      vector.setNull(row);
      return;
    }
    switch (type.typeId()) {
      case BOOLEAN -> ((BitVector) vector).setSafe(row, (Boolean) value ? 1 : 0);
      case INTEGER -> ((IntVector) vector).setSafe(row, (Integer) value);
      case LONG -> ((BigIntVector) vector).setSafe(row, (Long) value);
      case FLOAT -> ((Float4Vector) vector).setSafe(row, (Float) value);
      case DOUBLE -> ((Float8Vector) vector).setSafe(row, (Double) value);
      case DATE -> ((DateDayVector) vector).setSafe(row, (int) ((LocalDate) value).toEpochDay());
      case TIME ->
          ((TimeMicroVector) vector).setSafe(row, ((LocalTime) value).toNanoOfDay() / 1000);
      case TIMESTAMP -> {
        if (((Types.TimestampType) type).shouldAdjustToUTC()) {
          ((TimeStampMicroTZVector) vector)
              .setSafe(
                  row,
                  micros(
                      ((OffsetDateTime) value)
                          .withOffsetSameInstant(ZoneOffset.UTC)
                          .toLocalDateTime()));
        } else {
          ((TimeStampMicroVector) vector).setSafe(row, micros((LocalDateTime) value));
        }
      }
      case STRING ->
          ((VarCharVector) vector).setSafe(row, value.toString().getBytes(StandardCharsets.UTF_8));
      case UUID -> ((FixedSizeBinaryVector) vector).setSafe(row, uuidBytes((UUID) value));
      case FIXED -> ((FixedSizeBinaryVector) vector).setSafe(row, (byte[]) value);
      case BINARY -> ((VarBinaryVector) vector).setSafe(row, bytes((ByteBuffer) value));
      case DECIMAL -> ((DecimalVector) vector).setSafe(row, (BigDecimal) value);
      default ->
          throw new UnsupportedOperationException(
              "column "
                  + vector.getName()
                  + " has"
                  + " type "
                  + type
                  + "; skade's changelog batches hold primitive columns only so far");
    }
  }

  private static long micros(LocalDateTime value) {
    return ChronoUnit.MICROS.between(LocalDateTime.ofEpochSecond(0, 0, ZoneOffset.UTC), value);
  }

  private static byte[] uuidBytes(UUID uuid) {
    return ByteBuffer.allocate(16)
        .putLong(uuid.getMostSignificantBits())
        .putLong(uuid.getLeastSignificantBits())
        .array();
  }

  private static byte[] bytes(ByteBuffer buffer) {
    byte[] out = new byte[buffer.remaining()];
    buffer.duplicate().get(out);
    return out;
  }

  /** Identity keys of all rows of a batch, appended into one growing buffer. */
  private static final class KeyBuffer {
    private byte[] bytes = new byte[64];
    private int length;
    private final int[] offsets;

    KeyBuffer(int rows) {
      this.offsets = new int[rows + 1];
    }

    void startRow(int row) {
      offsets[row] = length;
    }

    void finish(int rows) {
      offsets[rows] = length;
    }

    byte[] bytes() {
      return bytes;
    }

    int[] offsets() {
      return offsets;
    }

    void append(FieldVector vector, int row) {
      if (vector.isNull(row)) {
        put((byte) 0);
        return;
      }
      put((byte) 1);
      if (vector instanceof VarCharVector || vector instanceof VarBinaryVector) {
        byte[] value =
            vector instanceof VarCharVector chars
                ? chars.get(row)
                : ((VarBinaryVector) vector).get(row);
        putInt(value.length); // the length makes variable-width values self-delimiting
        put(value);
      } else if (vector instanceof BitVector bits) {
        put((byte) bits.get(row));
      } else {
        // A fixed-width value: the vector's own bytes for the row.
        int width = ((BaseFixedWidthVector) vector).getTypeWidth();
        byte[] value = new byte[width];
        vector.getDataBuffer().getBytes((long) row * width, value);
        put(value);
      }
    }

    private void put(byte value) {
      ensure(1);
      bytes[length++] = value;
    }

    private void put(byte[] value) {
      ensure(value.length);
      System.arraycopy(value, 0, bytes, length, value.length);
      length += value.length;
    }

    private void putInt(int value) {
      ensure(4);
      bytes[length++] = (byte) (value >>> 24);
      bytes[length++] = (byte) (value >>> 16);
      bytes[length++] = (byte) (value >>> 8);
      bytes[length++] = (byte) value;
    }

    private void ensure(int extra) {
      if (length + extra > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + extra));
      }
    }
  }
}
