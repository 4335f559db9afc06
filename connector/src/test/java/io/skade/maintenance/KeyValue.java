package io.skade.maintenance;

import java.util.List;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/** The maintenance tests' table shape, {@code (id BIGINT key, v STRING)}, and their job env. */
final class KeyValue {
  static final Schema SCHEMA = new Schema(
      List.of(Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "v", Types.StringType.get())),
      Set.of(1));

  private KeyValue() {}

  static Record row(long id, String v) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, v);
    return row;
  }

  /** An environment for a bounded maintenance job at parallelism 2. */
  static StreamExecutionEnvironment env() {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    return env;
  }
}
