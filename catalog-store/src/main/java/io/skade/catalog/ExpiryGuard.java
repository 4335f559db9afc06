package io.skade.catalog;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Consumers against snapshot expiry.
 *
 * <p>A consumer whose cursor stands at snapshot S needs S and every snapshot committed after it
 * (its next window starts at S); snapshots strictly older than S may go. "Older" is by sequence
 * number, then by timestamp (format v1 gives every snapshot sequence number 0). A commit that
 * removes a snapshot some live consumer needs is refused by {@link #check}, which runs inside the
 * commit path, so it sees the consumers exactly as stored when the table moves.
 *
 * <p>A consumer counts while it is live: stored less than {@code consumer.expiry-timeout} ago, for
 * this table (same name and uuid), with its cursor snapshot still on the table — a cursor already
 * expired holds nothing back, and {@link #requireUsable} tells its consumer how to recover.
 */
final class ExpiryGuard {
  private final Duration timeout;
  private final String timeoutText;

  /**
   * @param timeout the {@code consumer.expiry-timeout} property, parsed ({@link CatalogConfig})
   * @param timeoutText the property as given, for the message of a refused commit
   */
  ExpiryGuard(Duration timeout, String timeoutText) {
    this.timeout = timeout;
    this.timeoutText = timeoutText;
  }

  /** The snapshots of {@code base} that {@code updated} no longer has. */
  static List<Snapshot> removedSnapshots(TableMetadata base, TableMetadata updated) {
    if (base == null) {
      return List.of();
    }
    Set<Long> kept =
        updated.snapshots().stream().map(Snapshot::snapshotId).collect(Collectors.toSet());
    return base.snapshots().stream().filter(s -> !kept.contains(s.snapshotId())).toList();
  }

  /**
   * Refuses, on the committer thread, a commit of {@code base}'s table that removes snapshots a
   * live consumer still needs.
   *
   * @throws ExpiryBlockedException naming the snapshots, the consumers and what to do
   */
  void check(
      Committer.Stage stage,
      String tableKey,
      String tableName,
      TableMetadata base,
      List<Snapshot> removed) {
    if (removed.isEmpty()) {
      return;
    }
    Instant liveSince = Instant.now().minus(timeout);
    List<String> blocking = new ArrayList<>();
    for (StoredConsumer consumer : stage.consumers()) {
      ConsumerCursor cursor = consumer.cursor();
      Snapshot at = base.snapshot(cursor.snapshotId());
      boolean counts =
          TableKeys.tableKey(cursor.table()).equals(tableKey)
              && cursor.tableUuid().equals(base.uuid())
              && !consumer.lastSeen().isBefore(liveSince)
              && (at != null || cursor.snapshotId() == ConsumerCursor.NO_SNAPSHOT);
      if (!counts) {
        continue;
      }
      List<Long> needed =
          removed.stream()
              .filter(snapshot -> at == null || !olderThan(snapshot, at))
              .map(Snapshot::snapshotId)
              .toList();
      if (!needed.isEmpty()) {
        blocking.add(
            "consumer '"
                + consumer.consumerId()
                + "' (cursor at "
                + (at == null ? "no snapshot yet" : "snapshot " + at.snapshotId())
                + ", last seen "
                + consumer.lastSeen()
                + ") still needs snapshot(s) "
                + needed);
      }
    }
    if (!blocking.isEmpty()) {
      throw new ExpiryBlockedException(
          "cannot remove snapshots of table "
              + tableName
              + ": "
              + String.join("; ", blocking)
              + ". Nothing was changed. Wait until the consumer"
              + " advances past them, drop a consumer that is gone for good with"
              + " SkadeCatalog.dropConsumer(id), or lower the catalog's "
              + SkadeCatalog.CONSUMER_EXPIRY_TIMEOUT
              + " (now "
              + timeoutText
              + ") so that consumers"
              + " unseen that long stop counting");
    }
  }

  private static boolean olderThan(Snapshot a, Snapshot b) {
    return a.sequenceNumber() != b.sequenceNumber()
        ? a.sequenceNumber() < b.sequenceNumber()
        : a.timestampMillis() < b.timestampMillis();
  }

  /**
   * Returns the cursor's table when the cursor can be resumed: the table is the one it was taken on
   * and its snapshot is still there.
   *
   * @throws CursorExpiredException naming the table, the snapshot and the startup options that
   *     recover
   */
  static Table requireUsable(Catalog catalog, ConsumerCursor cursor) {
    String name = catalog.name() + "." + cursor.table();
    String at =
        cursor.snapshotId() == ConsumerCursor.NO_SNAPSHOT
            ? "the cursor from before its first snapshot"
            : "the cursor at snapshot " + cursor.snapshotId();
    Table table;
    try {
      table = catalog.loadTable(cursor.table());
    } catch (NoSuchTableException e) {
      throw new CursorExpiredException(
          "table "
              + name
              + " no longer exists (dropped, or renamed"
              + " away), so "
              + at
              + " cannot be resumed; once the table exists, "
              + recovery(null)
              + ", or point the job at the table's new name");
    }
    if (!table.uuid().toString().equals(cursor.tableUuid())) {
      throw new CursorExpiredException(
          "table "
              + name
              + " was dropped and created again (its"
              + " uuid is "
              + table.uuid()
              + ", the cursor's table had "
              + cursor.tableUuid()
              + "), so "
              + at
              + " belongs to the old table and cannot be resumed; "
              + recovery(null));
    }
    Snapshot oldest = SnapshotUtil.oldestAncestor(table);
    boolean usable =
        cursor.snapshotId() == ConsumerCursor.NO_SNAPSHOT
            ? oldest == null || oldest.parentId() == null
            : table.snapshot(cursor.snapshotId()) != null;
    if (!usable) {
      throw new CursorExpiredException(
          "table "
              + name
              + ": "
              + at
              + " cannot be resumed because"
              + " the snapshots it needs were expired; "
              + recovery(oldest));
    }
    return table;
  }

  private static String recovery(Snapshot oldest) {
    return "restart with startup-mode=full (re-read the table's current rows, then follow its"
        + " changes), startup-mode=latest (follow only changes committed from now on)"
        + (oldest == null
            ? ""
            : ", or from-snapshot="
                + oldest.snapshotId()
                + " (the oldest"
                + " snapshot still on the table; changes before it are not replayed)");
  }
}
