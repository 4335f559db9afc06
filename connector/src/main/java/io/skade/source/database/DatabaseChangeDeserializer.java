package io.skade.source.database;

import io.skade.sink.TableRow;
import java.io.Serializable;
import java.util.Map;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;

/**
 * Turns a change of a {@link SkadeDatabaseSource} into the records it emits.
 *
 * @param <T> the emitted type
 */
public interface DatabaseChangeDeserializer<T> extends Serializable, ResultTypeQueryable<T> {

  /** Emits the records of one change (any number, usually one). */
  void deserialize(DatabaseChange change, Collector<T> out) throws Exception;

  /**
   * Each change as a {@link TableRow}: its table's name ({@code namespace.name}) and its row in the
   * columns {@code types} gives that table, matched by name — what a {@code SkadeMultiTableSink}
   * writes. A column the table gained while the job runs is left out until the job is restarted
   * with the new type; a column it lost is null; a change of a column's type, or of a table not in
   * {@code types}, fails the job naming both.
   *
   * @param types per table name, the row type emitted
   */
  static DatabaseChangeDeserializer<TableRow> tableRows(Map<String, RowType> types) {
    return new TableRowsDeserializer(types);
  }
}
