package io.skade.testing;

import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * The tests' usual table shape, {@code (id BIGINT, <one string column>)}: {@link #SCHEMA} is {@code
 * (id BIGINT key, name STRING)}, {@link #keyed} and {@link #log} name the string column ({@code v})
 * with or without {@code id} as the key; {@link #row} makes a row of any of them.
 */
public final class IdRows {
  /** {@code (id BIGINT key, name STRING)}. */
  public static final Schema SCHEMA = keyed("name");

  /** {@code (id BIGINT key, name STRING, region STRING)}: rows with a region to partition by. */
  public static final Schema REGIONAL =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "region", Types.StringType.get())),
          Set.of(1));

  /** {@link #REGIONAL} without a key: a log table. */
  public static final Schema REGIONAL_LOG =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()),
          Types.NestedField.optional(3, "region", Types.StringType.get()));

  private IdRows() {}

  /** {@code (id BIGINT key, <column> STRING)}: a primary-key table. */
  public static Schema keyed(String column) {
    return new Schema(
        List.of(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, column, Types.StringType.get())),
        Set.of(1));
  }

  /** {@code (id BIGINT, <column> STRING)} without a key: a log table. */
  public static Schema log(String column) {
    return new Schema(
        Types.NestedField.required(1, "id", Types.LongType.get()),
        Types.NestedField.optional(2, column, Types.StringType.get()));
  }

  /** A row {@code (id, name)} of {@link #SCHEMA}. */
  public static Record row(long id, String name) {
    return row(SCHEMA, id, name);
  }

  /** A row {@code (id, value)} of {@code schema}, one of this class's shapes. */
  public static Record row(Schema schema, long id, String value) {
    GenericRecord record = GenericRecord.create(schema);
    record.set(0, id);
    record.set(1, value);
    return record;
  }
}
