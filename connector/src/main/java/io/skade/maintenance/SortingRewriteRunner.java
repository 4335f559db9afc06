package io.skade.maintenance;

import io.skade.write.FileLayout;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;
import org.apache.iceberg.BaseCombinedScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.SortOrderComparators;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.RowDataWrapper;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner.PlannedGroup;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewriteRunner.ExecutedGroup;
import org.apache.iceberg.flink.maintenance.operator.TableMaintenanceMetrics;
import org.apache.iceberg.flink.maintenance.operator.TaskResultAggregator;
import org.apache.iceberg.flink.sink.RowDataTaskWriterFactory;
import org.apache.iceberg.flink.source.DataIterator;
import org.apache.iceberg.flink.source.RowDataFileScanTaskReader;
import org.apache.iceberg.io.TaskWriter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rewrites a file group that Iceberg's Flink compaction planned, as Iceberg's own rewriter does
 * (its reader applies the group's deletes, its writer writes the new files, its committer commits
 * them), except that the rows are written in the order {@link FileLayout#order} gives: the table's
 * sort order, or its key. Iceberg's Flink rewriter concatenates a group's files, so after a few
 * compactions of an upserted table every row group spans the whole key range and a point lookup
 * must consult each one; a file in key order is bisected to one row group. The new files also get
 * bloom filters on the key ({@link FileLayout#keyBloomFilters}).
 *
 * <p>Rows are sorted in memory as binary rows, at most {@code sortBufferBytes} of them at a time: a
 * larger group is written as several sorted runs, each in files of its own, so memory stays bounded
 * and every file is still in order. A table with neither sort order nor key is rewritten in the
 * order read, with no buffer.
 */
public final class SortingRewriteRunner extends ProcessFunction<PlannedGroup, ExecutedGroup> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(SortingRewriteRunner.class);

  /** Rows buffered for one sort by default: a run of 128 MiB of binary rows. */
  public static final long DEFAULT_SORT_BUFFER_BYTES = 128L << 20;

  /** Heap per buffered row besides its bytes: the row, its memory segment, the array header. */
  private static final long ROW_OVERHEAD = 96;

  private final String tableName;
  private final String taskName;
  private final int taskIndex;
  private final long sortBufferBytes;
  private transient int subtask;
  private transient int attempt;
  private transient Counter errors;

  /**
   * The rewriter of maintenance task {@code taskName} (index {@code taskIndex}) of {@code
   * tableName}, as Iceberg's rewriter names it in metrics and logs, sorting at most {@code
   * sortBufferBytes} of rows at a time.
   */
  public SortingRewriteRunner(
      String tableName, String taskName, int taskIndex, long sortBufferBytes) {
    if (sortBufferBytes <= 0) {
      throw new IllegalArgumentException(
          "the sort buffer of a compaction must be positive, got " + sortBufferBytes + " bytes");
    }
    this.tableName = tableName;
    this.taskName = taskName;
    this.taskIndex = taskIndex;
    this.sortBufferBytes = sortBufferBytes;
  }

  @Override
  public void open(OpenContext context) {
    this.errors =
        IcebergInternals.maintenanceMetrics(getRuntimeContext(), tableName, taskName, taskIndex)
            .counter(TableMaintenanceMetrics.ERROR_COUNTER);
    this.subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
    this.attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
  }

  @Override
  public void processElement(PlannedGroup planned, Context context, Collector<ExecutedGroup> out) {
    Table table = IcebergInternals.plannedTable(planned);
    RewriteFileGroup group = IcebergInternals.plannedFiles(planned);
    GroupWriter writer = new GroupWriter(table, group);
    try {
      writer.rewrite(table, group);
      LOG.info(
          "table {}: rewrote {} files into {} in {}",
          tableName,
          group.inputFileNum(),
          writer.written.size(),
          writer.order);
      out.collect(IcebergInternals.executed(planned, writer.written));
    } catch (Exception e) {
      LOG.warn(
          "table {}: rewriting {} failed; its files are deleted and the table is as it was",
          tableName,
          group.info(),
          e);
      writer.abort(e);
      context.output(TaskResultAggregator.ERROR_STREAM, e);
      errors.inc();
    }
  }

  /** The writing of one group: its writers, one per sorted run, and the files they wrote. */
  private final class GroupWriter {
    private final SortOrder order;
    private final Schema schema;
    private final RowType rowType;
    private final RowDataTaskWriterFactory files;
    private final List<TaskWriter<RowData>> writers = new ArrayList<>();
    private final Set<DataFile> written = new HashSet<>();

    GroupWriter(Table table, RewriteFileGroup group) {
      this.order = FileLayout.order(table);
      // Row lineage (format v3) is carried over as Iceberg's rewriter carries it.
      this.schema =
          TableUtil.supportsRowLineage(table)
              ? MetadataColumns.schemaWithRowLineage(table.schema())
              : table.schema();
      this.rowType = FlinkSchemaUtil.convert(schema);
      long rows = 0;
      for (FileScanTask task : group.fileScanTasks()) {
        rows += task.file().recordCount();
      }
      Map<String, String> properties = new HashMap<>(table.properties());
      properties.putAll(FileLayout.keyBloomFilters(table, rows));
      this.files =
          new RowDataTaskWriterFactory(
              () -> table,
              rowType,
              group.maxOutputFileSize(),
              FileFormat.fromString(
                  table
                      .properties()
                      .getOrDefault(
                          TableProperties.DEFAULT_FILE_FORMAT,
                          TableProperties.DEFAULT_FILE_FORMAT_DEFAULT)),
              properties,
              null,
              false,
              schema,
              table.spec());
      files.initialize(subtask, attempt);
    }

    void rewrite(Table table, RewriteFileGroup group) throws IOException {
      RowDataFileScanTaskReader reader =
          new RowDataFileScanTaskReader(
              table.schema(),
              schema,
              table.properties().get(TableProperties.DEFAULT_NAME_MAPPING),
              false,
              List.of());
      try (DataIterator<RowData> rows =
          new DataIterator<>(
              reader,
              new BaseCombinedScanTask(group.fileScanTasks()),
              table.io(),
              table.encryption())) {
        if (!order.isSorted()) {
          TaskWriter<RowData> writer = newWriter();
          while (rows.hasNext()) {
            writer.write(rows.next());
          }
          finish(writer);
          return;
        }
        // The reader reuses its rows: each is copied into one compact binary row.
        RowDataSerializer serializer = new RowDataSerializer(rowType);
        List<BinaryRowData> run = new ArrayList<>();
        long bytes = 0;
        while (rows.hasNext()) {
          BinaryRowData row = serializer.toBinaryRow(rows.next()).copy();
          run.add(row);
          bytes += row.getSizeInBytes() + ROW_OVERHEAD;
          if (bytes >= sortBufferBytes) {
            writeSorted(run);
            run.clear();
            bytes = 0;
          }
        }
        writeSorted(run);
      }
    }

    private void writeSorted(List<BinaryRowData> run) throws IOException {
      if (run.isEmpty()) {
        return;
      }
      Comparator<StructLike> byOrder = SortOrderComparators.forSchema(schema, order);
      RowDataWrapper left = new RowDataWrapper(rowType, schema.asStruct());
      RowDataWrapper right = new RowDataWrapper(rowType, schema.asStruct());
      run.sort((a, b) -> byOrder.compare(left.wrap(a), right.wrap(b)));
      TaskWriter<RowData> writer = newWriter();
      for (RowData row : run) {
        writer.write(row);
      }
      finish(writer);
    }

    private TaskWriter<RowData> newWriter() {
      TaskWriter<RowData> writer = files.create();
      writers.add(writer);
      return writer;
    }

    private void finish(TaskWriter<RowData> writer) throws IOException {
      written.addAll(List.of(writer.dataFiles()));
    }

    /** Deletes every file written for the group, finished or not. */
    void abort(Exception cause) {
      for (TaskWriter<RowData> writer : writers) {
        try {
          writer.abort();
        } catch (IOException | RuntimeException e) {
          cause.addSuppressed(e);
        }
      }
    }
  }
}
