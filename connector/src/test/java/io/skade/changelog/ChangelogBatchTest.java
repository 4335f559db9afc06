package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.source.reader.FlinkChanges;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ChangelogBatchTest {
  private static final Schema SCHEMA =
      new Schema(
          Types.NestedField.optional(1, "a", Types.StringType.get()),
          Types.NestedField.optional(2, "b", Types.StringType.get()),
          Types.NestedField.optional(3, "n", Types.LongType.get()),
          Types.NestedField.optional(4, "day", Types.DateType.get()),
          Types.NestedField.optional(5, "at", Types.TimestampType.withoutZone()),
          Types.NestedField.optional(6, "price", Types.DecimalType.of(9, 2)),
          Types.NestedField.optional(7, "ok", Types.BooleanType.get()));

  private final BufferAllocator allocator = new RootAllocator();

  @AfterEach
  void close() {
    allocator.close();
  }

  @Test
  void carriesTheChangeTypeStringsRowKindsAndFlinkRowsReadFromTheVectors() {
    List<ChangeRow> changes =
        List.of(
            change(ChangeType.INSERT, "x", "y", 1L),
            change(ChangeType.UPDATE_BEFORE, "x", "y", 2L),
            change(ChangeType.UPDATE_AFTER, "x", "z", 2L),
            change(ChangeType.DELETE, null, "", null));
    try (ChangelogBatch batch = ChangelogBatch.of(SCHEMA, List.of("a"), changes, allocator)) {
      VarCharVector types = (VarCharVector) batch.root().getVector(ChangelogBatch.CHANGE_TYPE);
      List<String> names = new ArrayList<>();
      for (int i = 0; i < batch.rowCount(); i++) {
        names.add(types.getObject(i).toString());
      }
      assertThat(names).containsExactly("INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE");
      assertThat(IntStream.range(0, 4).mapToObj(i -> FlinkChanges.rowKind(batch.changeType(i))))
          .containsExactly(
              RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE);

      RowData first = FlinkChanges.rowData(batch, 0);
      assertThat(first.getRowKind()).isEqualTo(RowKind.INSERT);
      assertThat(first.getString(0)).isEqualTo(StringData.fromString("x"));
      assertThat(first.getLong(2)).isEqualTo(1L);
      assertThat(first.getInt(3)).isEqualTo((int) LocalDate.of(2026, 11, 29).toEpochDay());
      assertThat(first.getTimestamp(4, 6))
          .isEqualTo(
              TimestampData.fromLocalDateTime(
                  LocalDateTime.of(2026, 11, 29, 12, 30, 0, 123_456_000)));
      assertThat(first.getDecimal(5, 9, 2))
          .isEqualTo(DecimalData.fromBigDecimal(new BigDecimal("12.34"), 9, 2));
      assertThat(first.getBoolean(6)).isTrue();

      RowData last = FlinkChanges.rowData(batch, 3);
      assertThat(last.getRowKind()).isEqualTo(RowKind.DELETE);
      assertThat(last.isNullAt(0)).isTrue();
      assertThat(last.getString(1)).isEqualTo(StringData.fromString(""));
      assertThat(last.isNullAt(2)).isTrue();
    }
  }

  @Test
  void identityKeysAreInjectiveOnAdversarialValues() {
    // Pairs that a separator-joined string key would confuse, and null vs empty.
    String[][] keys = {
      {"a", "bc"},
      {"ab", "c"},
      {"a\u0000", "bc"},
      {"a", "\u0000bc"},
      {"a\u001f", "b"},
      {"a", "\u001fb"},
      {"a|b", ""},
      {"a", "b|"},
      {null, ""},
      {"", null},
      {null, null},
      {"", ""},
      {"null", null},
      {"\u0001", ""},
      {"", "\u0001"},
      {"é", ""},
      {"e\u0301", ""}
    };
    List<ChangeRow> changes = new ArrayList<>();
    for (String[] key : keys) {
      changes.add(change(ChangeType.INSERT, key[0], key[1], 0L));
    }
    // Equal values make equal keys, whatever the other columns hold.
    changes.add(change(ChangeType.DELETE, "a", "bc", 99L));
    try (ChangelogBatch batch = ChangelogBatch.of(SCHEMA, List.of("a", "b"), changes, allocator)) {
      Set<ByteBuffer> distinct = new HashSet<>();
      for (int i = 0; i < keys.length; i++) {
        distinct.add(batch.key(i));
      }
      assertThat(distinct).hasSize(keys.length);
      assertThat(batch.sameKey(0, keys.length)).isTrue();
      assertThat(batch.sameKey(0, 1)).isFalse();
      assertThat(batch.sameKey(8, 9)).isFalse();
    }
  }

  @Test
  void numericKeysKeepTheirFullWidth() {
    List<ChangeRow> changes = new ArrayList<>();
    long[] values = {0L, 1L, 256L, -1L, Long.MIN_VALUE, Long.MAX_VALUE};
    for (long value : values) {
      changes.add(change(ChangeType.INSERT, "k", "k", value));
    }
    changes.add(change(ChangeType.INSERT, "k", "k", null));
    try (ChangelogBatch batch = ChangelogBatch.of(SCHEMA, List.of("n"), changes, allocator)) {
      Set<ByteBuffer> distinct = new HashSet<>();
      for (int i = 0; i < changes.size(); i++) {
        distinct.add(batch.key(i));
      }
      assertThat(distinct).hasSize(changes.size());
    }
  }

  private static ChangeRow change(ChangeType type, String a, String b, Long n) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("a", a);
    row.setField("b", b);
    row.setField("n", n);
    row.setField("day", LocalDate.of(2026, 11, 29));
    row.setField("at", LocalDateTime.of(2026, 11, 29, 12, 30, 0, 123_456_000));
    row.setField("price", new BigDecimal("12.34"));
    row.setField("ok", true);
    return new ChangeRow(type, row, 1L);
  }
}
