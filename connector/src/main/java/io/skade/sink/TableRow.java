package io.skade.sink;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A row for one of the tables of a {@link SkadeMultiTableSink}: the table's name as the sink's
 * builder named it ({@code shop.orders}), and the row in that table's columns, its {@link
 * org.apache.flink.types.RowKind} saying what it does ({@code +I}, {@code +U} upsert; {@code -U},
 * {@code -D} delete by the table's key).
 */
public final class TableRow {
  private final String table;
  private final RowData row;

  private TableRow(String table, RowData row) {
    this.table = Objects.requireNonNull(table, "table");
    this.row = Objects.requireNonNull(row, "row");
  }

  /** A row of {@code table} ({@code namespace.name}). */
  public static TableRow of(String table, RowData row) {
    return new TableRow(table, row);
  }

  /** A row of {@code table}. */
  public static TableRow of(TableIdentifier table, RowData row) {
    return new TableRow(table.toString(), row);
  }

  /**
   * The Flink type of rows of these tables (name → row type), carried by skade's own serializer,
   * never Kryo.
   */
  public static TypeInformation<TableRow> typeInfo(Map<String, RowType> types) {
    List<String> tables = List.copyOf(types.keySet());
    return new TableRowTypeInfo(tables, tables.stream().map(types::get).toList());
  }

  /** The table's name, {@code namespace.name}. */
  public String table() {
    return table;
  }

  /** The row, in the table's columns. */
  public RowData row() {
    return row;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TableRow that && table.equals(that.table) && row.equals(that.row);
  }

  @Override
  public int hashCode() {
    return 31 * table.hashCode() + row.hashCode();
  }

  @Override
  public String toString() {
    return table + " " + row;
  }
}
