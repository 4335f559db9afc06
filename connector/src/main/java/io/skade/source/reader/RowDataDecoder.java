package io.skade.source.reader;

import io.skade.scan.RecordDecoder;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.data.FlinkParquetReaders;
import org.apache.iceberg.flink.data.RowDataUtil;
import org.apache.iceberg.parquet.ParquetValueReader;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;
import org.apache.iceberg.util.UUIDUtil;
import org.apache.parquet.schema.MessageType;

/**
 * Decodes data files straight into Flink's internal rows with Iceberg's Flink Parquet reader
 * (strings stay UTF-8 bytes), each behind a {@link Record} that gives the changelog engine
 * Iceberg's generic values when it reads a column (for deletes, filters and pairing). A change's
 * row then reaches Flink as it was decoded: no {@code String} in between, and Flink copies a plain
 * row of its own.
 *
 * <p>Columns whose Flink form loses what Iceberg's generic value holds (a {@code time}'s
 * microseconds, nanosecond timestamps) or that nest (structs, lists, maps) are not decoded here: a
 * schema with one is read into Iceberg's generic records. One decoder serves one thread.
 */
public final class RowDataDecoder implements RecordDecoder {
  /** Per struct decoded, its columns: how they are read and where. */
  private final Map<Types.StructType, Layout> layouts = new HashMap<>();

  /** The last selection made: consecutive rows of a read select the same columns. */
  private Selection selection;

  @Override
  public boolean decodes(Schema schema) {
    return layout(schema).decodable();
  }

  @Override
  public ParquetValueReader<?> reader(Schema required, MessageType fileSchema, FileScanTask task) {
    return FlinkParquetReaders.buildReader(
        required, fileSchema, PartitionUtil.constantsMap(task, RowDataUtil::convertConstant));
  }

  @Override
  public Function<Object, Record> records(Schema required) {
    Layout layout = layout(required);
    return row -> new DecodedRow(layout, (GenericRowData) row);
  }

  @Override
  public boolean decoded(Record row) {
    return row instanceof DecodedRow;
  }

  @Override
  public Record select(Record row, Schema target) {
    DecodedRow decoded = (DecodedRow) row;
    Selection last = selection;
    if (last == null || last.from() != decoded.layout || last.to() != target) {
      int[] positions =
          target.columns().stream().mapToInt(f -> decoded.layout.position(f.name())).toArray();
      last = selection = new Selection(decoded.layout, target, positions, layout(target));
    }
    GenericRowData out = new GenericRowData(last.positions().length);
    for (int i = 0; i < last.positions().length; i++) {
      out.setField(i, decoded.row.getField(last.positions()[i]));
    }
    return new DecodedRow(last.layout(), out);
  }

  private Layout layout(Schema schema) {
    return layouts.computeIfAbsent(schema.asStruct(), Layout::of);
  }

  /**
   * Columns of rows of layout {@code from} selected by {@code to}: their positions, their layout.
   */
  private record Selection(Layout from, Schema to, int[] positions, Layout layout) {}

  /**
   * The Flink row of {@code change}'s record when this decoded it, with {@code kind}; else null.
   */
  public static RowData rowData(Record change, RowKind kind) {
    return change instanceof DecodedRow decoded ? decoded.withKind(kind) : null;
  }

  /**
   * A decoded struct's columns: how each generic value is read (null for a column this does not
   * decode), and each name's position.
   */
  private record Layout(Types.StructType struct, Getter[] getters, Map<String, Integer> positions) {
    static Layout of(Types.StructType struct) {
      List<Types.NestedField> fields = struct.fields();
      Getter[] getters = new Getter[fields.size()];
      Map<String, Integer> positions = new HashMap<>();
      for (int i = 0; i < getters.length; i++) {
        getters[i] = getter(fields.get(i).type(), i);
        positions.put(fields.get(i).name(), i);
      }
      return new Layout(struct, getters, positions);
    }

