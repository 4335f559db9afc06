package io.skade.source.split;

import java.util.Objects;
import org.apache.flink.api.connector.source.SourceSplit;

/**
 * One changelog window of one table, {@code (fromSnapshotId, toSnapshotId]}, as a unit of work a
 * reader emits in full, in order. It is self-contained: a reader needs only the table's file IO
 * to read it, never the catalog, because it carries the metadata file of the window's end, which
 * lists every snapshot of the window.
 *
 * @param tableKey the catalog's key of the table (its cursor identity)
 * @param metadataLocation the table's metadata file at the window's end
 * @param fromSnapshotId the snapshot the window starts after, or {@link #BEFORE_FIRST} for the
 *     whole history up to {@code toSnapshotId} (a full read)
 * @param toSnapshotId the window's last snapshot
 * @param commitSeq the catalog's {@code commit_seq} of the window's last commit
 * @param emitted how many of the window's changes were already emitted (restore skips them)
 */
public record ChangelogSplit(String tableKey, String metadataLocation, long fromSnapshotId,
    long toSnapshotId, long commitSeq, long emitted) implements SourceSplit {

  /** {@link #fromSnapshotId} of a window that starts before the table's first snapshot. */
  public static final long BEFORE_FIRST = -1;

  public ChangelogSplit {
    Objects.requireNonNull(tableKey, "tableKey");
    Objects.requireNonNull(metadataLocation, "metadataLocation");
    if (emitted < 0) {
      throw new IllegalArgumentException("a split's emitted count is never negative, got "
          + emitted);
    }
  }

  /** Unique per table and window end: a window is planned once per commit it ends at. */
  @Override
  public String splitId() {
    return tableKey + '@' + commitSeq;
  }

  /** The window's start for {@code ChangelogReader}: null when it starts before the first. */
  public Long fromExclusive() {
    return fromSnapshotId == BEFORE_FIRST ? null : fromSnapshotId;
  }

  /** This split with {@code count} changes emitted. */
  public ChangelogSplit withEmitted(long count) {
    return new ChangelogSplit(tableKey, metadataLocation, fromSnapshotId, toSnapshotId, commitSeq,
        count);
  }
}
