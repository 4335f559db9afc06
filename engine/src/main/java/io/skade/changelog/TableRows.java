package io.skade.changelog;

import java.util.List;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Rows read in some required schema as rows of the table schema: the record itself when the read
 * added no column, else a copy by name (columns not read stay null).
 */
final class TableRows implements Function<Record, Record> {
  private final GenericRecord template;
  private final int[] source;
  private final boolean exact;

  TableRows(GenericRecord template, Schema required) {
    this.template = template;
    List<Types.NestedField> columns = template.struct().fields();
    List<Types.NestedField> read = required.columns();
    this.source = new int[columns.size()];
    boolean same = read.size() == columns.size();
    for (int i = 0; i < columns.size(); i++) {
      Types.NestedField field = columns.get(i);
      source[i] = -1;
      for (int j = 0; j < read.size(); j++) {
        if (read.get(j).fieldId() == field.fieldId()) {
          source[i] = j;
        }
      }
      same &= source[i] == i;
    }
    this.exact = same;
  }

  @Override
  public Record apply(Record record) {
    if (exact) {
      return record;
    }
    Record row = template.copy();
    for (int i = 0; i < source.length; i++) {
      if (source[i] >= 0) {
        row.set(i, record.get(source[i], Object.class));
      }
    }
    return row;
  }
}
