package io.skade.catalog;

import java.time.Duration;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The catalog's table locks: in the owner process the catalog itself ({@link SkadeCatalog}, written
 * durably through its one commit path), from any other a skade server's lock routes ({@link
 * io.skade.catalog.remote.SkadeServerClient}). Taking a lock is atomic, so of two holders racing
 * for one lock exactly one gets it.
 *
 * <p>Only its holder releases a lock. One held longer than the lease a taker gives is taken as left
 * by a holder that died holding it (a job cancelled mid-task), and may be taken over.
 */
public interface MaintenanceLocks {

  /**
   * Takes the lock {@code name} of {@code table} for {@code holder} when no one holds it, or its
   * holder has held it longer than {@code lease}; returns whether {@code holder} holds it now (also
   * when it held it already, so a retry of a call whose answer was lost is safe).
   */
  boolean tryLock(TableIdentifier table, String name, String holder, Duration lease);

  /** The lock {@code name} of {@code table}, if someone holds it. */
  Optional<MaintenanceLock> lock(TableIdentifier table, String name);

  /**
   * Releases the lock {@code name} of {@code table} if {@code holder} holds it; returns whether.
   */
  boolean unlock(TableIdentifier table, String name, String holder);
}
