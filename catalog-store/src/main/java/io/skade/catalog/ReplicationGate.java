package io.skade.catalog;

/**
 * What a group's leader waits on before it acknowledges a commit: that enough standbys hold the
 * commit's batch durably. Set on the leader's catalog with {@link SkadeCatalog#replicateTo}; the
 * catalog then writes each group commit into its replication log (in the same synced batch), offers
 * it to the standbys before that write, and once it is durable locally waits here before it
 * completes the committers.
 */
public interface ReplicationGate {
  /** The leader's epoch, stamped on every batch it writes. */
  long epoch();

  /**
   * Batch {@code seq} is in the log and served to standbys while the leader's own synced write of
   * it is still under way, so that the standbys' writes overlap the leader's. It may yet fail on
   * the leader; the leader's catalog then takes no more commits, and the batch stays {@code seq} in
   * whichever log holds it (a later leader's epoch tells the two apart).
   */
  void offered(long seq);

  /**
   * Returns once enough standbys hold batch {@code seq} durably.
   *
   * @throws Exception when they cannot (the leader was deposed, or no standby answered in time):
   *     the commits of that batch are then of unknown outcome, and the catalog takes no more
   */
  void awaitReplicated(long seq) throws Exception;
}
