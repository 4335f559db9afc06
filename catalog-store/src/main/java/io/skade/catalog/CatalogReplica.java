package io.skade.catalog;

import java.nio.file.Path;

/**
 * A standby's copy of a server group's catalog: the store opened as its only writer, with no
 * catalog on top (no committer, no commits of its own), applying the leader's batches in order. A
 * standby that becomes leader closes it and opens a {@link SkadeCatalog} on the same directory,
 * which reads every applied commit back from disk and continues the same {@code commitSeq}.
 */
public final class CatalogReplica implements AutoCloseable {
  private final CatalogStore store;
  private final CatalogReplication replication;

  private CatalogReplica(CatalogStore store) {
    this.store = store;
    this.replication = new CatalogReplication(store);
  }

  /**
   * Opens the catalog at {@code catalogPath}, which must exist (a standby starts from a checkpoint
   * of its leader's, never from nothing).
   *
   * @throws CatalogMissingException when there is no catalog there
   * @throws CatalogLockedException when a process has it open
   */
  public static CatalogReplica open(Path catalogPath) {
    return new CatalogReplica(CatalogStore.openOwner(catalogPath, false));
  }

  /** Its replication log. */
  public CatalogReplication replication() {
    return replication;
  }

  /**
   * Applies the leader's batch {@code batch}, durably, with its log row.
   *
   * @throws IllegalStateException when it is not the batch after {@link
   *     CatalogReplication#lastSeq()}
   */
  public void apply(ReplicatedBatch batch) {
    store.applyReplicated(batch);
  }

  @Override
  public void close() {
    store.close();
  }
}
