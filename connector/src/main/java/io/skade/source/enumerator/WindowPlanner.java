package io.skade.source.enumerator;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitOperation;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.StoredConsumer;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.PlannedWindow;
import io.skade.scan.MetadataCache;
import io.skade.scan.TableVersions;
import io.skade.scan.WindowFiles;
import io.skade.source.StartupMode;
import io.skade.source.split.ChangelogSplit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Plans a source's splits from the catalog's commit log: where a startup mode begins, and the
 * windows of the commits after a cursor. It never blocks on anything but the catalog and the
 * table's metadata, and it runs off the coordinator thread.
 *
 * <p>A window always starts exactly at the cursor and the cursor moves to its end, so replaying the
 * log from an older position (a duplicate wake-up, a restored checkpoint) plans nothing twice: a
 * commit whose snapshots are not after the cursor on the table's current history is skipped. In
 * per-snapshot mode every commit is its own window, so each change carries its own commit's {@code
 * commit_seq}; in collapsed mode the commits of one round form one window.
 */
final class WindowPlanner {
  /** The end of an unbounded source. */
  static final long UNBOUNDED = Long.MIN_VALUE;

  /** The most log rows one round reads, so a long backlog is planned (and read) in steps. */
  static final int ROUND_COMMITS = 1024;

  private final CatalogConnection catalog;
  private final TableIdentifier identifier;
  private final String tableKey;
  private final Mode mode;
  private final OrderingUnits units;

  /** The table's versions the windows are planned from. */
  private final TableVersions versions;

  /** Where a source begins: its cursor, its end, and what to read before following the log. */
  record Start(ConsumerCursor cursor, long endSnapshotId, List<ChangelogSplit> splits) {}

  /**
   * One round: the splits planned, the cursor after them, whether the log has more, and the stamp
   * of the log's commit at the cursor ({@link ChangelogSplit#UNKNOWN_TIME} when the round read
   * none): every later commit is stamped no earlier.
   */
  record Plan(List<ChangelogSplit> splits, ConsumerCursor cursor, boolean more, long logMicros) {}

