package io.skade.source.database;

import io.skade.sink.TableRow;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.types.Types;

/** {@link DatabaseChangeDeserializer#tableRows}: changes as rows of fixed types, per table. */
final class TableRowsDeserializer implements DatabaseChangeDeserializer<TableRow> {
  private static final long serialVersionUID = 1L;

  private final LinkedHashMap<String, RowType> types;

  /** Per table and row type read, how the emitted row's columns are taken from it. */
  private transient Map<String, Map<Types.StructType, RowData.FieldGetter[]>> projections;

  /** Per table, the copier of its emitted rows: the row read is only valid during the call. */
  private transient Map<String, RowDataSerializer> copiers;

  private transient String lastTable;
  private transient Types.StructType lastRead;
  private transient RowData.FieldGetter[] lastGetters;

  TableRowsDeserializer(Map<String, RowType> types) {
    if (types.isEmpty()) {
      throw new IllegalArgumentException(
          "tableRows() of no tables: give the row type of each table the source reads");
    }
    this.types = new LinkedHashMap<>(types);
  }

  @Override
  public void deserialize(DatabaseChange change, Collector<TableRow> out) {
    String table = change.table().toString();
    RowData.FieldGetter[] getters = getters(table, change.rowType());
    GenericRowData row = new GenericRowData(change.row().getRowKind(), getters.length);
    for (int i = 0; i < getters.length; i++) {
      row.setField(i, getters[i] == null ? null : getters[i].getFieldOrNull(change.row()));
    }
    out.collect(TableRow.of(table, copiers.get(table).copy(row)));
  }

  private RowData.FieldGetter[] getters(String table, Types.StructType read) {
    if (read == lastRead && table.equals(lastTable)) {
      return lastGetters; // consecutive changes mostly share a table and a row type
    }
    if (projections == null) {
      projections = new HashMap<>();
      copiers = new HashMap<>();
      types.forEach((name, type) -> copiers.put(name, new RowDataSerializer(type)));
    }
    lastGetters =
        projections
            .computeIfAbsent(table, name -> new HashMap<>())
            .computeIfAbsent(read, struct -> project(table, struct));
    lastTable = table;
    lastRead = read;
    return lastGetters;
  }

  /** The emitted columns of {@code table} as positions of {@code read}, matched by name. */
  private RowData.FieldGetter[] project(String table, Types.StructType read) {
    RowType emitted = types.get(table);
    if (emitted == null) {
      throw new IllegalStateException(
          "a change of table "
              + table
              + ", for which the skade database source was given no row type (it has them for "
              + types.keySet()
              + "); give tableRows() its type, or narrow the source's tables");
    }
    RowData.FieldGetter[] getters = new RowData.FieldGetter[emitted.getFieldCount()];
    for (int i = 0; i < getters.length; i++) {
      String column = emitted.getFieldNames().get(i);
      Types.NestedField field = read.field(column);
      if (field == null) {
        if (!emitted.getTypeAt(i).isNullable()) {
          throw new IllegalStateException(
              "table " + table + " no longer has column " + column + ", which is emitted NOT NULL");
        }
        continue; // dropped: null
      }
      LogicalType type = FlinkSchemaUtil.convert(field.type());
      if (!type.copy(true).equals(emitted.getTypeAt(i).copy(true))) {
        throw new IllegalStateException(
            "column "
                + column
                + " of table "
                + table
                + " is now "
                + type
                + ", emitted as "
                + emitted.getTypeAt(i)
                + "; restart the job with the table's new row type");
      }
      getters[i] = RowData.createFieldGetter(type, read.fields().indexOf(field));
    }
    return getters;
  }

  @Override
  public TypeInformation<TableRow> getProducedType() {
    return TableRow.typeInfo(types);
  }
}
