package io.skade.source.split;

import io.skade.changelog.PlannedWindow;
import io.skade.scan.FileSlice;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Objects;
import org.apache.flink.api.connector.source.SourceSplit;

/**
 * One unit of work a reader emits in full and in order: the changelog of one table's window {@code
 * (fromSnapshotId, toSnapshotId]}, or, for a {@link #fullSnapshot} split, every row at {@code
 * toSnapshotId} as an insert. It is self-contained: a reader needs only the table's file IO to read
 * it, never the catalog, because it carries a metadata file that lists every snapshot it needs —
 * and, as planned, a {@link PlannedWindow}: that metadata cut down to the window's snapshots and
 * the data files its appends added, so that a reader of another process reads neither the metadata
 * file nor, for an append, any manifest.
 *
 * @param tableKey the catalog's key of the table (its cursor identity)
 * @param metadataLocation a metadata file of the table that holds the split's snapshots
 * @param fullSnapshot whether this split emits the rows at {@code toSnapshotId} as inserts instead
 *     of a window's changes
 * @param betweenStates whether the window is read as one step from the rows at {@code
 *     fromSnapshotId} to the rows at {@code toSnapshotId}, which need not be on one history: the
 *     changes of a commit that moved the table's head off the history a reader was on (a rollback,
 *     a branch made current)
 * @param fromSnapshotId the snapshot the window starts after, or {@link #BEFORE_FIRST} for the
 *     whole history up to {@code toSnapshotId}; unused by a full-snapshot split
 * @param toSnapshotId the window's last snapshot
 * @param commitSeq the catalog's {@code commit_seq} of the window's last commit
 * @param commitMicros the catalog's stamp of that commit, microseconds since the epoch: the time
 *     the split's changes carry, never behind an earlier commit's ({@link #UNKNOWN_TIME} when the
 *     log holds no such commit, as for a registered table's history: its changes then carry their
 *     snapshots' timestamps)
 * @param slice the data files this split covers: one slot of its table's ordering units; the slot,
 *     not the reader, is the split's identity, so a restore at another parallelism moves whole
 *     splits and never cuts one
 * @param emitted how many of the split's changes were already emitted (restore skips them)
 * @param plan the window as its planner planned it ({@link PlannedWindow#toBytes}), or null: then
 *     the reader reads {@code metadataLocation}
 */
