package io.skade.sink;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;

/**
 * Serializes a {@link TableRow} of one of a sink's tables: the table's position among them, then
 * the row with Flink's serializer of that table's row type. Rows travel so from the job's operators
 * to the sink's writers without Kryo.
 */
final class TableRowSerializer extends TypeSerializer<TableRow> {
  private static final long serialVersionUID = 1L;

  private final String[] tables;
  private final RowType[] types;
  private final RowDataSerializer[] rows;

  TableRowSerializer(List<String> tables, List<RowType> types) {
    this.tables = tables.toArray(String[]::new);
    this.types = types.toArray(RowType[]::new);
    this.rows = new RowDataSerializer[this.types.length];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = new RowDataSerializer(this.types[i]);
    }
  }

  /** The position of {@code table} among the sink's tables. */
  private int index(String table) {
    int index = Arrays.asList(tables).indexOf(table);
    if (index < 0) {
      throw new IllegalArgumentException(
          "a row for table "
              + table
              + ", which the skade multi-table sink does not write; its tables: "
              + Arrays.toString(tables));
    }
    return index;
  }

  @Override
  public boolean isImmutableType() {
    return false;
  }

  @Override
  public TypeSerializer<TableRow> duplicate() {
    return new TableRowSerializer(List.of(tables), List.of(types));
  }

  @Override
  public TableRow createInstance() {
    return null;
  }

  @Override
  public TableRow copy(TableRow from) {
    return TableRow.of(from.table(), rows[index(from.table())].copy(from.row()));
  }

  @Override
  public TableRow copy(TableRow from, TableRow reuse) {
    return copy(from);
  }

  @Override
  public int getLength() {
    return -1;
  }

  @Override
  public void serialize(TableRow record, DataOutputView target) throws IOException {
    int index = index(record.table());
    target.writeInt(index);
    rows[index].serialize(record.row(), target);
  }

  @Override
  public TableRow deserialize(DataInputView source) throws IOException {
    int index = source.readInt();
    return TableRow.of(tables[index], rows[index].deserialize(source));
  }

  @Override
  public TableRow deserialize(TableRow reuse, DataInputView source) throws IOException {
    return deserialize(source);
  }

  @Override
  public void copy(DataInputView source, DataOutputView target) throws IOException {
    int index = source.readInt();
    target.writeInt(index);
    rows[index].copy(source, target);
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof TableRowSerializer that
        && Arrays.equals(tables, that.tables)
        && Arrays.equals(types, that.types);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(tables) + Arrays.hashCode(types);
  }

  @Override
  public TypeSerializerSnapshot<TableRow> snapshotConfiguration() {
    return new Snapshot(tables, types);
  }

  /** The tables and their row types, each type as Flink's serializable string of it. */
  public static final class Snapshot implements TypeSerializerSnapshot<TableRow> {
    private String[] tables;
    private RowType[] types;

    /** For Flink, which reads the snapshot into it. */
    public Snapshot() {}

    Snapshot(String[] tables, RowType[] types) {
      this.tables = tables;
      this.types = types;
    }

    @Override
    public int getCurrentVersion() {
      return 1;
    }

    @Override
    public void writeSnapshot(DataOutputView out) throws IOException {
      out.writeInt(tables.length);
      for (int i = 0; i < tables.length; i++) {
        out.writeUTF(tables[i]);
        byte[] type = types[i].asSerializableString().getBytes(StandardCharsets.UTF_8);
        out.writeInt(type.length);
        out.write(type);
      }
    }

    @Override
    public void readSnapshot(int version, DataInputView in, ClassLoader loader) throws IOException {
      int count = in.readInt();
      List<String> names = new ArrayList<>(count);
      List<RowType> rowTypes = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        names.add(in.readUTF());
        byte[] type = new byte[in.readInt()];
        in.readFully(type);
        rowTypes.add(
            (RowType) LogicalTypeParser.parse(new String(type, StandardCharsets.UTF_8), loader));
      }
      tables = names.toArray(String[]::new);
      types = rowTypes.toArray(RowType[]::new);
    }

    @Override
    public TypeSerializer<TableRow> restoreSerializer() {
      return new TableRowSerializer(List.of(tables), List.of(types));
    }

    @Override
    public TypeSerializerSchemaCompatibility<TableRow> resolveSchemaCompatibility(
        TypeSerializerSnapshot<TableRow> old) {
      return old instanceof Snapshot that
              && Arrays.equals(tables, that.tables)
              && Arrays.equals(types, that.types)
          ? TypeSerializerSchemaCompatibility.compatibleAsIs()
          : TypeSerializerSchemaCompatibility.incompatible();
    }
  }
}
