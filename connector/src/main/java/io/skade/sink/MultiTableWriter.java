package io.skade.sink;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.io.TaskWriter;

/**
 * A writer of a {@link SkadeMultiTableSink}: Iceberg's task writer per table it has rows for, whose
 * files it hands on at each checkpoint, table by table.
 */
final class MultiTableWriter implements CommittingSinkWriter<TableRow, TableWriteResult> {
  private final Map<String, SkadeMultiTableSink.Target> targets;
  private final Map<String, TaskWriter<RowData>> writers = new TreeMap<>();

  MultiTableWriter(Map<String, SkadeMultiTableSink.Target> targets, int subtask, int attempt) {
    this.targets = targets;
    for (SkadeMultiTableSink.Target target : targets.values()) {
      target.files().initialize(subtask, attempt);
    }
  }

  @Override
  public void write(TableRow element, Context context) throws IOException {
    SkadeMultiTableSink.Target target = targets.get(element.table());
    RowData row = element.row();
    if (target.keyPositions().length == 0
        && row.getRowKind() != RowKind.INSERT
        && row.getRowKind() != RowKind.UPDATE_AFTER) {
      throw new IllegalArgumentException(
          "skade multi-table sink: a "
              + row.getRowKind().shortString()
              + " row for table "
              + element.table()
              + ", which has no key to delete it by; give the table a key (its primary key, or"
              + " table(name, keyColumns) in the sink's builder), or send it only inserts");
    }
    TaskWriter<RowData> writer = writers.get(element.table());
    if (writer == null) {
      writer = target.files().create();
      writers.put(element.table(), writer);
    }
    writer.write(row);
  }

  @Override
  public void flush(boolean endOfInput) {}

  @Override
  public Collection<TableWriteResult> prepareCommit() throws IOException {
    List<TableWriteResult> results = new ArrayList<>(writers.size());
    for (Map.Entry<String, TaskWriter<RowData>> writer : writers.entrySet()) {
      results.add(new TableWriteResult(writer.getKey(), writer.getValue().complete()));
    }
    writers.clear();
    return results;
  }

  @Override
  public void close() throws IOException {
    for (TaskWriter<RowData> writer : writers.values()) {
      writer.close();
    }
    writers.clear();
  }
}
