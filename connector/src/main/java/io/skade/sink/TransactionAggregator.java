package io.skade.sink;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.sink.ManifestOutputFileFactory;
import org.apache.iceberg.io.WriteResult;

/**
 * {@link SkadeMultiTableSink}'s pre-commit step: each checkpoint's results become, per table
 * written, one manifest of that table, together one committable that the committer commits as one
 * catalog transaction. The tables are read as planned (their FileIO, specs and properties), so no
 * catalog is opened here.
 */
final class TransactionAggregator
    extends CheckpointGrouping<TableWriteResult, MultiTableCommittable> {
  private static final long serialVersionUID = 1L;

  private final Map<String, PlannedTableLoader> planned;

  private transient Map<String, Table> tables;
  private transient Map<String, ManifestOutputFileFactory> manifests;

  TransactionAggregator(Map<String, PlannedTableLoader> planned) {
    this.planned = planned;
  }

  @Override
  public void open() throws Exception {
    super.open();
    tables = new TreeMap<>();
    manifests = new TreeMap<>();
    for (Map.Entry<String, PlannedTableLoader> entry : planned.entrySet()) {
      Table table = entry.getValue().loadTable();
      tables.put(entry.getKey(), table);
      manifests.put(entry.getKey(), manifestFiles(table));
    }
  }

  @Override
  MultiTableCommittable committable(long checkpointId, List<TableWriteResult> written)
      throws IOException {
    Map<String, List<WriteResult>> byTable = new TreeMap<>();
    for (TableWriteResult result : written) {
      if (result.result().dataFiles().length > 0 || result.result().deleteFiles().length > 0) {
        byTable.computeIfAbsent(result.table(), table -> new ArrayList<>()).add(result.result());
      }
    }
    SortedMap<String, byte[]> tableManifests = new TreeMap<>();
    for (Map.Entry<String, List<WriteResult>> table : byTable.entrySet()) {
      tableManifests.put(
          table.getKey(),
          manifest(
              tables.get(table.getKey()),
              manifests.get(table.getKey()),
              table.getValue(),
              checkpointId));
    }
    return new MultiTableCommittable(
        jobId(), getRuntimeContext().getOperatorUniqueID(), checkpointId, tableManifests);
  }
}
