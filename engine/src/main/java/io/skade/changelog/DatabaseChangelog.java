package io.skade.changelog;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitOperation;
import io.skade.scan.MetadataCache;
import io.skade.scan.RecordDecoder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The changes of several tables of one catalog in the catalog's commit order: each commit of a
 * selected table, in {@code commit_seq} order, and the changes it made to the table's rows.
 *
 * <p>The commit log says all that is needed, commit by commit: a commit's table is the one its
 * event names (a table created or renamed into the selection later is followed from then on); its
 * changes take the table's rows as the metadata before it left them to the rows its own metadata
 * holds ({@link CommitEvent#previousMetadataLocation()} to {@link CommitEvent#metadataLocation()},
 * their {@code main} snapshots). So any commit's changes can be read on their own, in any process,
 * and a reader that applies them in commit order holds, after each commit, every selected table as
 * that commit left it. Rows come in the schema of their commit: a schema change shows in the rows
 * of the commits after it.
 *
 * <p>A multi-table commit is never split: a page of commits ends after a transaction's last commit.
 * A commit that moved a table's head off its history (a rollback, a branch made current) changes
 * its rows in one step ({@link ChangelogReader#changesBetween}).
 */
public final class DatabaseChangelog {
  private final CatalogConnection catalog;
  private final TableSelection tables;
  private final ChangelogOptions options;
  private FileIO io;

  /**
   * @param catalog where the commit log and the tables are
   * @param tables the tables followed
   * @param options how each commit's changes are read (a filter or projection applies to every
   *     table, so it should name only columns they all have)
   */
  public DatabaseChangelog(
      CatalogConnection catalog, TableSelection tables, ChangelogOptions options) {
    this.catalog = catalog;
    this.tables = tables;
    this.options = options;
  }

  /** A commit of a selected table, the table named as at that commit. */
  public record TableCommit(TableIdentifier table, CommitEvent commit) {}

  /**
   * Commits of the log after {@code commitSeq}: those of the selected tables, and how far the log
   * was read ({@code lastCommitSeq}, the cursor of the next page; {@code commitSeq} when the log
   * holds nothing newer).
   */
  public record Page(List<TableCommit> commits, long lastCommitSeq) {}

  /**
   * The next page of the log after {@code commitSeq}: about {@code limit} commits, more when the
   * last of them is part of a multi-table commit whose other commits come after it, so that a
   * transaction is never split between pages.
   */
  public Page commitsAfter(long commitSeq, int limit) {
    List<CommitEvent> read = new ArrayList<>(catalog.feed().commitsSince(commitSeq, limit));
    while (!read.isEmpty()) {
      CommitEvent last = read.get(read.size() - 1);
      long transactionEnd = last.transactionSeq() + last.transactionSize() - 1;
      if (!last.inTransaction() || transactionEnd <= last.commitSeq()) {
        break;
      }
      read.addAll(
          catalog.feed().commitsSince(last.commitSeq(), (int) (transactionEnd - last.commitSeq())));
    }
    List<TableCommit> selected = new ArrayList<>();
    for (CommitEvent event : read) {
      TableIdentifier table = catalog.feed().commitTableIdentifier(event.tableKey());
      if (tables.matches(table)) {
        selected.add(new TableCommit(table, event));
      }
    }
    long last = read.isEmpty() ? commitSeq : read.get(read.size() - 1).commitSeq();
    return new Page(selected, last);
  }

  /**
   * The changes {@code commit} made to its table's rows, in order; none for a commit that left them
   * as they were (a create, a rename, a drop, a schema or property change). The caller closes it.
   *
   * @throws UnsupportedOperationException for a commit that removed the table's {@code main}
   *     branch, whose rows no snapshot holds any more
   */
  public CloseableIterator<ChangeRow> changes(TableCommit commit) {
    return changes(io(commit), options, null, commit);
  }

  /**
   * As {@link #changes(TableCommit)}, read with {@code io} alone: what a reader in another process,
   * which holds no catalog, does with a commit the log named.
   *
   * @param decoder how data files are decoded into rows, or null for Iceberg's generic records
   */
  public static CloseableIterator<ChangeRow> changes(
      FileIO io, ChangelogOptions options, RecordDecoder decoder, TableCommit commit) {
    CommitEvent event = commit.commit();
    if (!event.operation().leavesPointer() || event.operation() == CommitOperation.RENAME_TO) {
      return CloseableIterator.empty();
    }
    Table after = table(io, commit, event.metadataLocation());
    Long to = main(after);
    Long from =
        event.previousMetadataLocation() == null
            ? null
            : main(table(io, commit, event.previousMetadataLocation()));
    if (Objects.equals(from, to)) {
      return CloseableIterator.empty();
    }
    if (to == null) {
      throw new UnsupportedOperationException(
          "commit "
              + event.commitSeq()
              + " removed the main branch of "
              + commit.table()
              + ", whose rows no snapshot holds any more; a changelog cannot say what it deleted");
    }
    ChangelogReader reader = new ChangelogReader(after, options, Map.of(), decoder);
    return from == null || SnapshotUtil.isAncestorOf(after, to, from)
        ? reader.changes(from, to)
        : reader.changesBetween(from, to);
  }

  /** The table as metadata file {@code location} describes it. */
  private static Table table(FileIO io, TableCommit commit, String location) {
    return MetadataCache.shared().table(location, io, commit.table().toString());
  }

  /** The catalog's FileIO, which its tables share: taken from the first table read. */
  private FileIO io(TableCommit commit) {
    if (io == null) {
      io = catalog.catalog().loadTable(commit.table()).io();
    }
    return io;
  }

  private static Long main(Table table) {
    SnapshotRef main = table.refs().get(SnapshotRef.MAIN_BRANCH);
    Snapshot head = main == null ? null : table.snapshot(main.snapshotId());
    return head == null ? null : head.snapshotId();
  }
}
