package io.skade.changelog;

import io.skade.scan.FileSlice;
import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;

/**
 * How a {@link ChangelogReader} reads a window.
 *
 * @param mode every intermediate change, or the net change of the window
 * @param beforeImage full old rows for deletes and update-befores, or only their keys
 * @param columns the columns to return (after collapsing, which needs the keys); null = all
 * @param filter rows to keep; a change is kept when its row matches (an update pair whose rows
 *     match on one side only becomes a delete or an insert). Column names match regardless of case.
 *     The filter also prunes files by partition: a data or delete file (or a whole manifest) whose
 *     partition Iceberg's inclusive projection of the filter rules out is never read; files of an
 *     unpartitioned spec always are. To read some partitions only, filter on the partition source
 *     columns, or on the partition transform itself: {@code Expressions.equal("region", "eu")} for
 *     an identity partition, {@code Expressions.in(Expressions.bucket("id", 8), 1, 5)} or {@code
 *     Expressions.equal(Expressions.bucket("id", 8), 3)} for {@code bucket(id, 8)}, and ORs of such
 *     predicates. A transform predicate prunes only files of a spec with that very transform (a
 *     {@code bucket(id, 8)} predicate prunes nothing under {@code bucket(id, 16)} or {@code
 *     identity(id)}); the row test still applies to the files kept
 * @param onMissingHistory what to do when the window's snapshots or files are gone
 * @param slice the data files read ({@link FileSlice}): the changes of the rows they hold, or held
 *     before; {@link FileSlice#ALL} by default
 */
public record ChangelogOptions(
    Mode mode,
    BeforeImage beforeImage,
    List<String> columns,
    Expression filter,
    OnMissingHistory onMissingHistory,
    FileSlice slice)
    implements Serializable {

  /** Per-snapshot (every change, commit order) or collapsed (the window's net change). */
  public enum Mode {
    PER_SNAPSHOT,
    COLLAPSED
  }

  /**
   * Full old rows, or identifier fields only. Key-only is cheaper: a file whose rows are deleted by
   * key or position is read for its key columns only. As old values are then not known, a row
   * upserted with unchanged values is an update pair, where full before-images drop it.
   */
  public enum BeforeImage {
    FULL,
    KEY_ONLY
  }

  /**
   * When a window cannot be read exactly because snapshots or files it needs were expired: {@link
   * #FAIL} (the default) with an error naming what is gone, or {@link #FULL_RELOAD}: every row at
   * the window's end as an {@code INSERT}, so a consumer keyed by the primary key (upsert
   * semantics) converges; rows deleted inside the window are then not retracted.
   */
  public enum OnMissingHistory {
    FAIL,
    FULL_RELOAD
  }

  public ChangelogOptions {
    Objects.requireNonNull(mode, "mode");
    Objects.requireNonNull(onMissingHistory, "onMissingHistory");
    Objects.requireNonNull(beforeImage, "beforeImage");
    columns = columns == null ? null : List.copyOf(columns);
    filter = filter == null ? Expressions.alwaysTrue() : filter;
    slice = slice == null ? FileSlice.ALL : slice;
  }

  /** Per-snapshot, full before-images, all columns, no filter. */
  public static ChangelogOptions defaults() {
    return new ChangelogOptions(
        Mode.PER_SNAPSHOT, BeforeImage.FULL, null, null, OnMissingHistory.FAIL, FileSlice.ALL);
  }

  public ChangelogOptions withMode(Mode newMode) {
    return new ChangelogOptions(newMode, beforeImage, columns, filter, onMissingHistory, slice);
  }

  public ChangelogOptions withBeforeImage(BeforeImage newBeforeImage) {
    return new ChangelogOptions(mode, newBeforeImage, columns, filter, onMissingHistory, slice);
  }

  public ChangelogOptions withColumns(List<String> newColumns) {
    return new ChangelogOptions(mode, beforeImage, newColumns, filter, onMissingHistory, slice);
  }

  public ChangelogOptions withFilter(Expression newFilter) {
    return new ChangelogOptions(mode, beforeImage, columns, newFilter, onMissingHistory, slice);
  }

  public ChangelogOptions withSlice(FileSlice newSlice) {
    return new ChangelogOptions(mode, beforeImage, columns, filter, onMissingHistory, newSlice);
  }

  public ChangelogOptions withOnMissingHistory(OnMissingHistory newOnMissingHistory) {
    return new ChangelogOptions(mode, beforeImage, columns, filter, newOnMissingHistory, slice);
  }
}
