package io.skade.lookup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * What the lookup tests compare against: rows read by Iceberg's own generic reader, matched on
 * their values here (Iceberg's {@code where} only prunes files and row groups), and rows written as
 * canonical strings so that rows of either reader compare as multisets.
 */
final class IcebergReference {
  private static final LocalDateTime EPOCH = LocalDateTime.of(1970, 1, 1, 0, 0);

  private IcebergReference() {}

  /**
   * The rows of {@code table} at {@code snapshotId} whose {@code columns} hold {@code values}
   * (Iceberg internal values, as a lookup takes them), as canonical strings in read order: a
   * filtered read by Iceberg, then an exact match on each row.
   */
  static List<String> rowsWith(Table table, long snapshotId, List<String> columns, List<?> values) {
    Expression filter = Expressions.alwaysTrue();
    for (int i = 0; i < columns.size(); i++) {
      filter = Expressions.and(filter, Expressions.equal(columns.get(i), values.get(i)));
    }
    List<String> rows = new ArrayList<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).where(filter).build()) {
      for (Record record : records) {
        if (keyOf(record, columns).equals(keyOf(values))) {
          rows.add(canonical(record, table.schema()));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /** Every row of {@code table} at {@code snapshotId}, by Iceberg's reader. */
  static List<Record> allRows(Table table, long snapshotId) {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).build()) {
      records.forEach(rows::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /** A row as {@code column=value;...} over the schema's columns, in schema order. */
  static String canonical(Record row, Schema schema) {
    StringBuilder out = new StringBuilder();
    for (Types.NestedField field : schema.columns()) {
      Object value = row.getField(field.name());
      out.append(field.name()).append('=').append(value == null ? "∅" : value).append(';');
    }
    return out.toString();
  }

  /** Rows as canonical strings, sorted, so that two lists compare as multisets. */
  static List<String> sortedCanonical(List<Record> rows, Schema schema) {
    return rows.stream().map(row -> canonical(row, schema)).sorted().toList();
  }

  /** The key of a row read by Iceberg's reader: its {@code columns}' values, made internal. */
  static String keyOf(Record row, List<String> columns) {
    List<Object> values = new ArrayList<>();
    for (String column : columns) {
      values.add(internal(row.getField(column)));
    }
    return keyOf(values);
  }

  /** The key of internal values, as a string: {@code value|value|...} ({@code ∅} for null). */
  static String keyOf(List<?> internalValues) {
    StringBuilder out = new StringBuilder();
    for (Object value : internalValues) {
      out.append(value == null ? "∅" : internal(value)).append('|');
    }
    return out.toString();
  }

  /**
   * A value as read by Iceberg's generic reader (or already internal) in Iceberg's internal
   * representation, computed here with java.time: days for a date, microseconds for a timestamp, a
   * String for any character sequence.
   */
  static Object internal(Object value) {
    if (value instanceof LocalDate date) {
      return Math.toIntExact(date.toEpochDay());
    } else if (value instanceof LocalDateTime time) {
      return ChronoUnit.MICROS.between(EPOCH, time);
    } else if (value instanceof OffsetDateTime time) {
      return ChronoUnit.MICROS.between(
          EPOCH, time.withOffsetSameInstant(ZoneOffset.UTC).toLocalDateTime());
    } else if (value instanceof CharSequence chars) {
      return chars.toString();
    }
    return Objects.requireNonNull(value);
  }
}
