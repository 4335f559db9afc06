package io.skade.changelog;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * {@code COUNT(*)}, {@code MIN} and {@code MAX} over the rows of one snapshot of a table: from its
 * manifests when no delete file applies to any of its data files — the sum of the data files'
 * record counts, the least lower bound and the greatest upper bound of the column — and otherwise,
 * or where a data file lacks a column's bounds, by reading the rows with every delete applied
 * (equality deletes, position deletes, deletion vectors). A merge-on-read table is never answered
 * wrong.
 *
 * <p>{@code MIN} and {@code MAX} take only columns whose bounds Iceberg writes exactly ({@link
 * #exactBounds}): not strings or binary, whose bounds a metrics mode may truncate, nor floating
 * point, whose bounds leave NaN out. Values are Iceberg's internal ones: {@code Long} counts,
 * {@code Integer} days for a date, {@code Long} microseconds for a time or timestamp, {@code
 * BigDecimal} for a decimal; null for the {@code MIN} or {@code MAX} of no value.
 */
public final class SnapshotAggregates {
  private SnapshotAggregates() {}

  /** What an aggregate computes. */
  public enum Function {
    COUNT_STAR,
    MIN,
    MAX
  }

  /** One aggregate: {@code COUNT(*)} ({@code column} null), or {@code MIN}/{@code MAX} of one. */
  public record Aggregate(Function function, String column) implements Serializable {
    public Aggregate {
      if ((function == Function.COUNT_STAR) != (column == null)) {
        throw new IllegalArgumentException(
            function + " takes " + (column == null ? "a column" : "no column"));
      }
    }
  }

  /**
   * Whether a column of {@code type} has exact bounds in the manifests, so MIN/MAX may use them.
   */
  public static boolean exactBounds(Type type) {
    return switch (type.typeId()) {
      case BOOLEAN, INTEGER, LONG, DATE, TIME, TIMESTAMP, DECIMAL -> true;
      default -> false;
    };
  }

  /**
   * Whether no delete file applies to snapshot {@code snapshotId}, as its summary says (no manifest
   * read): then its manifests answer the aggregates.
   */
  public static boolean withoutDeletes(Table table, long snapshotId) {
    String deleteFiles =
        table.snapshot(snapshotId).summary().get(SnapshotSummary.TOTAL_DELETE_FILES_PROP);
    if (deleteFiles != null) {
      return Long.parseLong(deleteFiles) == 0;
    }
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(snapshotId).planFiles()) {
      for (FileScanTask task : tasks) {
        if (!task.deletes().isEmpty()) {
          return false;
        }
      }
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the manifests of " + table.name(), e);
    }
  }

  /**
   * The values of {@code aggregates} over the rows of snapshot {@code snapshotId} (a table with no
   * snapshot, {@code null}, has no row): from the manifests where they are exact, else read.
   */
  public static List<Object> of(Table table, Long snapshotId, List<Aggregate> aggregates) {
    List<Object> values = new ArrayList<>();
    if (snapshotId == null) {
      aggregates.forEach(a -> values.add(a.function() == Function.COUNT_STAR ? 0L : null));
      return values;
    }
    for (Aggregate aggregate : aggregates) {
      if (aggregate.column() != null && !exactBounds(type(table, aggregate.column()))) {
        throw new IllegalArgumentException(
            aggregate.function()
                + " of column "
                + aggregate.column()
                + " of table "
                + table.name()
                + ": its type keeps no exact bounds in the manifests; let Flink compute it");
      }
    }
    List<Object> fromManifests = fromManifests(table, snapshotId, aggregates);
    return fromManifests != null ? fromManifests : read(table, snapshotId, aggregates);
  }

  /** The values from the manifests, or null where they are not exact. */
  private static List<Object> fromManifests(
      Table table, long snapshotId, List<Aggregate> aggregates) {
    long rows = 0;
    Object[] bounds = new Object[aggregates.size()];
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().useSnapshot(snapshotId).includeColumnStats().planFiles()) {
      for (FileScanTask task : tasks) {
        if (!task.deletes().isEmpty()) {
          return null;
        }
        DataFile file = task.file();
        rows += file.recordCount();
        for (int i = 0; i < aggregates.size(); i++) {
          Aggregate aggregate = aggregates.get(i);
          if (aggregate.column() == null) {
            continue;
          }
          Types.NestedField field = table.schema().findField(aggregate.column());
          Long values = file.valueCounts() == null ? null : file.valueCounts().get(field.fieldId());
          Long nulls =
              file.nullValueCounts() == null ? null : file.nullValueCounts().get(field.fieldId());
          if (values != null && values.equals(nulls)) {
            continue; // only nulls: no bound, and nothing for MIN or MAX
          }
          boolean min = aggregate.function() == Function.MIN;
          ByteBuffer bound =
              min
                  ? (file.lowerBounds() == null ? null : file.lowerBounds().get(field.fieldId()))
                  : (file.upperBounds() == null ? null : file.upperBounds().get(field.fieldId()));
          if (bound == null) {
            return null; // a file without the column's bounds: read instead
          }
          bounds[i] =
              fold(field.type(), min, bounds[i], Conversions.fromByteBuffer(field.type(), bound));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the manifests of " + table.name(), e);
    }
    List<Object> values = new ArrayList<>();
    for (int i = 0; i < aggregates.size(); i++) {
      values.add(aggregates.get(i).column() == null ? (Object) rows : bounds[i]);
    }
    return values;
  }

  /** The values from the rows, read with their deletes. */
  private static List<Object> read(Table table, long snapshotId, List<Aggregate> aggregates) {
    Set<String> columns = new LinkedHashSet<>();
    aggregates.stream().map(Aggregate::column).filter(c -> c != null).forEach(columns::add);
    if (columns.isEmpty()) {
      columns.add(table.schema().columns().get(0).name()); // one column suffices to count rows
    }
    long rows = 0;
    Object[] values = new Object[aggregates.size()];
    InternalRecordWrapper internal = null;
    try (CloseableIterator<ChangeRow> read =
        new ChangelogReader(table, ChangelogOptions.defaults().withColumns(List.copyOf(columns)))
            .snapshotChanges(snapshotId)) {
      while (read.hasNext()) {
        Record row = read.next().row();
        if (internal == null) { // dates and times as Iceberg's internal values, as bounds are
          internal = new InternalRecordWrapper(row.struct());
        }
        rows++;
        for (int i = 0; i < aggregates.size(); i++) {
          Aggregate aggregate = aggregates.get(i);
          if (aggregate.column() != null) {
            Types.NestedField field = row.struct().field(aggregate.column());
            Object value =
                internal.wrap(row).get(row.struct().fields().indexOf(field), Object.class);
            if (value != null) {
              values[i] =
                  fold(field.type(), aggregate.function() == Function.MIN, values[i], value);
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the rows of " + table.name(), e);
    }
    List<Object> result = new ArrayList<>();
    for (int i = 0; i < aggregates.size(); i++) {
      result.add(aggregates.get(i).column() == null ? (Object) rows : values[i]);
    }
    return result;
  }

  @SuppressWarnings("unchecked")
  private static Object fold(Type type, boolean min, Object sofar, Object value) {
    if (sofar == null) {
      return value;
    }
    Comparator<Object> order = (Comparator<Object>) Comparators.forType(type.asPrimitiveType());
    int compared = order.compare(value, sofar);
    return (min ? compared < 0 : compared > 0) ? value : sofar;
  }

  private static Type type(Table table, String column) {
    Types.NestedField field = table.schema().findField(column);
    if (field == null) {
      throw new IllegalArgumentException("table " + table.name() + " has no column " + column);
    }
    return field.type();
  }
}
