package io.skade.lookup;

import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.changelog.MissingHistoryException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.io.CloseableIterable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every row of one snapshot that a filter keeps, in memory by key, kept current by applying the
 * changelog of each newer snapshot (the filter applied to it too) instead of reading the table
 * again; read again only when that history is gone. Thread-safe.
 */
final class FullCache {
  private static final Logger LOG = LoggerFactory.getLogger(FullCache.class);

  private final List<String> keyColumns;
  private final Expression filter;
  private final Map<List<Object>, List<Record>> rows = new HashMap<>();

  /** The snapshot the rows are at; null before the table's first snapshot. */
  private Long snapshotId;

  /** How keys are read from rows of {@link #keySchema}: internal values, by position. */
  private Schema keySchema;

  private InternalRecordWrapper keyView;
  private int[] keyPositions;

  /** The rows of {@code table} at {@code snapshotId} (null: none yet) that {@code filter} keeps. */
  FullCache(Table table, Long snapshotId, List<String> keyColumns, Expression filter) {
    this.keyColumns = List.copyOf(keyColumns);
    this.filter = filter;
    load(table, snapshotId);
  }

  /** Moves the rows to {@code target} (null: no snapshot) of {@code table}, which holds both. */
  synchronized void advance(Table table, Long target) {
    if (target == null || target.equals(snapshotId)) {
      return;
    }
    if (snapshotId == null) {
      load(table, target);
      return;
    }
    ChangelogReader changes =
        new ChangelogReader(table, ChangelogOptions.defaults().withFilter(filter));
    List<ChangeRow> window;
    try {
      window = changes.read(snapshotId, target);
    } catch (MissingHistoryException | IllegalArgumentException e) {
      // History expired, or not an ancestor (a rollback): the snapshot's rows, read anew.
      LOG.info(
          "table {}: the full lookup cache reads snapshot {} again ({})",
          table.name(),
          target,
          e.getMessage());
      load(table, target);
      return;
    }
    Schema schema = table.schema();
    for (ChangeRow change : window) {
      if (change.type().removes()) {
        remove(schema, change.row());
      } else {
        add(schema, change.row());
      }
    }
    snapshotId = target;
  }

  /** The rows with key {@code key} (values normalized by {@link TableLookup#normalized}). */
  synchronized List<Record> rows(List<Object> key) {
    return List.copyOf(rows.getOrDefault(key, List.of()));
  }

  private void load(Table table, Long target) {
    rows.clear();
    snapshotId = target;
    if (target == null) {
      return;
    }
    Schema schema = table.schema();
    Evaluator keeps = new Evaluator(schema.asStruct(), filter, false);
    InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct());
    try (CloseableIterable<Record> all =
        IcebergGenerics.read(table).useSnapshot(target).where(filter).build()) {
      for (Record row : all) {
        if (keeps.eval(internal.wrap(row))) { // where() prunes files; rows are checked here
          add(schema, row);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "reading table "
              + table.name()
              + " at snapshot "
              + target
              + " into the full lookup cache",
          e);
    }
  }

  private List<Object> key(Schema schema, Record row) {
    if (schema != keySchema) {
      keySchema = schema;
      keyView = new InternalRecordWrapper(schema.asStruct());
      keyPositions =
          keyColumns.stream()
              .mapToInt(column -> schema.columns().indexOf(schema.caseInsensitiveFindField(column)))
              .toArray();
    }
    keyView.wrap(row);
    List<Object> key = new ArrayList<>(keyPositions.length);
    for (int position : keyPositions) {
      key.add(keyView.get(position, Object.class));
    }
    return TableLookup.normalized(key);
  }

  private void add(Schema schema, Record row) {
    rows.computeIfAbsent(key(schema, row), k -> new ArrayList<>(1)).add(row.copy());
  }

  private void remove(Schema schema, Record row) {
    List<Object> key = key(schema, row);
    List<Record> same = rows.get(key);
    if (same != null) {
      same.remove(row); // one copy: a log table may hold equal rows
      if (same.isEmpty()) {
        rows.remove(key);
      }
    }
  }
}
