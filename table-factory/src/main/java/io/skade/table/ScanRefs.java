package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.SCAN_BRANCH;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_TAG;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_MODE;
import static io.skade.table.SkadeConnectorOptions.SCAN_START_TAG;
import static io.skade.table.SkadeConnectorOptions.SCAN_TAG;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.refs.TableRefs;
import io.skade.source.StartupMode;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.api.ValidationException;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The tags and branches a read names: {@code 'scan.tag'} and {@code 'scan.branch'} (the rows of
 * that snapshot), {@code 'scan.start-tag'} and {@code 'scan.end-tag'} (the changes after one
 * snapshot, up to another). They are checked against the other read options before the catalog is
 * opened, and resolved to snapshot ids against the table as loaded when the query is planned: a job
 * restored later reads the same snapshots, wherever the refs point by then.
 */
record ScanRefs(String tag, String branch, String startTag, String endTag) {

  /** The refs named in {@code raw}, checked against the read's other options. */
  static ScanRefs of(Map<String, String> raw, boolean batch) {
    ScanRefs refs =
        new ScanRefs(
            named(raw, SCAN_TAG),
            named(raw, SCAN_BRANCH),
            named(raw, SCAN_START_TAG),
            named(raw, SCAN_END_TAG));
    ConfigOption<String> rows =
        refs.tag != null ? SCAN_TAG : refs.branch != null ? SCAN_BRANCH : null;
    if (rows != null) {
      for (ConfigOption<?> other :
          List.of(SCAN_TAG, SCAN_BRANCH, SCAN_START_TAG, SCAN_END_TAG, SCAN_END_SNAPSHOT_ID)) {
        if (other != rows && raw.containsKey(other.key())) {
          throw conflict(rows, other, "reads the rows of one snapshot");
        }
      }
      String mode = raw.get(SCAN_STARTUP_MODE.key());
      if (mode != null && !mode.trim().equalsIgnoreCase(StartupMode.FULL.value())) {
        throw conflict(rows, SCAN_STARTUP_MODE, "reads the rows of one snapshot ('full')");
      }
    }
    if (refs.startTag != null) {
      if (batch) {
        throw new ValidationException(
            "option '"
                + SCAN_START_TAG.key()
                + "' reads changes, which batch mode cannot take; run the query in streaming"
                + " mode, or read the rows of a tag with '"
                + SCAN_TAG.key()
                + "'");
      }
      if (raw.containsKey(SCAN_STARTUP_MODE.key())) {
        throw conflict(SCAN_START_TAG, SCAN_STARTUP_MODE, "sets where the read starts");
      }
    }
    if (refs.endTag != null && raw.containsKey(SCAN_END_SNAPSHOT_ID.key())) {
      throw conflict(SCAN_END_TAG, SCAN_END_SNAPSHOT_ID, "sets where the read ends");
    }
    return refs;
  }