  WindowPlanner(CatalogConnection catalog, TableIdentifier identifier, Mode mode) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.tableKey = catalog.feed().commitTableKey(identifier);
    this.mode = mode;
    this.units = new OrderingUnits(tableKey);
    this.versions = new TableVersions(catalog, identifier);
  }

  /** The catalog's key of the table, as commit events name it. */
  String tableKey() {
    return tableKey;
  }

  /**
   * Resolves a startup mode against the table as it is now.
   *
   * @param value the mode's argument (snapshot id, timestamp or commit_seq), null for others
   * @param bounded whether the source stops
   * @param endSnapshotId the last snapshot of a bounded source; null for the current one
   */
  Start start(StartupMode startup, Long value, boolean bounded, Long endSnapshotId) {
    long seq =
        catalog.feed().commitSeq(); // before the load: the log is replayed from here at least
    Table table = catalog.catalog().loadTable(identifier);
    String uuid = table.uuid().toString();
    Snapshot current = table.currentSnapshot();
    long end = bounded ? end(table, current, endSnapshotId, startup) : UNBOUNDED;
    long currentId = current == null ? ConsumerCursor.NO_SNAPSHOT : current.snapshotId();
    List<ChangelogSplit> splits = new ArrayList<>();
    Snapshot first = first(table, current, startup, value, seq);
    if (startup == StartupMode.FULL && current != null) {
      long at = end == UNBOUNDED ? currentId : end;
      // The rows carry the commit_seq of the commit that made their snapshot (the catalog's
      // position may be another table's commit); without it in the log, the position.
      Optional<CommitEvent> made = catalog.commitOf(identifier, at);
      long rowsSeq = made.map(CommitEvent::commitSeq).orElse(seq);
      ChangelogSplit rows =
          ChangelogSplit.snapshot(tableKey, location(table), at, rowsSeq)
              .withCommitMicros(
                  made.map(CommitEvent::tsMicros).orElse(ChangelogSplit.UNKNOWN_TIME));
      splits.addAll(cut(table, rows, List.of(), Map.of(), true));
      return new Start(new ConsumerCursor(identifier, uuid, at, seq), end, splits);
    }
    if (first == null) {
      return new Start(new ConsumerCursor(identifier, uuid, currentId, seq), end, splits);
    }
    long before = first.parentId() == null ? ConsumerCursor.NO_SNAPSHOT : first.parentId();
    OptionalLong firstSeq = commitSeqOf(first);
    if (firstSeq.isPresent()) { // replay the log from the first commit, commit by commit
      return new Start(
          new ConsumerCursor(identifier, uuid, before, firstSeq.getAsLong() - 1), end, splits);
    }
    // Snapshots the log does not know (a registered table's history): one window up to now.
    long upTo = end == UNBOUNDED ? currentId : end;
    ChangelogSplit window = ChangelogSplit.window(tableKey, location(table), before, upTo, seq);
    splits.addAll(cut(table, window, after(table, before, upTo), Map.of(), true));
    return new Start(new ConsumerCursor(identifier, uuid, upTo, seq), end, splits);
  }

  /**
   * Where a source resumes from {@code stored}, its consumer's cursor in the catalog: after it, as
   * a restored checkpoint would; a clear error when the cursor is of another table or its snapshot
   * was expired.
   */
  Start resume(StoredConsumer stored, boolean bounded, Long endSnapshotId) {
    ConsumerCursor cursor = stored.cursor();
    if (!cursor.table().equals(identifier)) {
      throw new IllegalArgumentException(
          "skade source on table "
              + identifier
              + ": consumer '"
              + stored.consumerId()
              + "' is a consumer of table "
              + cursor.table()
              + ", not of this one; name a consumer of this table in scan.consumer-id");
    }
    Table table = catalog.requireCursorUsable(cursor);
    long end = bounded ? end(table, table.currentSnapshot(), endSnapshotId, null) : UNBOUNDED;
    return new Start(cursor, end, List.of());
  }

  /**
   * Checks a startup mode and a bounded source's end against the table as it is now, as {@link
   * #start} resolves them, without planning anything: the error {@code start} would fail with.
   */
  void check(StartupMode startup, Long value, boolean bounded, Long endSnapshotId) {
    long seq = catalog.feed().commitSeq();
    Table table = catalog.catalog().loadTable(identifier);
    Snapshot current = table.currentSnapshot();
    if (bounded) {
      end(table, current, endSnapshotId, startup);
    }
    first(table, current, startup, value, seq);
  }

  /** The first snapshot whose changes a startup mode reads, or null (none yet, or not one). */
  private Snapshot first(Table table, Snapshot current, StartupMode startup, Long value, long seq) {
    return switch (startup) {
      case FULL, LATEST -> null;
      case EARLIEST -> earliest(table, current);
      case FROM_SNAPSHOT -> fromSnapshot(table, value);
      case FROM_TIMESTAMP -> fromTimestamp(table, current, value);
      case FROM_COMMIT_SEQ -> fromCommitSeq(table, current, value, seq);
      case FROM_CONSUMER -> null; // resumed from the stored cursor instead (resume)
    };
  }

  /**
   * The windows of the commits after {@code cursor}, at most {@link #ROUND_COMMITS} log rows, none
   * beyond {@code end}.
   */
  Plan next(ConsumerCursor cursor, long end) {
    return next(cursor, end, true);
  }

  /**
   * As {@link #next(ConsumerCursor, long)}; the splits' plans carry the table's metadata only when
   * {@code withMetadata} (a reader that shares this JVM's {@link MetadataCache} has it already).
   */
  Plan next(ConsumerCursor cursor, long end, boolean withMetadata) {
    return next(
        cursor, end, catalog.feed().commitsSince(cursor.commitSeq(), ROUND_COMMITS), withMetadata);
  }

  /** {@code plan}, with the stamp of the log's commit at its cursor when it read none. */
  Plan stamped(Plan plan) {
    long seq = plan.cursor().commitSeq();
    if (plan.logMicros() != ChangelogSplit.UNKNOWN_TIME || seq <= 0) {
      return plan;
    }
    List<CommitEvent> at = catalog.feed().commitsSince(seq - 1, 1);
    return at.isEmpty()
        ? plan
        : new Plan(plan.splits(), plan.cursor(), plan.more(), at.get(0).tsMicros());
  }

  /**
   * As {@link #next(ConsumerCursor, long, boolean)}, over {@code page}: the log's rows right after
   * the cursor, gapless, at most {@link #ROUND_COMMITS} (as the commit feed delivered them).
   */
  Plan next(ConsumerCursor cursor, long end, List<CommitEvent> page, boolean withMetadata) {
    boolean more = page.size() == ROUND_COMMITS;
    List<CommitEvent> mine = new ArrayList<>();
    for (CommitEvent event : page) {
      if (event.tableKey().equals(tableKey)) {
        requireSameTable(event, cursor.tableUuid());
        mine.add(event);
      }
    }
    long logEnd = page.isEmpty() ? cursor.commitSeq() : page.get(page.size() - 1).commitSeq();
    long logEndMicros =
        page.isEmpty() ? ChangelogSplit.UNKNOWN_TIME : page.get(page.size() - 1).tsMicros();
    if (mine.isEmpty() || cursor.snapshotId() == end) {
      return new Plan(List.of(), withSeq(cursor, cursor.snapshotId(), logEnd), more, logEndMicros);
    }
    CommitEvent lastEvent = mine.get(mine.size() - 1);
    Table table = versions.at(lastEvent.metadataLocation());
    if (!table.uuid().toString().equals(cursor.tableUuid())) {
      throw recreated();
    }
    long head =
        table.currentSnapshot() == null
            ? ConsumerCursor.NO_SNAPSHOT
            : table.currentSnapshot().snapshotId();
    long upTo = end != UNBOUNDED && SnapshotUtil.isAncestorOf(table, head, end) ? end : head;
    if (movedOff(table, upTo, cursor.snapshotId())) {
      return moved(cursor, end, page, mine, withMetadata);
    }
    List<Snapshot> chain = after(table, cursor.snapshotId(), upTo);
    Map<Long, Integer> position = new HashMap<>();
    for (int i = 0; i < chain.size(); i++) {
      position.put(chain.get(i).snapshotId(), i);
    }
    // One read of the history's appends for every window of the round.
    Map<Long, List<DataFile>> appended = WindowFiles.appendedBy(table, chain);
    List<ChangelogSplit> splits = new ArrayList<>();
    String location = location(table);
    int done = -1; // the chain's last snapshot planned
    long start = cursor.snapshotId();
    long lastSeq = cursor.commitSeq();
    long lastMicros = ChangelogSplit.UNKNOWN_TIME;
    for (CommitEvent event : mine) {
      int reach = done;
      for (long id : event.addedSnapshotIds()) {
        reach = Math.max(reach, position.getOrDefault(id, -1));
      }
      boolean last = event == lastEvent;
      if (last && done < chain.size() - 1) {
        reach = chain.size() - 1; // never leave the history of the newest metadata unplanned
      }
      if (reach == done || (mode == Mode.COLLAPSED && !last)) {
        continue; // nothing new on the history (already read, another branch, metadata only)
      }
      List<Snapshot> steps = chain.subList(mode == Mode.COLLAPSED ? 0 : done + 1, reach + 1);
      long to = chain.get(reach).snapshotId();
      ChangelogSplit window =
          ChangelogSplit.window(tableKey, location, start, to, event.commitSeq())
              .withCommitMicros(event.tsMicros());
      splits.addAll(cut(table, window, steps, appended, withMetadata));
      start = to;
      done = reach;
      lastSeq = event.commitSeq();
      lastMicros = event.tsMicros();
    }
    // Past the end, the log is not handled further: a bounded source stops there.
    boolean atEnd = start == end;
    return new Plan(
        splits,
        withSeq(cursor, start, atEnd ? lastSeq : logEnd),
        more && !atEnd,
        atEnd ? lastMicros : logEndMicros);
  }

  /**
   * Whether {@code head}'s history, walked back to its first snapshot, never meets {@code cursor}:
   * the table's head left the history the cursor is on. A history cut short by expiry says no (the
   * walk along it then names what was expired).
   */
  private static boolean movedOff(Table table, long head, long cursor) {
    if (cursor == ConsumerCursor.NO_SNAPSHOT || head == ConsumerCursor.NO_SNAPSHOT) {
      return false;
    }
    for (Snapshot s = table.snapshot(head); s != null; ) {
      if (s.snapshotId() == cursor) {
        return false;
      }
      if (s.parentId() == null) {
        return true;
      }
      s = table.snapshot(s.parentId());
    }
    return false;
  }

  /**
   * A round in which the table's head left the history the cursor is on (a rollback, a branch made
   * current): the commits before the one that moved it are planned as usual, and that commit's
   * changes are one window between the rows at the cursor and the rows at its head ({@link
   * ChangelogSplit#between}), planned alone. The next round goes on from there.
   */
  private Plan moved(
      ConsumerCursor cursor,
      long end,
      List<CommitEvent> page,
      List<CommitEvent> mine,
      boolean withMetadata) {
    for (int i = 0; ; i++) { // the page's last commit moved it, if no earlier one did
      CommitEvent event = mine.get(i);
      Table at = versions.at(event.metadataLocation());
      Snapshot head = at.currentSnapshot();
      if (head != null && !movedOff(at, head.snapshotId(), cursor.snapshotId())) {
        continue;
      }
      if (i > 0) {
        Plan before =
            next(cursor, end, page.subList(0, page.indexOf(mine.get(i - 1)) + 1), withMetadata);
        return new Plan(before.splits(), before.cursor(), true, before.logMicros());
      }
      if (head == null || at.snapshot(cursor.snapshotId()) == null) {
        throw new IllegalStateException(
            "skade source on table "
                + identifier
                + ": commit_seq "
                + event.commitSeq()
                + " moved the table's head off the history of snapshot "
                + cursor.snapshotId()
                + ", where the source is, and that snapshot "
                + (head == null ? "leads to no snapshot" : "was expired")
                + ", so no changelog leads on from it; restart with scan.startup.mode=full");
      }
      if (end != UNBOUNDED) {
        throw new IllegalStateException(
            "skade source on table "
                + identifier
                + ": commit_seq "
                + event.commitSeq()
                + " moved the table's head off the history between the source's position"
                + " (snapshot "
                + cursor.snapshotId()
                + ") and its end snapshot "
                + end
                + " (a rollback), so that end is no longer the table's; read again with an end"
                + " on the current history");
      }
      ChangelogSplit window =
          ChangelogSplit.between(
                  tableKey, location(at), cursor.snapshotId(), head.snapshotId(), event.commitSeq())
              .withCommitMicros(event.tsMicros());
      return new Plan(
          cut(at, window, List.of(), Map.of(), withMetadata),
          withSeq(cursor, head.snapshotId(), event.commitSeq()),
          true,
          event.tsMicros());
    }
  }

  /**
   * The splits of {@code window} over {@code steps} ({@link OrderingUnits#cut}), each carrying its
   * {@link PlannedWindow}: when {@code withMetadata}, the metadata cut down to the snapshots it
   * reads, and, of {@code appendedBy} (per plain append, the files it added, read once for every
   * reader), the files of its steps in its slot.
   */
  private List<ChangelogSplit> cut(
      Table table,
      ChangelogSplit window,
      List<Snapshot> steps,
      Map<Long, List<DataFile>> appendedBy,
      boolean withMetadata) {
    Map<Long, List<DataFile>> appended = new HashMap<>();
    for (Snapshot step : steps) {
      List<DataFile> files = appendedBy.get(step.snapshotId());
      if (files != null) {
        appended.put(step.snapshotId(), files);
      }
    }
    PlannedWindow plan =
        withMetadata
            ? PlannedWindow.of(table, snapshotsRead(window, steps))
            : PlannedWindow.appendsOnly();
    List<ChangelogSplit> splits = new ArrayList<>();
    for (ChangelogSplit split : units.cut(table, window, steps, appended)) {
      Map<Long, List<DataFile>> kept = new HashMap<>();
      appended.forEach(
          (id, files) ->
              kept.put(
                  id, files.stream().filter(f -> split.slice().keeps(f, table.specs())).toList()));
      splits.add(split.withPlan(plan == null ? null : plan.withAppended(kept)));
    }
    return splits;
  }

  /** The snapshots a reader of {@code window} over {@code steps} looks up. */
  private static List<Long> snapshotsRead(ChangelogSplit window, List<Snapshot> steps) {
    List<Long> read = new ArrayList<>();
    steps.forEach(step -> read.add(step.snapshotId()));
    read.add(window.toSnapshotId());
    if (!window.fullSnapshot() && window.fromSnapshotId() != ChangelogSplit.BEFORE_FIRST) {
      read.add(window.fromSnapshotId());
    }
    return read;
  }

  private static ConsumerCursor withSeq(ConsumerCursor cursor, long snapshotId, long seq) {
    return new ConsumerCursor(cursor.table(), cursor.tableUuid(), snapshotId, seq);
  }

  private void requireSameTable(CommitEvent event, String uuid) {
    CommitOperation op = event.operation();
    if (!op.leavesPointer()) {
      throw new IllegalStateException(
          "skade source on table "
              + identifier
              + ": the table was "
              + (op == CommitOperation.DROP ? "dropped" : "renamed away")
              + " at commit_seq "
              + event.commitSeq()
              + " while the source followed it; the source cannot go on. Start"
              + " a new job on the table's new name or on a table that exists");
    }
    if (op != CommitOperation.UPDATE
        && !MetadataCache.shared()
            .table(event.metadataLocation(), versions.io(), tableKey)
            .uuid()
            .toString()
            .equals(uuid)) {
      throw recreated(); // another table took the name (this one's own creation is fine)
    }
  }

  private IllegalStateException recreated() {
    return new IllegalStateException(
        "skade source on table "
            + identifier
            + ": the table was"
            + " dropped and created again while the source followed it, so its changes do not"
            + " continue the ones read; start a new job without this checkpoint (e.g."
            + " scan.startup.mode=full)");
  }

  /**
   * The snapshots after {@code cursor} up to {@code upTo}, oldest first, along {@code upTo}'s
   * history; a clear error when the cursor is not on it or history between was expired.
   */
  private List<Snapshot> after(Table table, long cursor, long upTo) {
    List<Snapshot> chain = new ArrayList<>();
    Long id = upTo == ConsumerCursor.NO_SNAPSHOT ? null : upTo;
    while (id != null && id != cursor) {
      Snapshot snapshot = table.snapshot(id);
      if (snapshot == null) {
        throw new IllegalStateException(
            "skade source on table "
                + identifier
                + ": snapshot "
                + id
                + " between the source's position (snapshot "
                + cursor
                + ") and snapshot "
                + upTo
                + " was expired, so its changes are gone; restart with"
                + " scan.startup.mode=full or latest");
      }
      chain.add(snapshot);
      id = snapshot.parentId();
    }
    if (id == null && cursor != ConsumerCursor.NO_SNAPSHOT) {
      throw new IllegalStateException(
          "skade source on table "
              + identifier
              + ": snapshot "
              + cursor
              + ", where the source is, is not in the history of the current snapshot "
              + upTo
              + " (the table was rolled back or its main branch replaced), so no changelog"
              + " leads on from it; restart with scan.startup.mode=full");
    }
    Collections.reverse(chain); // walked newest first
    return chain;
  }

  /**
   * A bounded source's last snapshot. Changes are read along the current history, so a read of
   * changes must end on it; a read of one snapshot's rows ({@code full}) may end at any snapshot
   * the table has (a tag or a branch's head off that history).
   */
  private long end(Table table, Snapshot current, Long endSnapshotId, StartupMode startup) {
    if (endSnapshotId == null) {
      return current == null ? ConsumerCursor.NO_SNAPSHOT : current.snapshotId();
    }
    boolean onHistory =
        current != null && SnapshotUtil.isAncestorOf(table, current.snapshotId(), endSnapshotId);
    if (!onHistory && !(startup == StartupMode.FULL && table.snapshot(endSnapshotId) != null)) {
      throw new IllegalArgumentException(
          "skade source on table "
              + identifier
              + ": the end"
              + " snapshot "
              + endSnapshotId
              + " is not in the table's current history; choose one"
              + " of its snapshots (see the table's snapshots metadata table)");
    }
    return endSnapshotId;
  }

  private Snapshot earliest(Table table, Snapshot current) {
    Snapshot first = current;
    while (first != null && first.parentId() != null) {
      Snapshot parent = table.snapshot(first.parentId());
      if (parent == null) {
        throw new IllegalArgumentException(
            "skade source on table "
                + identifier
                + ": startup"
                + " mode earliest needs the table's whole history, but snapshot "
                + first.parentId()
                + " was expired; use scan.startup.mode=full (current rows, then"
                + " changes) or from-snapshot with a snapshot the table still has");
      }
      first = parent;
    }
    return first;
  }

  private Snapshot fromSnapshot(Table table, Long snapshotId) {
    Snapshot snapshot = snapshotId == null ? null : table.snapshot(snapshotId);
    if (snapshot == null
        || table.currentSnapshot() == null
        || !SnapshotUtil.isAncestorOf(table, table.currentSnapshot().snapshotId(), snapshotId)) {
      throw new IllegalArgumentException(
          "skade source on table "
              + identifier
              + ": startup"
              + " snapshot "
              + snapshotId
              + " is not in the table's current history (unknown or"
              + " expired); choose one of its snapshots, or use scan.startup.mode=full");
    }
    if (snapshot.parentId() != null && table.snapshot(snapshot.parentId()) == null) {
      throw new IllegalArgumentException(
          "skade source on table "
              + identifier
              + ": startup"
              + " snapshot "
              + snapshotId
              + "'s parent "
              + snapshot.parentId()
              + " was expired, so"
              + " the rows its changes start from are unknown; start from a later snapshot, or use"
              + " scan.startup.mode=full");
    }
    return snapshot;
  }

  private Snapshot fromTimestamp(Table table, Snapshot current, Long millis) {
    Snapshot first = null;
    for (Snapshot s : ancestors(table, current)) {
      if (s.timestampMillis() < millis) {
        break;
      }
      first = s;
    }
    return first == null ? null : fromSnapshot(table, first.snapshotId());
  }

  private Snapshot fromCommitSeq(Table table, Snapshot current, Long seq, long now) {
    if (seq < 0 || seq > now) {
      throw new IllegalArgumentException(
          "skade source on table "
              + identifier
              + ": startup"
              + " commit_seq "
              + seq
              + " is outside the catalog's log, which is at "
              + now
              + "; use a commit_seq from 0 to "
              + now);
    }
    Snapshot first = null; // the oldest snapshot committed after seq
    for (Snapshot s : ancestors(table, current)) {
      OptionalLong at = commitSeqOf(s);
      if (at.isPresent() && at.getAsLong() <= seq) {
        break;
      }
      first = s;
    }
    return first == null ? null : fromSnapshot(table, first.snapshotId());
  }

  /** {@code current} and its ancestors, newest first, up to the first one expired. */
  private static Iterable<Snapshot> ancestors(Table table, Snapshot current) {
    return current == null
        ? List.of()
        : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot);
  }

  /** The {@code commit_seq} of the commit that added {@code snapshot}, if the log has it. */
  private OptionalLong commitSeqOf(Snapshot snapshot) {
    return catalog.commitOf(identifier, snapshot.snapshotId()).stream()
        .mapToLong(CommitEvent::commitSeq)
        .findFirst();
  }

  private static String location(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }
}