public record ChangelogSplit(
    String tableKey,
    String metadataLocation,
    boolean fullSnapshot,
    boolean betweenStates,
    long fromSnapshotId,
    long toSnapshotId,
    long commitSeq,
    long commitMicros,
    FileSlice slice,
    long emitted,
    byte[] plan)
    implements SourceSplit, Serializable {

  /** {@link #fromSnapshotId} of a window that starts before the table's first snapshot. */
  public static final long BEFORE_FIRST = -1;

  /** {@link #commitMicros} of a split whose commit's stamp is not known. */
  public static final long UNKNOWN_TIME = Long.MIN_VALUE;

  /**
   * The order a slot's splits are read in: a window after the commit it ends at, a table's rows
   * before the windows after them.
   */
  public static final Comparator<ChangelogSplit> COMMIT_ORDER =
      Comparator.comparingLong(ChangelogSplit::commitSeq)
          .thenComparing(split -> !split.fullSnapshot());

  public ChangelogSplit {
    Objects.requireNonNull(tableKey, "tableKey");
    Objects.requireNonNull(metadataLocation, "metadataLocation");
    Objects.requireNonNull(slice, "slice");
    if (emitted < 0) {
      throw new IllegalArgumentException(
          "a split's emitted count is never negative, got " + emitted);
    }
  }

  /** The changelog window {@code (from, to]} of all rows, nothing emitted yet. */
  public static ChangelogSplit window(
      String tableKey, String metadataLocation, long from, long to, long commitSeq) {
    return window(tableKey, metadataLocation, false, from, to, commitSeq);
  }

  /**
   * The changes from the rows at {@code from} to the rows at {@code to}, in one step, whatever
   * history lies between (see {@link #betweenStates}), nothing emitted yet.
   */
  public static ChangelogSplit between(
      String tableKey, String metadataLocation, long from, long to, long commitSeq) {
    return window(tableKey, metadataLocation, true, from, to, commitSeq);
  }

  private static ChangelogSplit window(
      String tableKey,
      String metadataLocation,
      boolean betweenStates,
      long from,
      long to,
      long commitSeq) {
    return new ChangelogSplit(
        tableKey,
        metadataLocation,
        false,
        betweenStates,
        from,
        to,
        commitSeq,
        UNKNOWN_TIME,
        FileSlice.ALL,
        0,
        null);
  }

  /** Every row at {@code snapshotId} as an insert, nothing emitted yet. */
  public static ChangelogSplit snapshot(
      String tableKey, String metadataLocation, long snapshotId, long commitSeq) {
    return new ChangelogSplit(
        tableKey,
        metadataLocation,
        true,
        false,
        BEFORE_FIRST,
        snapshotId,
        commitSeq,
        UNKNOWN_TIME,
        FileSlice.ALL,
        0,
        null);
  }

  /**
   * Unique per table, commit and slot: a window is planned once, at the commit it ends at, and cut
   * into at most one split per slot of its table's units.
   */
  @Override
  public String splitId() {
    return tableKey + '@' + commitSeq + (fullSnapshot ? "/full" : "") + "/slot-" + slice.slot();
  }

  /** The window's start for {@code ChangelogReader}: null when it starts before the first. */
  public Long fromExclusive() {
    return fromSnapshotId == BEFORE_FIRST ? null : fromSnapshotId;
  }

  /** This split with its commit stamped {@code micros} ({@link #commitMicros}). */
  public ChangelogSplit withCommitMicros(long micros) {
    return with(micros, slice, emitted, plan);
  }

  /** This split restricted to the data files of {@code files}. */
  public ChangelogSplit withSlice(FileSlice files) {
    return with(commitMicros, files, emitted, plan);
  }

  /** This split with {@code count} changes emitted. */
  public ChangelogSplit withEmitted(long count) {
    return with(commitMicros, slice, count, plan);
  }

  /** This split carrying {@code planned} (null: none). */
  public ChangelogSplit withPlan(PlannedWindow planned) {
    return with(commitMicros, slice, emitted, planned == null ? null : planned.toBytes());
  }

  /** The window as planned, or null when the split carries none or this release cannot read it. */
  public PlannedWindow plannedWindow() {
    return plan == null ? null : PlannedWindow.fromBytes(plan);
  }

  private ChangelogSplit with(long micros, FileSlice files, long count, byte[] newPlan) {
    return new ChangelogSplit(
        tableKey,
        metadataLocation,
        fullSnapshot,
        betweenStates,
        fromSnapshotId,
        toSnapshotId,
        commitSeq,
        micros,
        files,
        count,
        newPlan);
  }

  // The plan is compared by content, like every other field.
  @Override
  public boolean equals(Object other) {
    return other instanceof ChangelogSplit that
        && tableKey.equals(that.tableKey)
        && metadataLocation.equals(that.metadataLocation)
        && fullSnapshot == that.fullSnapshot
        && betweenStates == that.betweenStates
        && fromSnapshotId == that.fromSnapshotId
        && toSnapshotId == that.toSnapshotId
        && commitSeq == that.commitSeq
        && commitMicros == that.commitMicros
        && slice.equals(that.slice)
        && emitted == that.emitted
        && Arrays.equals(plan, that.plan);
  }

  @Override
  public int hashCode() {
    return Objects.hash(splitId(), emitted);
  }

  @Override
  public String toString() {
    return "ChangelogSplit["
        + splitId()
        + (betweenStates ? ", between " : ", window (")
        + fromSnapshotId
        + ", "
        + toSnapshotId
        + (betweenStates ? ", " : "], ")
        + metadataLocation
        + ", emitted "
        + emitted
        + (plan == null ? "" : ", plan of " + plan.length + " bytes")
        + "]";
  }

  /**
   * The oldest snapshot this split still needs: its window's start (or, before the first snapshot,
   * none), or for a full-snapshot split the snapshot itself.
   */
  public long oldestSnapshotNeeded() {
    return fullSnapshot ? toSnapshotId : fromSnapshotId;
  }
}