  /**
   * {@code scan} with the refs resolved against {@code table} as loaded now: a read of a tag's or a
   * branch's rows ends at its snapshot; a read from a start tag starts after its snapshot and ends
   * at the end tag's.
   */
  SkadeTableSource.Scan resolve(
      SkadeTableSource.Scan scan, Table table, CatalogConnection connection) {
    TableIdentifier id = scan.table();
    if (tag != null || branch != null) {
      long at =
          snapshotOf(table, id, tag != null ? SCAN_TAG : SCAN_BRANCH, tag != null ? tag : branch);
      return scan.startingAt(scan.startupMode(), scan.startupValue(), at);
    }
    Long end =
        endTag == null ? scan.endSnapshotId() : (Long) snapshotOf(table, id, SCAN_END_TAG, endTag);
    if (endTag != null) {
      requireOnCurrentHistory(table, id, SCAN_END_TAG, endTag, end);
    }
    if (startTag == null) {
      return scan.startingAt(scan.startupMode(), scan.startupValue(), end);
    }
    long start = snapshotOf(table, id, SCAN_START_TAG, startTag);
    requireOnCurrentHistory(table, id, SCAN_START_TAG, startTag, start);
    String endNamed =
        endTag != null
            ? "'" + SCAN_END_TAG.key() + "' = '" + endTag + "'"
            : "'" + SCAN_END_SNAPSHOT_ID.key() + "' = " + end;
    if (end != null && start == end) {
      throw new ValidationException(
          "options '"
              + SCAN_START_TAG.key()
              + "' = '"
              + startTag
              + "' and "
              + endNamed
              + " of skade table "
              + id
              + " both point at snapshot "
              + start
              + ": no change lies between them; choose an end after the start tag");
    }
    if (end != null && !SnapshotUtil.isAncestorOf(table, end, start)) {
      throw new ValidationException(
          "option '"
              + SCAN_START_TAG.key()
              + "' = '"
              + startTag
              + "' (snapshot "
              + start
              + ") of skade table "
              + id
              + " is not before "
              + endNamed
              + " (snapshot "
              + end
              + "); swap them, or choose tags along the table's history");
    }
    // The commits after the start tag's: replayed from the catalog's log where it has the commit.
    Optional<CommitEvent> commit = connection.commitOf(id, start);
    if (commit.isPresent()) {
      return scan.startingAt(StartupMode.FROM_COMMIT_SEQ, commit.get().commitSeq(), end);
    }
    Snapshot next = childOf(table, start, end);
    if (next == null) {
      throw new ValidationException(
          "option '"
              + SCAN_START_TAG.key()
              + "' = '"
              + startTag
              + "' of skade table "
              + id
              + ": its snapshot "
              + start
              + " was not committed through this catalog (its history was registered) and no"
              + " snapshot follows it yet; start from a later tag, or with"
              + " scan.startup.mode 'latest'");
    }
    return scan.startingAt(StartupMode.FROM_SNAPSHOT, next.snapshotId(), end);
  }

  /** The snapshot after {@code start} on the history of {@code end} (main's head when null). */
  private static Snapshot childOf(Table table, long start, Long end) {
    Snapshot head = end == null ? table.currentSnapshot() : table.snapshot(end);
    Snapshot child = null;
    for (Snapshot s = head; s != null && s.snapshotId() != start; ) {
      child = s;
      s = s.parentId() == null ? null : table.snapshot(s.parentId());
    }
    return child;
  }

  private static long snapshotOf(
      Table table, TableIdentifier id, ConfigOption<String> option, String name) {
    boolean wantTag = option != SCAN_BRANCH;
    SnapshotRef ref = table.refs().get(name);
    if (ref == null || ref.isTag() != wantTag) {
      String kind = wantTag ? "tag" : "branch";
      List<String> known = TableRefs.names(table, wantTag);
      throw new ValidationException(
          "option '"
              + option.key()
              + "' = '"
              + name
              + "': skade table "
              + id
              + " has no "
              + kind
              + " of that name"
              + (ref == null
                  ? ""
                  : " (it is a "
                      + (wantTag
                          ? "branch: use '" + SCAN_BRANCH.key()
                          : "tag: use '" + SCAN_TAG.key())
                      + "')")
              + "; its "
              + kind
              + "s: "
              + (known.isEmpty() ? "none" : known));
    }
    return ref.snapshotId();
  }

  /** A window's tag must lie on main's current history, along which changes are read. */
  private static void requireOnCurrentHistory(
      Table table, TableIdentifier id, ConfigOption<String> option, String name, long snapshot) {
    Snapshot current = table.currentSnapshot();
    if (current == null || !SnapshotUtil.isAncestorOf(table, current.snapshotId(), snapshot)) {
      throw new ValidationException(
          "option '"
              + option.key()
              + "' = '"
              + name
              + "': its snapshot "
              + snapshot
              + " is not in the current history of skade table "
              + id
              + " (the table was rolled back past it, or the tag is on another branch), and"
              + " changes are read along that history; read its rows with '"
              + SCAN_TAG.key()
              + "' instead");
    }
  }

  private static String named(Map<String, String> raw, ConfigOption<String> option) {
    String value = raw.get(option.key());
    if (value != null && value.isBlank()) {
      throw new ValidationException(
          "option '" + option.key() + "' is blank; name a tag or branch, or remove the option");
    }
    return value == null ? null : value.trim();
  }

  private static ValidationException conflict(
      ConfigOption<?> option, ConfigOption<?> other, String why) {
    return new ValidationException(
        "option '"
            + option.key()
            + "' "
            + why
            + ", so option '"
            + other.key()
            + "' cannot be set with it: remove one of them");
  }
}
