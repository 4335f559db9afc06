package io.skade.source.database;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.types.Types;

/**
 * A change's row as a JSON object of its columns, in their order, null columns left out: the same
 * row gives the same text, before and after a column was added to its table (the older rows' new
 * column is null), so a retraction matches the row it retracts. Numbers stay numbers (decimals
 * exact), strings strings; dates, times and timestamps are ISO-8601 strings (a timestamp with time
 * zone in UTC, ending in {@code Z}), binary values base64; structs, lists and maps nest. One
 * instance serves one thread.
 */
public final class RowJson {
  private static final JsonFactory JSON = new JsonFactory();

  /** Per Iceberg row type written, how its columns are written. */
  private final Map<Types.StructType, Layout> layouts = new HashMap<>();

  /** The last row type written, and its layout: consecutive rows mostly share one. */
  private Types.StructType lastType;

  private Layout last;

  /** {@code row}, of Iceberg type {@code type}, as a JSON object. */
  public String of(Types.StructType type, RowData row) {
    if (type != lastType) {
      last =
          layouts.computeIfAbsent(
              type, struct -> Layout.of((RowType) FlinkSchemaUtil.convert(struct.asSchema())));
      lastType = type;
    }
    StringWriter text = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(text)) {
      last.write(json, row);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringWriter does not fail
    }
    return text.toString();
  }

  /** A row type's columns: names, types and getters, metadata columns left out. */
  private record Layout(String[] names, LogicalType[] types, RowData.FieldGetter[] getters) {
    static Layout of(RowType type) {
      int[] kept =
          IntStream.range(0, type.getFieldCount())
              .filter(i -> !MetadataColumns.isMetadataColumn(type.getFieldNames().get(i)))
              .toArray();
      String[] names = new String[kept.length];
      LogicalType[] types = new LogicalType[kept.length];
      RowData.FieldGetter[] getters = new RowData.FieldGetter[kept.length];
      for (int i = 0; i < kept.length; i++) {
        names[i] = type.getFieldNames().get(kept[i]);
        types[i] = type.getTypeAt(kept[i]);
        getters[i] = RowData.createFieldGetter(types[i], kept[i]);
      }
      return new Layout(names, types, getters);
    }

    /** {@code row} as an object of its non-null columns. */
    void write(JsonGenerator json, RowData row) throws IOException {
      json.writeStartObject();
      for (int i = 0; i < names.length; i++) {
        Object value = getters[i].getFieldOrNull(row);
        if (value != null) {
          json.writeFieldName(names[i]);
          RowJson.write(json, types[i], value);
        }
      }
      json.writeEndObject();
    }
  }

  private static void write(JsonGenerator json, LogicalType type, Object value) throws IOException {
    if (value == null) {
      json.writeNull();
      return;
    }
    switch (type.getTypeRoot()) {
      case BOOLEAN -> json.writeBoolean((Boolean) value);
      case INTEGER -> json.writeNumber((Integer) value);
      case BIGINT -> json.writeNumber((Long) value);
      case FLOAT -> json.writeNumber((Float) value);
      case DOUBLE -> json.writeNumber((Double) value);
      case DECIMAL ->
          json.writeNumber(((org.apache.flink.table.data.DecimalData) value).toBigDecimal());
      case CHAR, VARCHAR -> json.writeString(value.toString());
      case DATE -> json.writeString(LocalDate.ofEpochDay((Integer) value).toString());
      case TIME_WITHOUT_TIME_ZONE ->
          json.writeString(LocalTime.ofNanoOfDay((Integer) value * 1_000_000L).toString());
      case TIMESTAMP_WITHOUT_TIME_ZONE ->
          json.writeString(((TimestampData) value).toLocalDateTime().toString());
      case TIMESTAMP_WITH_LOCAL_TIME_ZONE ->
          json.writeString(((TimestampData) value).toInstant().toString());
      case BINARY, VARBINARY ->
          json.writeString(Base64.getEncoder().encodeToString((byte[]) value));
      case ROW -> Layout.of((RowType) type).write(json, (RowData) value);
      case ARRAY -> {
        LogicalType element = ((ArrayType) type).getElementType();
        ArrayData array = (ArrayData) value;
        ArrayData.ElementGetter getter = ArrayData.createElementGetter(element);
        json.writeStartArray();
        for (int i = 0; i < array.size(); i++) {
          write(json, element, getter.getElementOrNull(array, i));
        }
        json.writeEndArray();
      }
      case MAP -> {
        // keys of any type: an array of {"key": ..., "value": ...} entries
        MapType map = (MapType) type;
        MapData data = (MapData) value;
        ArrayData.ElementGetter keys = ArrayData.createElementGetter(map.getKeyType());
        ArrayData.ElementGetter values = ArrayData.createElementGetter(map.getValueType());
        json.writeStartArray();
        for (int i = 0; i < data.size(); i++) {
          json.writeStartObject();
          json.writeFieldName("key");
          write(json, map.getKeyType(), keys.getElementOrNull(data.keyArray(), i));
          json.writeFieldName("value");
          write(json, map.getValueType(), values.getElementOrNull(data.valueArray(), i));
          json.writeEndObject();
        }
        json.writeEndArray();
      }
      default ->
          throw new UnsupportedOperationException(
              "a column of type " + type + " cannot be written as JSON by skade");
    }
  }
}
