package io.skade.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.IntConsumer;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Types;

/** What one committer thread does to its own table, once per commit. */
enum Workload {

  /** A snapshot-less pointer change: new metadata file, no manifests. */
  METADATA_ONLY("metadata-only") {
    @Override
    IntConsumer committerFor(Table table, int thread) {
      return i -> table.updateProperties().set("k", String.valueOf(i)).commit();
    }
  },

  /**
   * A full append: write a small Parquet data file, then a fast append (manifest, manifest list,
   * metadata file, pointer swap). Writing the data file is timed too, as a real ingest pays it.
   */
  APPEND("append (small Parquet file)") {
    @Override
    IntConsumer committerFor(Table table, int thread) {
      GenericFileWriterFactory writers =
          new GenericFileWriterFactory.Builder(table).dataFileFormat(FileFormat.PARQUET).build();
      // One factory per thread: its partition id keeps file names apart between threads.
      OutputFileFactory files =
          OutputFileFactory.builderFor(table, thread, 0).format(FileFormat.PARQUET).build();
      GenericRecord template = GenericRecord.create(SCHEMA);
      return i -> {
        DataWriter<Record> writer = writers.newDataWriter(files.newOutputFile(), table.spec(), null);
        try (writer) {
          for (int row = 0; row < ROWS_PER_FILE; row++) {
            Record record = template.copy();
            record.setField("id", (long) i * ROWS_PER_FILE + row);
            record.setField("name", "row-" + row);
            writer.write(record);
          }
        } catch (IOException e) {
          throw new UncheckedIOException("cannot write a benchmark data file", e);
        }
        table.newFastAppend().appendFile(writer.toDataFile()).commit();
      };
    }
  };

  /** Every benchmark table's schema. */
  static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()));

  static final int ROWS_PER_FILE = 10;

  private final String label;

  Workload(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  /**
   * Prepares thread {@code thread}'s commits to {@code table} (untimed) and returns the action
   * that makes commit number {@code i}.
   */
  abstract IntConsumer committerFor(Table table, int thread);
}
