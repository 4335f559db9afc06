package io.skade.catalog;

import java.nio.file.Path;
import java.util.List;

/**
 * The replication log of a catalog's store, as a server group uses it: the leader's catalog writes
 * each group commit into it while a {@link ReplicationGate} is set ({@link
 * SkadeCatalog#replicateTo}) and serves it to standbys; a standby's {@link CatalogReplica} applies
 * the leader's batches and serves its own log to a new leader that must catch up. Batches are
 * numbered gaplessly from 1 and stamped with their leader's epoch: two logs with the same epoch at
 * the same number hold the same batches up to there.
 */
public final class CatalogReplication {
  private final CatalogStore store;

  CatalogReplication(CatalogStore store) {
    this.store = store;
  }

  /** The last batch in the log (0 for none). */
  public long lastSeq() {
    return store.replicationLog().lastSeq();
  }

  /**
   * The last batch the log serves: {@link #lastSeq}, or on a leader one staged whose synced write
   * is still under way (a standby may hold it first).
   */
  public long stagedSeq() {
    return store.replicationLog().stagedSeq();
  }

  /** The oldest batch the log still holds; {@code lastSeq() + 1} when it holds none. */
  public long firstSeq() {
    return store.replicationRead(() -> store.replicationLog().firstSeq());
  }

  /** The epoch of batch {@code seq}, or -1 when the log does not hold it. */
  public long epochAt(long seq) {
    return store.replicationRead(() -> store.replicationLog().epochAt(seq));
  }

  /**
   * The batches after {@code after}, oldest first: at most {@code maxBatches}, and no more than
   * {@code maxBytes} of batch data unless the first alone is larger.
   */
  public List<ReplicatedBatch> since(long after, int maxBatches, long maxBytes) {
    return store.replicationRead(() -> store.replicationLog().since(after, maxBatches, maxBytes));
  }

  /**
   * Writes a consistent copy of the whole store (its state and its log) into {@code dir}, which
   * must not exist: what a standby with no usable log installs.
   */
  public void checkpoint(Path dir) {
    store.checkpoint(dir);
  }

  /** The catalog's newest {@code commitSeq} in this store. */
  public long commitSeq() {
    return store.commitSeq();
  }
}
