package io.skade.changelog;

import java.util.Map;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.util.PartitionUtil;

/** How skade reads the rows of one Parquet data file of a table, deletes not applied. */
public final class DataFileRows {
  private DataFileRows() {}

  /**
   * Every row of the task's data file, in {@code required} (which may hold metadata columns such
   * as the row position), with identity-partition values filled in; files written without field
   * ids (imported ones) are read by the table's name mapping. Row groups whose statistics,
   * dictionaries or bloom filters prove no row matches {@code rowGroups} are skipped; rows are
   * not filtered.
   *
   * @throws UnsupportedOperationException if the file is not Parquet
   */
  public static CloseableIterable<Record> read(Table table, FileScanTask task, Schema required,
      Expression rowGroups) {
    if (task.file().format() != FileFormat.PARQUET) {
      throw new UnsupportedOperationException("table " + table.name() + ": data file "
          + task.file().location() + " is " + task.file().format() + "; skade reads Parquet"
          + " data files only — rewrite the table's files to Parquet");
    }
    Map<Integer, ?> constants =
        PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant);
    Parquet.ReadBuilder read = Parquet.read(table.io().newInputFile(task.file().location()))
        .project(required)
        .createReaderFunc(fileSchema ->
            GenericParquetReaders.buildReader(required, fileSchema, constants));
    if (rowGroups.op() != Expression.Operation.TRUE) {
      read.filter(rowGroups); // evaluating it costs even when it keeps everything
    }
    String mapping = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    if (mapping != null) {
      read.withNameMapping(NameMappingParser.fromJson(mapping));
    }
    return read.build();
  }
}
