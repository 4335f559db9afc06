package io.skade.server;

import io.skade.catalog.ReplicationGate;
import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The routes over one open catalog, as a single server or a group's leader serves them: the Iceberg
 * REST protocol, the commit feed, consumers, locks, metadata files and lineage. Opening it opens
 * the catalog as its owner; closing it answers parked long-polls and closes the catalog.
 */
final class CatalogRoutes implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CatalogRoutes.class);

  private final SkadeCatalog catalog;
  private final CommitFeedRoutes feed;
  private final ConsumerRoutes consumers;
  private final LockRoutes locks;
  private final MetadataRoutes metadata;
  private final LineageRoutes lineage;
  private final IcebergRoutes iceberg;

  /** Forgets idempotency keys older than their lifetime, every few minutes. */
  private final ScheduledExecutorService maintenance =
      Executors.newSingleThreadScheduledExecutor(
          CommitFeedRoutes.daemon("skade-server-maintenance"));

  private CatalogRoutes(
      SkadeCatalog catalog, ServerMetrics metrics, Map<String, String> properties) {
    this.catalog = catalog;
    this.feed = new CommitFeedRoutes(catalog, metrics);
    this.consumers = new ConsumerRoutes(catalog);
    this.locks = new LockRoutes(catalog);
    this.metadata = new MetadataRoutes(catalog);
    this.lineage = new LineageRoutes(catalog);
    this.iceberg = new IcebergRoutes(catalog, metrics, properties);
    maintenance.scheduleWithFixedDelay(this::expireIdempotencyKeys, 0, 5, TimeUnit.MINUTES);
  }

  /**
   * Opens the catalog of {@code settings} as its owner and its routes.
   *
   * @param create whether a missing catalog may be created
   * @param gate the replication gate of a group's leader, set before anything is committed, or null
   *     for a single server
   * @throws io.skade.catalog.CatalogLockedException when another process owns the catalog
   */
  static CatalogRoutes open(
      SkadeServer.Settings settings, ServerMetrics metrics, boolean create, ReplicationGate gate) {
    Map<String, String> properties = new HashMap<>(settings.catalogProperties());
    properties.put("warehouse", settings.warehouse());
    if (settings.catalogPath() != null) {
      properties.put(SkadeCatalog.CATALOG_PATH, settings.catalogPath().toString());
    }
    properties.remove(SkadeCatalog.CATALOG_ACCESS); // the server is the owner, nothing else
    if (!create) {
      properties.put(SkadeCatalog.CREATE_IF_MISSING, "false");
    }
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("skade", properties);
    try {
      if (gate != null) {
        catalog.replicateTo(gate); // before the routes' first commit (their key expiry among them)
      }
      return new CatalogRoutes(catalog, metrics, settings.catalogProperties());
    } catch (RuntimeException | Error e) {
      try {
        catalog.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  SkadeCatalog catalog() {
    return catalog;
  }

  /** Handles {@code exchange} when it is one of the catalog's routes; false otherwise. */
  boolean handle(Exchange exchange) throws Exception {
    return feed.handle(exchange)
        || consumers.handle(exchange)
        || locks.handle(exchange)
        || metadata.handle(exchange)
        || lineage.handle(exchange)
        || iceberg.handle(exchange);
  }

  private void expireIdempotencyKeys() {
    try {
      catalog.expireIdempotencyKeys(Instant.now().minus(IcebergRoutes.IDEMPOTENCY_LIFETIME));
    } catch (RuntimeException e) {
      LOG.warn("skade server: forgetting expired idempotency keys failed; trying again later", e);
    }
  }

  /** Answers parked long-polls now, so that a graceful stop need not wait for them. */
  void release() {
    feed.release();
  }

  @Override
  public void close() {
    maintenance.shutdownNow();
    feed.close();
    try {
      catalog.close();
    } catch (IOException e) {
      throw new UncheckedIOException("closing the catalog at " + catalog.catalogPath(), e);
    }
  }
}
