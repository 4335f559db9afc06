package io.skade.sink;

import java.util.List;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.table.types.logical.RowType;

/** The type of the {@link TableRow}s of a sink's tables; see {@link TableRowSerializer}. */
final class TableRowTypeInfo extends TypeInformation<TableRow> {
  private static final long serialVersionUID = 1L;

  private final List<String> tables;
  private final List<RowType> types;

  TableRowTypeInfo(List<String> tables, List<RowType> types) {
    this.tables = List.copyOf(tables);
    this.types = List.copyOf(types);
  }

  @Override
  public boolean isBasicType() {
    return false;
  }

  @Override
  public boolean isTupleType() {
    return false;
  }

  @Override
  public int getArity() {
    return 1;
  }

  @Override
  public int getTotalFields() {
    return 1;
  }

  @Override
  public Class<TableRow> getTypeClass() {
    return TableRow.class;
  }

  @Override
  public boolean isKeyType() {
    return false;
  }

  @Override
  public TypeSerializer<TableRow> createSerializer(SerializerConfig config) {
    return new TableRowSerializer(tables, types);
  }

  @Override
  public String toString() {
    return "TableRow" + tables;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TableRowTypeInfo that
        && tables.equals(that.tables)
        && types.equals(that.types);
  }

  @Override
  public int hashCode() {
    return 31 * tables.hashCode() + types.hashCode();
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof TableRowTypeInfo;
  }
}
