package io.skade.catalog;

/**
 * The catalog directory is already owned by another process (or already open in this one). One
 * process owns a skade catalog; others may follow its commit log read-only.
 */
public class CatalogLockedException extends RuntimeException {
  private final boolean thisProcess;

  CatalogLockedException(String path, boolean thisProcess, Throwable cause) {
    super(thisProcess
        ? "skade catalog at " + path + " is already open in this process: only one process may"
            + " own a catalog directory, and it opens it once. Share the open SkadeCatalog"
            + " (SharedCatalogs.acquire hands every component of a JVM the same one), or close it"
            + " before opening the directory again"
        : "skade catalog at " + path + " is held by another process (its RocksDB LOCK is"
            + " taken): only one process may own a catalog directory. Stop the other process,"
            + " or open this one as a read-only follower with catalog.access=follower", cause);
    this.thisProcess = thisProcess;
  }

  /** Whether another process owns the directory (so this one may follow it read-only). */
  public boolean heldByAnotherProcess() {
    return !thisProcess;
  }
}
