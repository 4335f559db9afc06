package io.skade.catalog;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A named lock of one table as the catalog stores it: who holds it and since when. Table
 * maintenance takes the table's {@link #MAINTENANCE} lock for each task, so two jobs (or a job and
 * a {@code CALL}) never compact, expire or clean one table at once.
 *
 * @param table the locked table
 * @param name which lock of the table
 * @param holder who holds it (a job's maintenance, a procedure call)
 * @param since when it was taken
 */
public record MaintenanceLock(TableIdentifier table, String name, String holder, Instant since) {
  /** The lock every maintenance task of a table takes. */
  public static final String MAINTENANCE = "maintenance";

  public MaintenanceLock {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(holder, "holder");
    Objects.requireNonNull(since, "since");
  }

  /** Whether the lock is older than {@code lease} at {@code now}: left by a holder that died. */
  public boolean staleAt(Instant now, Duration lease) {
    return since.plus(lease).isBefore(now);
  }
}
