package io.skade.maintenance;

import io.skade.testing.IdRows;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;

/**
 * The maintenance tests' table shape, {@code (id BIGINT key, v STRING)}, reading its files, and
 * their job env.
 */
final class KeyValue {
  static final Schema SCHEMA = IdRows.keyed("v");

  private KeyValue() {}

  static Record row(long id, String v) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, v);
    return row;
  }

  /** The rows of one data file of a table of this shape, in the file's order. */
  static List<Record> fileRows(Table table, DataFile file) throws IOException {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records =
        Parquet.read(table.io().newInputFile(file.location()))
            .project(SCHEMA)
            .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(SCHEMA, fileSchema))
            .build()) {
      records.forEach(r -> rows.add(r.copy()));
    }
    return rows;
  }

  /** The keys of one data file, in the file's order. */
  static List<Long> fileKeys(Table table, DataFile file) throws IOException {
    return fileRows(table, file).stream().map(r -> r.get(0, Long.class)).toList();
  }

  /** An environment for a bounded maintenance job at parallelism 2. */
  static StreamExecutionEnvironment env() {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    return env;
  }
}
