package io.skade.scan;

import java.util.function.Function;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.parquet.ParquetValueReader;
import org.apache.parquet.schema.MessageType;

/**
 * Decodes a data file's Parquet rows into records of a query engine's own row format, behind
 * Iceberg's {@link Record} interface: the engine's logic (deletes, filters, pairing) reads them as
 * it reads Iceberg's generic records, and the rows it emits reach the query engine without a
 * conversion (Parquet strings, for one, are never decoded into {@code String} and encoded again).
 * Without one, data files are read into Iceberg's generic records.
 */
public interface RecordDecoder {

  /**
   * Whether every column of {@code schema} is decoded into records whose values equal those of
   * Iceberg's generic reader; a schema with any other column is read by Iceberg's generic reader.
   */
  boolean decodes(Schema schema);

  /**
   * The reader of one file's rows, in the query engine's form, in {@code required} (which {@link
   * #decodes}), identity-partition values filled in from {@code task}.
   */
  ParquetValueReader<?> reader(Schema required, MessageType fileSchema, FileScanTask task);

  /** How rows {@link #reader} decoded in {@code required} are seen as records. */
  Function<Object, Record> records(Schema required);

  /**
   * {@code row}, decoded by this, cut to the columns of {@code target} (a selection of its own
   * columns, in any order).
   */
  Record select(Record row, Schema target);

  /** Whether {@code row} was decoded by this. */
  boolean decoded(Record row);
}
