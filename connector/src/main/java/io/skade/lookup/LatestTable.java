package io.skade.lookup;

import io.skade.catalog.SkadeCatalog;
import java.time.Duration;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A table kept at its latest committed version for lookups. In the JVM that owns the catalog a
 * commit is known the moment it is durable (the catalog's commit sequence is read from memory),
 * so a probe that starts after a commit was acknowledged sees it; a read-only follower checks
 * the log at most once per poll interval.
 */
public final class LatestTable {
  private final SkadeCatalog catalog;
  private final TableIdentifier identifier;
  private final long pollNanos;
  private volatile Table table;
  private volatile long seenSeq;
  private volatile long checkedNanos;

  public LatestTable(SkadeCatalog catalog, TableIdentifier identifier, Duration pollInterval) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.pollNanos = pollInterval.toNanos();
    this.seenSeq = catalog.commitSeq();
    this.table = catalog.loadTable(identifier);
    this.checkedNanos = System.nanoTime();
  }

  /** The table as of the latest commit this process knows of. */
  public Table table() {
    if (catalog.isFollower() && System.nanoTime() - checkedNanos < pollNanos) {
      return table;
    }
    long seq = catalog.commitSeq();
    if (seq != seenSeq) {
      synchronized (this) {
        if (seq != seenSeq) {
          table = catalog.loadTable(identifier);
          seenSeq = seq;
        }
      }
    }
    checkedNanos = System.nanoTime();
    return table;
  }
}
