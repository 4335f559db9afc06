package io.skade.source.database.split;

import io.skade.catalog.CommitEvent;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * One step of a database changelog: the changes one commit of the catalog's log made to one table.
 * It is read whole by one reader, with the catalog's file IO alone: the commit names the metadata
 * files before and after it.
 *
 * @param tablePath the table's namespace levels and then its name, as at this commit
 * @param commit the commit, as the catalog's log holds it
 */
public record CommitSplit(List<String> tablePath, CommitEvent commit) implements SourceSplit {

  public CommitSplit {
    tablePath = List.copyOf(tablePath);
    Objects.requireNonNull(commit, "commit");
  }

  /** The split of {@code commit}. */
  public static CommitSplit of(TableCommit commit) {
    TableIdentifier table = commit.table();
    String[] path = new String[table.namespace().length() + 1];
    System.arraycopy(table.namespace().levels(), 0, path, 0, path.length - 1);
    path[path.length - 1] = table.name();
    return new CommitSplit(List.of(path), commit.commit());
  }

  /** The commit as the engine reads it. */
  public TableCommit tableCommit() {
    return new TableCommit(TableIdentifier.of(tablePath.toArray(String[]::new)), commit);
  }

  /** The commit's position in the catalog's log. */
  public long commitSeq() {
    return commit.commitSeq();
  }

  /**
   * The first {@code commit_seq} of the atomic commit this commit belongs to: its own for a commit
   * of one table.
   */
  public long transactionStart() {
    return commit.inTransaction() ? commit.transactionSeq() : commit.commitSeq();
  }

  /** Unique per commit and table: a commit is one table's pointer change. */
  @Override
  public String splitId() {
    return commit.commitSeq() + "@" + commit.tableKey();
  }
}
