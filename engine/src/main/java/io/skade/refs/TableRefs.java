package io.skade.refs;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.iceberg.ManageSnapshots;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * A table's tags and branches, and the moves of its {@code main} branch (rollback, cherry-pick,
 * fast-forward), each one commit of the table's metadata through its catalog — so through skade's
 * commit path: it takes a {@code commit_seq} and reaches the commit feed.
 *
 * <p>Every call checks its arguments against the table as loaded before it changes anything, and
 * fails with an {@link IllegalArgumentException} naming the table, the ref or snapshot, what is
 * wrong and what to do: an unknown tag or branch, a name that exists, a snapshot the table no
 * longer has. Each returns the snapshot the ref it moved points at afterwards.
 */
public final class TableRefs {
  private final Table table;
  private final String name;

  /** The refs of {@code table}, named {@code name} in errors. */
  public TableRefs(Table table, String name) {
    this.table = table;
    this.name = name;
  }

  /** The names of {@code table}'s tags (or, {@code tags} false, branches), sorted: for errors. */
  public static List<String> names(Table table, boolean tags) {
    return new TreeMap<>(table.refs())
        .entrySet().stream()
            .filter(e -> e.getValue().isTag() == tags)
            .map(Map.Entry::getKey)
            .toList();
  }

  /** Tags {@code tag} at {@code snapshotId} (the current snapshot when null). */
  public long createTag(String tag, Long snapshotId) {
    requireNew(tag, "tag");
    long at = existing(snapshotId, "tag");
    commit(ops -> ops.createTag(tag, at));
    return at;
  }

  /** Removes tag {@code tag}; its snapshot stays until expiry takes it. */
  public long deleteTag(String tag) {
    long at = existing(tag, true).snapshotId();
    commit(ops -> ops.removeTag(tag));
    return at;
  }

  /** Creates branch {@code branch} at {@code snapshotId} (the current snapshot when null). */
  public long createBranch(String branch, Long snapshotId) {
    requireNew(branch, "branch");
    long at = existing(snapshotId, "branch from");
    commit(ops -> ops.createBranch(branch, at));
    return at;
  }

  /** Removes branch {@code branch}; {@code main} cannot be removed. */
  public long deleteBranch(String branch) {
    if (SnapshotRef.MAIN_BRANCH.equals(branch)) {
      throw invalid("branch 'main' cannot be deleted; it is the table's current state");
    }
    long at = existing(branch, false).snapshotId();
    commit(ops -> ops.removeBranch(branch));
    return at;
  }

  /**
   * Moves branch {@code branch} forward to the head of branch {@code to}, which must descend from
   * it (no commit of {@code branch} is lost).
   */
  public long fastForward(String branch, String to) {
    long from = existing(branch, false).snapshotId();
    long target = existing(to, false).snapshotId();
    if (!SnapshotUtil.isAncestorOf(table, target, from)) {
      throw invalid(
          "branch '"
              + branch
              + "' (snapshot "
              + from
              + ") cannot be fast-forwarded to branch '"
              + to
              + "' (snapshot "
              + target
              + "): it is not an ancestor of it, so its own commits would be lost;"
              + " cherry-pick the commits of '"
              + to
              + "' instead");
    }
    commit(ops -> ops.fastForwardBranch(branch, to));
    return target;
  }

  /**
   * Sets {@code main} back to {@code snapshotId}, one of its ancestors: the snapshots after it
   * leave the table's history (expiry may then remove them).
   */
  public long rollbackTo(long snapshotId) {
    Snapshot current = table.currentSnapshot();
    long at = existing(snapshotId, "roll back to");
    if (current == null || !SnapshotUtil.isAncestorOf(table, current.snapshotId(), at)) {
      throw invalid(
          "snapshot "
              + at
              + " is not in the history of the current snapshot "
              + (current == null ? "(none)" : current.snapshotId())
              + ", so there is nothing to roll back to; choose one of its ancestors (see the"
              + " table's $history)");
    }
    commit(ops -> ops.rollbackTo(at));
    return at;
  }

  /** Sets {@code main} back to the snapshot that was current at {@code epochMillis}. */
  public long rollbackToTime(long epochMillis) {
    long at;
    try {
      at = SnapshotUtil.snapshotIdAsOfTime(table, epochMillis);
    } catch (IllegalArgumentException none) {
      Snapshot oldest = SnapshotUtil.oldestAncestor(table);
      throw invalid(
          "the table had no snapshot at "
              + java.time.Instant.ofEpochMilli(epochMillis)
              + (oldest == null
                  ? "; it has none yet"
                  : "; its oldest is from "
                      + java.time.Instant.ofEpochMilli(oldest.timestampMillis())
                      + ": choose a later time"));
    }
    return rollbackTo(at);
  }

  /**
   * Applies the changes of {@code snapshotId} (of another branch, or rolled back) onto {@code
   * main}, as Iceberg's cherry-pick does: appends and dynamic overwrites are applied again, a
   * snapshot whose parent is the current one is fast-forwarded to.
   */
  public long cherrypick(long snapshotId) {
    long picked = existing(snapshotId, "cherry-pick");
    commit(ops -> ops.cherrypick(picked));
    return table.currentSnapshot().snapshotId();
  }

  private void commit(Consumer<ManageSnapshots> change) {
    ManageSnapshots ops = table.manageSnapshots();
    change.accept(ops);
    try {
      ops.commit();
    } catch (ValidationException refused) {
      throw invalid(refused.getMessage());
    }
    table.refresh();
  }

  private void requireNew(String ref, String kind) {
    if (ref == null || ref.isBlank()) {
      throw invalid("a " + kind + " needs a name, not '" + ref + "'");
    }
    SnapshotRef existing = table.refs().get(ref);
    if (existing != null) {
      throw invalid(
          (existing.isTag() ? "tag '" : "branch '")
              + ref
              + "' already exists at snapshot "
              + existing.snapshotId()
              + "; delete it first or choose another name");
    }
  }

  /** The ref {@code ref}, which must be a tag ({@code tag}) or a branch; a clear error if not. */
  private SnapshotRef existing(String ref, boolean tag) {
    SnapshotRef found = table.refs().get(ref);
    if (found == null || found.isTag() != tag) {
      String kind = tag ? "tag" : "branch";
      List<String> known = names(table, tag);
      throw invalid(
          "no "
              + kind
              + " '"
              + ref
              + "'"
              + (found == null ? "" : " (it is a " + (tag ? "branch" : "tag") + ")")
              + "; its "
              + kind
              + "s: "
              + (known.isEmpty() ? "none" : known));
    }
    return found;
  }

  /** {@code snapshotId} (or the current snapshot when null), which the table must still have. */
  private long existing(Long snapshotId, String purpose) {
    if (snapshotId == null) {
      Snapshot current = table.currentSnapshot();
      if (current == null) {
        throw invalid("it has no snapshot yet to " + purpose + "; commit to it first");
      }
      return current.snapshotId();
    }
    if (table.snapshot(snapshotId) == null) {
      Snapshot oldest = SnapshotUtil.oldestAncestor(table);
      throw invalid(
          "snapshot "
              + snapshotId
              + " is not one of its snapshots (expired, or never one of this table's)"
              + (oldest == null
                  ? ""
                  : "; its oldest in the current history is " + oldest.snapshotId())
              + "; see the table's $snapshots");
    }
    return snapshotId;
  }

  private IllegalArgumentException invalid(String what) {
    return new IllegalArgumentException("table " + name + ": " + what);
  }
}
