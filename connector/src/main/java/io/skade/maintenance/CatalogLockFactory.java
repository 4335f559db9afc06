package io.skade.maintenance;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.SkadeCatalog;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.maintenance.api.TriggerLockFactory;

/**
 * The skade catalog as the lock of Iceberg's Flink table maintenance: the table's {@link
 * MaintenanceLock#MAINTENANCE} lock in the catalog ({@link io.skade.catalog.MaintenanceLocks}), so
 * the maintenance of two jobs, or a job and a {@code CALL}, never runs on one table at once; where
 * Iceberg's own lock holds only within one job.
 *
 * <p>The holder is fixed when the job is built, so a job restored after a failure still holds the
 * lock it took, and Iceberg's recovery releases it. A lock held longer than {@link #LEASE} is taken
 * as left by a job that was cancelled holding it, and may be taken over (a task running longer
 * would then at worst meet a second one, whose commit Iceberg's validation refuses).
 */
public final class CatalogLockFactory implements TriggerLockFactory {
  private static final long serialVersionUID = 1L;

  /** How long a lock holds before it may be taken as abandoned. */
  public static final Duration LEASE = Duration.ofHours(1);

  private final HashMap<String, String> catalogProperties;
  private final String table;
  private final String holder;
  private transient CatalogConnection connection;

  /** The lock of {@code table} of the catalog {@code catalogProperties} name, for {@code who}. */
  public CatalogLockFactory(
      Map<String, String> catalogProperties, TableIdentifier table, String who) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
    this.holder = who + " " + UUID.randomUUID();
  }

  /**
   * Runs {@code task} holding the maintenance lock of {@code table} as {@code who}, as a one-shot
   * maintenance call does.
   *
   * @throws IllegalStateException naming the holder, before {@code task} runs, when another holds
   *     the lock
   */
  public static <T> T whileHolding(
      Map<String, String> catalogProperties, TableIdentifier table, String who, Callable<T> task)
      throws Exception {
    CatalogLockFactory factory = new CatalogLockFactory(catalogProperties, table, who);
    factory.open();
    try {
      Lock lock = factory.createLock();
      if (!lock.tryLock()) {
        MaintenanceLock held =
            factory.connection.locks().lock(table, MaintenanceLock.MAINTENANCE).orElse(null);
        throw new IllegalStateException(
            "table "
                + table
                + " is being maintained by "
                + (held == null ? "another job" : held.holder() + " since " + held.since())
                + "; try again once it is done (a lock held over "
                + LEASE.toMinutes()
                + " min is taken as abandoned)");
      }
      try {
        return task.call();
      } finally {
        lock.unlock();
      }
    } finally {
      factory.close();
    }
  }

  @Override
  public void open() {
    if (connection == null) {
      // On a TaskManager: never creates a catalog (SkadeCatalog.inTask).
      connection = CatalogConnection.forWriting(SkadeCatalog.inTask(catalogProperties));
    }
  }

  @Override
  public Lock createLock() {
    return new CatalogLock(MaintenanceLock.MAINTENANCE);
  }

  /** Iceberg's recovery lock: the job's own, never shared with another. */
  @Override
  public Lock createRecoveryLock() {
    return new CatalogLock("recovery " + holder);
  }

  @Override
  public void close() {
    if (connection != null) {
      connection.close();
      connection = null;
    }
  }

  private final class CatalogLock implements Lock {
    private final String name;
    private final TableIdentifier id = TableIdentifier.parse(table);

    private CatalogLock(String name) {
      this.name = name;
    }

    @Override
    public boolean tryLock() {
      return connection.locks().tryLock(id, name, holder, LEASE);
    }

    @Override
    public boolean isHeld() {
      return connection
          .locks()
          .lock(id, name)
          .filter(lock -> !lock.staleAt(Instant.now(), LEASE))
          .isPresent();
    }

    @Override
    public void unlock() {
      connection.locks().unlock(id, name, holder);
    }

    @Override
    public String toString() {
      return "the " + name + " lock of " + table + " for " + holder;
    }
  }
}