    boolean decodable() {
      return Arrays.stream(getters).allMatch(Objects::nonNull);
    }

    int position(String name) {
      Integer pos = positions.get(name);
      return pos == null ? -1 : pos;
    }
  }

  /** How column {@code pos} of {@code type} is read as Iceberg's generic value; null: it is not. */
  private static Getter getter(Type type, int pos) {
    return switch (type.typeId()) {
      case BOOLEAN -> row -> row.getBoolean(pos);
      case INTEGER -> row -> row.getInt(pos);
      case LONG -> row -> row.getLong(pos);
      case FLOAT -> row -> row.getFloat(pos);
      case DOUBLE -> row -> row.getDouble(pos);
      case DATE -> row -> LocalDate.ofEpochDay(row.getInt(pos));
      case TIMESTAMP ->
          ((Types.TimestampType) type).shouldAdjustToUTC()
              ? row -> row.getTimestamp(pos, 6).toInstant().atOffset(ZoneOffset.UTC)
              : row -> row.getTimestamp(pos, 6).toLocalDateTime();
      case STRING -> row -> row.getString(pos).toString();
      case UUID -> row -> UUIDUtil.convert(row.getBinary(pos));
      case FIXED -> row -> row.getBinary(pos);
      case BINARY -> row -> ByteBuffer.wrap(row.getBinary(pos));
      case DECIMAL -> {
        Types.DecimalType decimal = (Types.DecimalType) type;
        yield row -> row.getDecimal(pos, decimal.precision(), decimal.scale()).toBigDecimal();
      }
      default -> null; // time (millisecond rows), nanosecond timestamps, nested and newer types
    };
  }

  /** Reads one column's generic value from a row where it is not null. */
  @FunctionalInterface
  private interface Getter {
    Object get(RowData row);
  }

  /** A decoded Flink row as a read-only Iceberg record of generic values. */
  private static final class DecodedRow implements Record {
    private final Layout layout;
    private final GenericRowData row;
    private boolean handedOut;

    DecodedRow(Layout layout, GenericRowData row) {
      this.layout = layout;
      this.row = row;
    }

    /**
     * The row with {@code kind}: itself the first time, then a copy of its fields (a record that is
     * emitted twice keeps the kind it was first emitted with).
     */
    RowData withKind(RowKind kind) {
      if (!handedOut) {
        handedOut = true;
        row.setRowKind(kind);
        return row;
      }
      GenericRowData copy = new GenericRowData(kind, row.getArity());
      for (int i = 0; i < row.getArity(); i++) {
        copy.setField(i, row.getField(i));
      }
      return copy;
    }

    @Override
    public Types.StructType struct() {
      return layout.struct();
    }

    @Override
    public Object get(int pos) {
      return row.isNullAt(pos) ? null : layout.getters()[pos].get(row);
    }

    @Override
    public <T> T get(int pos, Class<T> javaClass) {
      return javaClass.cast(get(pos));
    }

    @Override
    public Object getField(String name) {
      int pos = layout.position(name);
      return pos < 0 ? null : get(pos);
    }

    @Override
    public int size() {
      return row.getArity();
    }

    @Override
    public <T> void set(int pos, T value) {
      throw new UnsupportedOperationException("a row decoded from a data file is read-only");
    }

    @Override
    public void setField(String name, Object value) {
      throw new UnsupportedOperationException("a row decoded from a data file is read-only");
    }

    @Override
    public Record copy() {
      return generic();
    }

    @Override
    public Record copy(Map<String, Object> overwriteValues) {
      return generic().copy(overwriteValues);
    }

    private GenericRecord generic() {
      GenericRecord copy = GenericRecord.create(layout.struct());
      for (int i = 0; i < size(); i++) {
        copy.set(i, get(i));
      }
      return copy;
    }

    @Override
    public String toString() {
      return generic().toString();
    }
  }
}
