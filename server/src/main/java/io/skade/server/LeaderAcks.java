package io.skade.server;

import io.skade.catalog.ReplicationGate;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A leader's count of what its standbys hold: each standby's fetch of the batches after {@code N}
 * says it holds every batch up to {@code N} durably. A commit is acknowledged once {@code acks}
 * standbys of the in-sync set hold its batch (fewer while the set is smaller). A standby that has
 * not caught up with the log's end for the replication timeout leaves the set, and one that catches
 * up joins it — each change written to ZooKeeper only if this leader's epoch is still the group's
 * ({@link IsrStore}). A deposed leader therefore cannot shrink the set to acknowledge alone: its
 * write fails, and its commits stay unacknowledged.
 */
final class LeaderAcks implements ReplicationGate {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderAcks.class);

  /** Where the in-sync set is kept; a write fails once another leader's epoch holds the group. */
  interface IsrStore {
    /** Writes {@code isr}; false when this leader's epoch is no longer the group's. */
    boolean write(Set<String> isr) throws Exception;
  }

  private final long epoch;
  private final int acks;
  private final long timeoutNanos;
  private final IsrStore store;
  private final Map<String, Long> acked = new HashMap<>();
  private final Map<String, Long> caughtUpAt = new HashMap<>();
  private Set<String> isr;
  private long lastOffered;
  private String deposed;

  LeaderAcks(
      long epoch, int acks, long timeoutNanos, Set<String> isr, long lastOffered, IsrStore store) {
    this.epoch = epoch;
    this.acks = acks;
    this.timeoutNanos = timeoutNanos;
    this.store = store;
    this.isr = new TreeSet<>(isr);
    this.lastOffered = lastOffered;
    long now = System.nanoTime();
    isr.forEach(member -> caughtUpAt.put(member, now));
  }

  @Override
  public long epoch() {
    return epoch;
  }

  /**
   * Standby {@code member} holds every batch up to {@code seq}; returns whether it has caught up
   * with the log's end and is not yet in sync (the caller then adds it with {@link #join}).
   */
  synchronized boolean acked(String member, long seq) {
    acked.merge(member, seq, Math::max);
    boolean caughtUp = seq >= lastOffered;
    if (caughtUp) {
      caughtUpAt.put(member, System.nanoTime());
    }
    notifyAll();
    return caughtUp && !isr.contains(member);
  }

  /** Adds a caught-up standby to the in-sync set. */
  void join(String member) throws Exception {
    Set<String> grown;
    synchronized (this) {
      if (isr.contains(member) || deposed != null) {
        return;
      }
      grown = new TreeSet<>(isr);
      grown.add(member);
    }
    change(grown);
  }

  /** Waits, for a standby's fetch, until a batch after {@code after} is offered or time is up. */
  synchronized void awaitBatchAfter(long after, long waitMillis) throws InterruptedException {
    long deadline = System.nanoTime() + waitMillis * 1_000_000;
    long left;
    while (lastOffered <= after && deposed == null && (left = deadline - System.nanoTime()) > 0) {
      wait(Math.max(1, left / 1_000_000));
    }
  }

  /** This leader was deposed: every wait ends, and no commit is acknowledged from now on. */
  synchronized void depose(String why) {
    if (deposed == null) {
      deposed = why;
    }
    notifyAll();
  }

  @Override
  public synchronized void offered(long seq) {
    lastOffered = Math.max(lastOffered, seq);
    notifyAll(); // standbys parked on a fetch
  }

  @Override
  public void awaitReplicated(long seq) throws Exception {
    while (true) {
      Set<String> shrunk;
      synchronized (this) {
        while (true) {
          if (deposed != null) {
            throw new IllegalStateException("this server no longer leads its group: " + deposed);
          }
          int holding = 0;
          for (String member : isr) {
            if (acked.getOrDefault(member, 0L) >= seq) {
              holding++;
            }
          }
          if (holding >= Math.min(acks, isr.size())) {
            return;
          }
          long now = System.nanoTime();
          shrunk = new TreeSet<>();
          long soonest = Long.MAX_VALUE;
          for (String member : isr) {
            long since = now - caughtUpAt.getOrDefault(member, now);
            if (acked.getOrDefault(member, 0L) < seq && since >= timeoutNanos) {
              continue; // behind for longer than the timeout: leaves the set
            }
            shrunk.add(member);
            soonest = Math.min(soonest, timeoutNanos - since);
          }
          if (shrunk.size() < isr.size()) {
            break;
          }
          wait(Math.max(1, Math.min(soonest, 50_000_000L) / 1_000_000));
        }
      }
      change(shrunk);
    }
  }

  /** Writes a changed in-sync set; a failed write means another leader holds the group. */
  private void change(Set<String> changed) throws Exception {
    if (!store.write(changed)) {
      depose("the group's epoch moved past " + epoch + " (another member leads it)");
      throw new IllegalStateException(
          "this server no longer leads its group: its epoch " + epoch + " was fenced");
    }
    synchronized (this) {
      if (changed.isEmpty() && !isr.isEmpty()) {
        LOG.warn(
            "skade group: no standby is in sync any more (epoch {}): commits are acknowledged"
                + " on this leader alone until one catches up",
            epoch);
      } else {
        LOG.info("skade group: in-sync standbys {} (epoch {})", changed, epoch);
      }
      isr = new TreeSet<>(changed);
      long now = System.nanoTime();
      changed.forEach(member -> caughtUpAt.putIfAbsent(member, now));
      notifyAll();
    }
  }
}
