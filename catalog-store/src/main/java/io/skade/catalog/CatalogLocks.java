package io.skade.catalog;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The table locks of an embedded catalog: rows of the store's {@code meta} family, taken and
 * released through the one commit path ({@link Committer}), as a consumer's cursor is — no {@code
 * commitSeq}, no event. The committer runs one mutation at a time, so of two holders racing for one
 * lock exactly one gets it. {@link SkadeCatalog} is the {@link MaintenanceLocks} users see and
 * delegates here.
 */
final class CatalogLocks implements MaintenanceLocks {
  private static final Logger LOG = LoggerFactory.getLogger(CatalogLocks.class);

  private final SkadeCatalog catalog;

  CatalogLocks(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /**
   * {@inheritDoc}
   *
   * @throws UnsupportedOperationException in a read-only follower
   */
  @Override
  public boolean tryLock(TableIdentifier table, String name, String holder, Duration lease) {
    TableKeys.validate(table); // before the committer thread, which must not fail
    Objects.requireNonNull(holder, "holder");
    return catalog
        .committer()
        .submit(
            stage -> {
              Instant now = Instant.now();
              MaintenanceLock held = stage.lock(table, name);
              if (held != null) {
                if (held.holder().equals(holder)) {
                  return true;
                }
                if (!held.staleAt(now, lease)) {
                  return false;
                }
                LOG.warn(
                    "taking the {} lock of {} from {}, who took it at {} and never released it",
                    name,
                    table,
                    held.holder(),
                    held.since());
              }
              stage.putLock(table, name, new MaintenanceLock(table, name, holder, now));
              return true;
            });
  }

  @Override
  public Optional<MaintenanceLock> lock(TableIdentifier table, String name) {
    TableKeys.validate(table);
    catalog.store().catchUp();
    return Optional.ofNullable(catalog.store().lock(table, name));
  }

  /**
   * {@inheritDoc}
   *
   * @throws UnsupportedOperationException in a read-only follower
   */
  @Override
  public boolean unlock(TableIdentifier table, String name, String holder) {
    TableKeys.validate(table);
    return catalog
        .committer()
        .submit(
            stage -> {
              MaintenanceLock held = stage.lock(table, name);
              if (held == null || !held.holder().equals(holder)) {
                return false;
              }
              stage.putLock(table, name, null);
              return true;
            });
  }
}
