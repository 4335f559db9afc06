package io.skade.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;

/**
 * Appends rows to an unpartitioned Iceberg table as one Parquet data file per call, through
 * Iceberg's generic writers — the first piece of skade's embedded write API.
 *
 * <p>Not thread-safe: give each writing thread its own appender (its {@code writerId} keeps data
 * file names apart).
 */
public final class RecordAppender {
  private final Table table;
  private final GenericFileWriterFactory writers;
  private final OutputFileFactory files;

  /**
   * @param table the table to append to; must be unpartitioned
   * @param writerId distinguishes this appender's data file names from other writers'
   */
  public RecordAppender(Table table, int writerId) {
    if (table.spec().isPartitioned()) {
      throw new IllegalArgumentException(
          "table " + table.name() + " is partitioned by " + table.spec()
              + "; RecordAppender writes unpartitioned tables only");
    }
    this.table = table;
    this.writers = new GenericFileWriterFactory.Builder(table)
        .dataFileFormat(FileFormat.PARQUET)
        .build();
    this.files = OutputFileFactory.builderFor(table, writerId, 0)
        .format(FileFormat.PARQUET)
        .build();
  }

  /** Writes {@code rows} to one new Parquet file and commits it; returns the new snapshot. */
  public Snapshot append(Iterable<Record> rows) {
    table.newFastAppend().appendFile(write(rows)).commit();
    return table.currentSnapshot();
  }

  /** Writes {@code rows} to one new Parquet file without committing it. */
  public DataFile write(Iterable<Record> rows) {
    DataWriter<Record> writer = writers.newDataWriter(files.newOutputFile(), table.spec(), null);
    try (writer) {
      for (Record row : rows) {
        writer.write(row);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a data file of table " + table.name(), e);
    }
    return writer.toDataFile();
  }
}
