package io.skade.catalog;

import java.util.Objects;

/**
 * One synced group commit of a catalog as the leader of a server group ships it to its standbys:
 * the RocksDB write batch exactly as the leader wrote it (pointers, log rows, snapshot index,
 * idempotency keys, consumers, locks), numbered gaplessly and stamped with the leader's epoch.
 *
 * @param seq the batch's place in the replication log, from 1, gapless
 * @param epoch the epoch of the leader that wrote it
 * @param data the serialized write batch
 */
public record ReplicatedBatch(long seq, long epoch, byte[] data) {
  public ReplicatedBatch {
    Objects.requireNonNull(data, "data");
  }
}
