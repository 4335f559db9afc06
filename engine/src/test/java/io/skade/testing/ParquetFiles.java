package io.skade.testing;

import java.io.IOException;
import java.util.List;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;

/**
 * Rows written the way any Iceberg program writes them, with Iceberg's own generic Parquet writer
 * rather than skade's: one real data file of a table, appended or not.
 */
public final class ParquetFiles {
  private ParquetFiles() {}

  /** Appends {@code rows} to {@code table} as one Parquet data file. */
  public static void append(Table table, List<Record> rows) throws IOException {
    table.newAppend().appendFile(write(table, rows)).commit();
  }

  /** {@code rows} written to a new Parquet data file of {@code table}, not committed. */
  public static DataFile write(Table table, List<Record> rows) throws IOException {
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime())
            .format(FileFormat.PARQUET)
            .build();
    DataWriter<Record> writer =
        new GenericFileWriterFactory.Builder(table)
            .dataFileFormat(FileFormat.PARQUET)
            .build()
            .newDataWriter(files.newOutputFile(), table.spec(), null);
    try (writer) {
      rows.forEach(writer::write);
    }
    return writer.toDataFile();
  }
}
