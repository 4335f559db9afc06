package io.skade.catalog;

/**
 * The catalog directory is owned by another process (or, in this one, by a copy of skade that does
 * not share its stores with this one). One process owns a skade catalog; others may follow its
 * commit log read-only.
 */
public class CatalogLockedException extends RuntimeException {
  private final boolean thisProcess;

  CatalogLockedException(String path, boolean thisProcess, Throwable cause) {
    super(
        thisProcess
            ? "skade catalog at "
                + path
                + " is already open in this process, by a copy of skade"
                + " loaded by another class loader: the catalogs of one JVM share a directory's store"
                + " only within one copy of skade's classes. Load skade once (e.g. put it in Flink's"
                + " lib/ rather than in each job's jar), or close the other copy's catalog first"
            : "skade catalog at "
                + path
                + " is held by another process (its RocksDB LOCK is"
                + " taken): only one process may own a catalog directory. Stop the other process,"
                + " or open this one as a read-only follower with catalog.access=follower",
        cause);
    this.thisProcess = thisProcess;
  }

  /** Whether another process owns the directory (so this one may follow it read-only). */
  public boolean heldByAnotherProcess() {
    return !thisProcess;
  }
}
