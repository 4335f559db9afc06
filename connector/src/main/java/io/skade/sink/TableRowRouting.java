package io.skade.sink;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * How a {@link SkadeMultiTableSink}'s rows reach its writers: each row is checked against its table
 * ({@link #check}), then routed by a hash of its table and key ({@link #key}), so that one key's
 * changes meet one writer, in order; a table without a key is spread by all its columns.
 */
final class TableRowRouting {
  private TableRowRouting() {}

  /** Checks that a row names one of the sink's tables and has that table's columns. */
  static final class Check implements MapFunction<TableRow, TableRow> {
    private static final long serialVersionUID = 1L;

    private final Map<String, Integer> arity;

    Check(Map<String, Integer> arity) {
      this.arity = arity;
    }

    @Override
    public TableRow map(TableRow row) {
      Integer columns = arity.get(row.table());
      if (columns == null) {
        throw new IllegalArgumentException(
            "skade multi-table sink: a row for table "
                + row.table()
                + ", which the sink does not write; its tables: "
                + arity.keySet()
                + ". Name the table in the sink's builder, or filter the row out");
      }
      if (row.row().getArity() != columns) {
        throw new IllegalArgumentException(
            "skade multi-table sink: a row of "
                + row.row().getArity()
                + " fields for table "
                + row.table()
                + ", which has "
                + columns
                + " columns; send rows in the table's columns, in its order");
      }
      return row;
    }
  }

  /** A hash of the row's table and its key columns (all columns for a table without a key). */
  static final class Key implements KeySelector<TableRow, Integer> {
    private static final long serialVersionUID = 1L;

    private final Map<String, RowData.FieldGetter[]> keys;

    /**
     * @param types each table's row type
     * @param keyPositions each table's key columns' positions, empty for a table without a key
     */
    Key(Map<String, RowType> types, Map<String, int[]> keyPositions) {
      this.keys = new HashMap<>();
      types.forEach(
          (table, type) -> {
            int[] positions = keyPositions.get(table);
            if (positions.length == 0) {
              positions = IntStream.range(0, type.getFieldCount()).toArray();
            }
            RowData.FieldGetter[] getters = new RowData.FieldGetter[positions.length];
            for (int i = 0; i < positions.length; i++) {
              getters[i] = RowData.createFieldGetter(type.getTypeAt(positions[i]), positions[i]);
            }
            keys.put(table, getters);
          });
    }

    @Override
    public Integer getKey(TableRow row) {
      int hash = row.table().hashCode();
      for (RowData.FieldGetter getter : keys.get(row.table())) {
        Object value = getter.getFieldOrNull(row.row());
        // Hashes that do not depend on the JVM: arrays by content.
        hash = 31 * hash + (value instanceof byte[] bytes ? Arrays.hashCode(bytes) : hash(value));
      }
      return hash;
    }

    private static int hash(Object value) {
      return value == null ? 0 : value.hashCode();
    }
  }

  /** The positions of {@code key}'s columns in {@code type}. */
  static int[] positions(RowType type, List<String> key) {
    return key.stream().mapToInt(type.getFieldNames()::indexOf).toArray();
  }
}
