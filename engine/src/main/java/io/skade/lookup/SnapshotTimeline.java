package io.skade.lookup;

import io.skade.catalog.CommitEvent;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongFunction;
import org.apache.iceberg.HistoryEntry;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;

/**
 * When each snapshot of a table became its current one, as the catalog stamped the commits: what an
 * as-of lookup needs to answer "the rows as they were at time T" with the snapshot that was current
 * then (the last one made current at or before T).
 *
 * <p>It is read from the table's snapshot log. A snapshot that became current in the commit that
 * added it (the log's entry then carries the snapshot's own timestamp) takes that commit's stamp
 * from the catalog's commit log, the same time a change of that commit carries as {@code
 * commit_time}; a head moved to a snapshot that already existed (a rollback, a branch made current)
 * takes the snapshot log's time, and so does history the catalog did not commit (a registered
 * table's). Times never go back along the log.
 *
 * <p>A table whose log starts at its first snapshot holds its whole history: before that it had no
 * rows. Once older snapshots were expired, the log starts later and a time before it is outside the
 * retained history; so is the span of an entry whose snapshot is gone.
 */
public final class SnapshotTimeline {
  /**
   * One span of the table's history: from {@code fromMicros}, {@code snapshotId} was current
   * ({@code retained}: the table still holds it), after the snapshot log's entry {@code entry}.
   */
  private record Span(long fromMicros, long snapshotId, boolean retained, LogEntry entry) {}

  /** An entry of the snapshot log: what a timeline of a later table version reuses stamps by. */
  private record LogEntry(long millis, long snapshotId) {}

  private final String table;
  private final List<Span> spans;

  /** Whether the history reaches back to the table's first snapshot. */
  private final boolean complete;

  private SnapshotTimeline(String table, List<Span> spans, boolean complete) {
    this.table = table;
    this.spans = spans;
    this.complete = complete;
  }

  /**
   * The timeline of {@code table}, a version of the table {@code name}s, stamps of commits taken
   * from {@code commits} (the commit that added a snapshot, by its id; empty when the catalog did
   * not record one) or, for the log entries {@code previous} already stamped, from there.
   */
  public static SnapshotTimeline of(
      String name,
      Table table,
      LongFunction<Optional<CommitEvent>> commits,
      SnapshotTimeline previous) {
    Map<LogEntry, Long> known = new HashMap<>();
    if (previous != null) {
      for (Span span : previous.spans) {
        known.put(span.entry(), span.fromMicros());
      }
    }
    List<HistoryEntry> log = table.history();
    List<Span> spans = new ArrayList<>(log.size());
    long last = Long.MIN_VALUE;
    for (HistoryEntry entry : log) {
      Snapshot snapshot = table.snapshot(entry.snapshotId());
      LogEntry logged = new LogEntry(entry.timestampMillis(), entry.snapshotId());
      Long stamp = known.get(logged);
      if (stamp == null) {
        stamp = entry.timestampMillis() * 1000;
        if (snapshot != null && snapshot.timestampMillis() == entry.timestampMillis()) {
          // made current by the commit that added it: the catalog's stamp of that commit
          Optional<CommitEvent> commit = commits.apply(entry.snapshotId());
          if (commit.isPresent()) {
            stamp = commit.get().tsMicros();
          }
        }
      }
      last = Math.max(last, stamp);
      spans.add(new Span(last, entry.snapshotId(), snapshot != null, logged));
    }
    boolean complete;
    if (spans.isEmpty()) {
      complete = !table.snapshots().iterator().hasNext();
    } else {
      Snapshot first = table.snapshot(spans.get(0).snapshotId());
      complete = first != null && first.parentId() == null;
    }
    return new SnapshotTimeline(name, List.copyOf(spans), complete);
  }

  /**
   * The snapshot that was current at {@code micros} (microseconds since the epoch): the last one
   * made current at or before it; empty when the table had no snapshot yet.
   *
   * @throws HistoryNotRetainedException when that time lies outside the history the table still
   *     holds
   */
  public Optional<Long> snapshotAt(long micros) {
    int low = 0;
    int high = spans.size() - 1;
    int found = -1;
    while (low <= high) {
      int mid = (low + high) >>> 1;
      if (spans.get(mid).fromMicros() <= micros) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (found < 0) {
      if (complete) {
        return Optional.empty();
      }
      throw new HistoryNotRetainedException(
          "table "
              + table
              + " does not hold its history as of "
              + time(micros)
              + ": its oldest retained snapshot was made current at "
              + time(spans.get(0).fromMicros())
              + "; older snapshots were expired. Keep them with 'lookup.as-of.retention' (which"
              + " holds them from expiry), or probe times within the retained history");
    }
    Span span = spans.get(found);
    if (!span.retained()) {
      throw new HistoryNotRetainedException(
          "table "
              + table
              + " does not hold its history as of "
              + time(micros)
              + ": snapshot "
              + span.snapshotId()
              + ", current from "
              + time(span.fromMicros())
              + ", was expired. Keep snapshots with 'lookup.as-of.retention' (which holds them"
              + " from expiry), or probe times within the retained history");
    }
    return Optional.of(span.snapshotId());
  }

  /** The snapshot current at {@code micros}, or the oldest one retained when that time is older. */
  Optional<Long> heldFrom(long micros) {
    for (int i = spans.size() - 1; i >= 0; i--) {
      if (spans.get(i).fromMicros() <= micros && spans.get(i).retained()) {
        return Optional.of(spans.get(i).snapshotId());
      }
    }
    return spans.stream().filter(Span::retained).map(Span::snapshotId).findFirst();
  }

  /** A probe's time outside the history a table still holds: answering it would be a guess. */
  public static final class HistoryNotRetainedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public HistoryNotRetainedException(String message) {
      super(message);
    }
  }

  /** Microseconds since the epoch as an ISO instant, for messages. */
  static String time(long micros) {
    return Instant.EPOCH.plus(micros, ChronoUnit.MICROS).toString();
  }
}
