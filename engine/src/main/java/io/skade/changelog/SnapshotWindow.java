package io.skade.changelog;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;

/** The snapshots a changelog window spans, and the checks that it can be read exactly. */
final class SnapshotWindow {
  private SnapshotWindow() {}

  /**
   * The snapshots of the window {@code (from, to]} of {@code table}, oldest first, after checking
   * it can be read exactly: both ends known, one history between them, no snapshot expired inside
   * it and no change of identifier fields from those of {@code schema}, the reader's.
   */
  static List<Snapshot> of(Table table, Schema schema, Long from, long to) {
    Snapshot last = table.snapshot(to);
    if (last == null) {
      throw new IllegalArgumentException(
          "table "
              + table.name()
              + " has no snapshot "
              + to
              + " (unknown or expired); read a window ending at a snapshot the table still has");
    }
    if (from != null && from == to) {
      return List.of();
    }
    if (from != null && table.snapshot(from) == null) {
      throw new MissingHistoryException(
          "table "
              + table.name()
              + ": the window's start,"
              + " snapshot "
              + from
              + ", was expired (or never existed), so the rows it started"
              + " from are unknown; start at a snapshot the table still has, or set"
              + " on-missing-history to full-reload",
          null);
    }
    // Walk back from the end: the start must be met before the first snapshot, and every
    // snapshot on the way must still exist.
    Deque<Snapshot> window = new ArrayDeque<>();
    for (Snapshot s = last; from == null || s.snapshotId() != from; ) {
      window.addFirst(s);
      Long parent = s.parentId();
      if (parent == null) {
        if (from != null) {
          throw new IllegalArgumentException(
              "table "
                  + table.name()
                  + ": snapshot "
                  + from
                  + " is not an ancestor of snapshot "
                  + to
                  + ", so no changelog leads from one to"
                  + " the other (a rollback or another branch lies between); choose a window along"
                  + " one history");
        }
        break;
      }
      s = table.snapshot(parent);
      if (s == null) {
        throw new MissingHistoryException(
            "table "
                + table.name()
                + ": snapshot "
                + parent
                + " inside the window was expired, so its changes are gone; read a window starting"
                + " at or after snapshot "
                + window.getFirst().snapshotId()
                + ", or set"
                + " on-missing-history to full-reload",
            null);
      }
    }
    for (Snapshot s : window) {
      Schema at = table.schemas().get(s.schemaId());
      if (at != null && !at.identifierFieldIds().equals(schema.identifierFieldIds())) {
        throw new IllegalStateException(
            "table "
                + table.name()
                + ": snapshot "
                + s.snapshotId()
                + " has identifier fields "
                + at.identifierFieldNames()
                + ", the table now has "
                + schema.identifierFieldNames()
                + "; a changelog cannot pair rows across that"
                + " change — read windows on either side of it");
      }
    }
    return new ArrayList<>(window);
  }
}
