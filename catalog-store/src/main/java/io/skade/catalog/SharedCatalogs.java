package io.skade.catalog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds on catalogs for skade's own components, which open and release a catalog where a plain
 * {@code try}-with-resources does not fit (a source's enumerator, a lookup function, a sink's
 * committer), and for code written against it before sharing was transparent.
 *
 * <p>No one needs it to share a catalog: every {@link SkadeCatalog} opened on one directory in a
 * JVM shares one open store, however it was opened (see {@link SkadeCatalog}). A {@link Handle} is
 * one such catalog: {@link #acquire} opens one (sharing the store, or opening it), closing the
 * handle closes it, and the store closes with the last catalog that holds it. Properties that
 * define the store must agree with those of the catalogs already sharing it.
 */
public final class SharedCatalogs {
  private static final Logger LOG = LoggerFactory.getLogger(SharedCatalogs.class);

  private SharedCatalogs() {}

  /** As {@link #acquire(String, Map)}, for a catalog named {@code skade}. */
  public static Handle acquire(Map<String, String> properties) {
    return acquire("skade", properties);
  }

  /**
   * A catalog on the directory {@code properties} name, sharing its store when this JVM has it
   * open, opening it otherwise.
   *
   * @throws IllegalArgumentException when the store is open with other defining properties
   * @throws CatalogLockedException when another process owns the directory
   */
  public static Handle acquire(String catalogName, Map<String, String> properties) {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize(catalogName, properties);
    return new Handle(catalog);
  }

  /**
   * How many catalogs of this JVM hold the store of the directory {@code properties} name, however
   * they were opened; 0 when it is not open. The last to close closes the store: an application
   * that deletes the directory afterwards (a test's temporary warehouse) waits for a finished job's
   * components, which close theirs shortly after the job ends.
   */
  public static int holds(Map<String, String> properties) {
    return SharedStore.holds(CatalogConfig.catalogPath("skade", properties));
  }

  /**
   * As {@link #acquire(Map)}, but when another process owns the directory and {@code properties} do
   * not ask for an access mode, the catalog is followed read-only instead (sharing this JVM's
   * follower of it, if one is open): readers (sources, lookups, planners) work on a follower, which
   * learns of commits only by polling the log.
   */
  public static Handle acquireOrFollow(Map<String, String> properties) {
    boolean accessGiven = properties.containsKey(SkadeCatalog.CATALOG_ACCESS);
    if (!accessGiven
        && SharedStore.openAsFollower(CatalogConfig.catalogPath("skade", properties))) {
      return acquire(follower(properties));
    }
    try {
      return acquire(properties);
    } catch (CatalogLockedException e) {
      if (!e.heldByAnotherProcess() || accessGiven) {
        throw e;
      }
      LOG.info(
          "skade catalog at {} is owned by another process; following it read-only",
          properties.getOrDefault(SkadeCatalog.CATALOG_PATH, properties.get("warehouse")));
      return acquire(follower(properties));
    }
  }

  private static Map<String, String> follower(Map<String, String> properties) {
    Map<String, String> follower = new HashMap<>(properties);
    follower.put(SkadeCatalog.CATALOG_ACCESS, "follower");
    return follower;
  }

  /** One catalog, closed with the handle (once). */
  public static final class Handle implements AutoCloseable {
    private final SkadeCatalog catalog;
    private final AtomicBoolean released = new AtomicBoolean();

    private Handle(SkadeCatalog catalog) {
      this.catalog = catalog;
    }

    /** The handle's catalog; close the handle rather than the catalog. */
    public SkadeCatalog catalog() {
      if (released.get()) {
        throw new IllegalStateException(
            "this handle on the skade catalog at "
                + catalog.catalogPath()
                + " was released; acquire a new one");
      }
      return catalog;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        try {
          catalog.close();
        } catch (IOException e) {
          throw new UncheckedIOException(
              "closing the skade catalog at " + catalog.catalogPath(), e);
        }
      }
    }
  }
}
