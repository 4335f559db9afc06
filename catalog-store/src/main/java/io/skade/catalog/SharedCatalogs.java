package io.skade.catalog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One open {@link SkadeCatalog} per catalog directory in this JVM, shared by reference count.
 *
 * <p>RocksDB opens a directory once per process, so every component of a JVM that works on one
 * catalog (a source's enumerator and readers, sinks, lookups, the user's own code) acquires it
 * here: the first acquire opens it, later ones share it, and the last release closes it.
 * Directories are told apart by their real path, so two spellings of one directory share one
 * catalog. Every acquire of a directory must pass the same properties, apart from how {@code
 * catalog.path} is spelled and an unset {@code catalog.access} meaning {@code owner}; the catalog
 * keeps the name of its first acquire.
 *
 * <p>Close the {@link Handle}, never the shared catalog itself. A catalog opened directly ({@code
 * new SkadeCatalog()}) is not shared: opening its directory again fails with {@link
 * CatalogLockedException}, as before.
 */
public final class SharedCatalogs {
  private static final Logger LOG = LoggerFactory.getLogger(SharedCatalogs.class);
  private static final Map<Path, Shared> OPEN = new HashMap<>(); // guarded by itself

  private static final class Shared {
    final SkadeCatalog catalog;
    final Map<String, String> properties;
    int users;

    Shared(SkadeCatalog catalog, Map<String, String> properties) {
      this.catalog = catalog;
      this.properties = properties;
    }
  }

  private SharedCatalogs() {}

  /** As {@link #acquire(String, Map)}, for a catalog named {@code skade}. */
  public static Handle acquire(Map<String, String> properties) {
    return acquire("skade", properties);
  }

  /**
   * The shared catalog of the directory {@code properties} name, opened when no one in this JVM
   * holds it yet.
   *
   * @throws IllegalArgumentException when the directory is already shared with other properties
   */
  public static Handle acquire(String catalogName, Map<String, String> properties) {
    Map<String, String> effective = effective(catalogName, properties);
    Path dir = realPath(SkadeCatalog.catalogPath(catalogName, properties));
    synchronized (OPEN) {
      Shared shared = OPEN.get(dir);
      if (shared == null) {
        SkadeCatalog catalog = new SkadeCatalog();
        catalog.initialize(catalogName, properties);
        shared = new Shared(catalog, effective);
        OPEN.put(dir, shared);
      } else {
        requireSame(dir, shared.properties, effective);
      }
      shared.users++;
      return new Handle(dir, shared);
    }
  }

  /**
   * How many holds this JVM has on the shared catalog of the directory {@code properties} name;
   * 0 when it is not open. The last hold to go closes the catalog: an application that deletes
   * the directory afterwards (a test's temporary warehouse) waits for a finished job's
   * components, which release theirs shortly after the job ends.
   */
  public static int holds(Map<String, String> properties) {
    Path dir = realPath(SkadeCatalog.catalogPath("skade", properties));
    synchronized (OPEN) {
      Shared shared = OPEN.get(dir);
      return shared == null ? 0 : shared.users;
    }
  }

  /**
   * As {@link #acquire(Map)}, but when another process owns the directory and {@code properties}
   * do not ask for an access mode, the catalog is followed read-only instead: readers (sources,
   * lookups, planners) work on a follower, which learns of commits only by polling the log.
   */
  public static Handle acquireOrFollow(Map<String, String> properties) {
    try {
      return acquire(properties);
    } catch (CatalogLockedException e) {
      if (!e.heldByAnotherProcess() || properties.containsKey(SkadeCatalog.CATALOG_ACCESS)) {
        throw e;
      }
      LOG.info("skade catalog at {} is owned by another process; following it read-only",
          properties.getOrDefault(SkadeCatalog.CATALOG_PATH, properties.get("warehouse")));
      Map<String, String> follower = new HashMap<>(properties);
      follower.put(SkadeCatalog.CATALOG_ACCESS, "follower");
      return acquire(follower);
    }
  }

  private static void release(Path dir, Shared shared) {
    synchronized (OPEN) { // closed under the lock, so a new acquire never meets the closing one
      if (--shared.users > 0) {
        return;
      }
      OPEN.remove(dir);
      try {
        shared.catalog.close();
      } catch (IOException e) {
        throw new UncheckedIOException("closing the shared skade catalog at " + dir, e);
      }
    }
  }

  /** The properties that must agree between the acquires of one directory. */
  private static Map<String, String> effective(String catalogName, Map<String, String> props) {
    Map<String, String> effective = new TreeMap<>(props);
    effective.put("warehouse", SkadeCatalog.warehouse(catalogName, props));
    effective.putIfAbsent(SkadeCatalog.CATALOG_ACCESS, "owner");
    effective.remove(SkadeCatalog.CATALOG_PATH); // the directory itself is the key
    return effective;
  }

  private static void requireSame(Path dir, Map<String, String> open, Map<String, String> asked) {
    List<String> differences = new ArrayList<>();
    TreeSet<String> keys = new TreeSet<>(open.keySet());
    keys.addAll(asked.keySet());
    for (String key : keys) {
      String was = open.get(key);
      String now = asked.get(key);
      if (was == null || !was.equals(now)) {
        differences.add(key + " is " + quoted(was) + " there and " + quoted(now) + " here");
      }
    }
    if (!differences.isEmpty()) {
      throw new IllegalArgumentException("skade catalog at " + dir + " is already open in this"
          + " JVM with other properties: " + String.join("; ", differences) + ". Every"
          + " component sharing a catalog directory must pass the same catalog properties;"
          + " align them, or use another catalog.path");
    }
  }

  private static String quoted(String value) {
    return value == null ? "unset" : "'" + value + "'";
  }

  /** The real path of {@code path}, whose tail may not exist yet (a catalog not yet created). */
  private static Path realPath(Path path) {
    Path absolute = path.toAbsolutePath().normalize();
    Path existing = absolute;
    while (existing != null && !Files.exists(existing)) {
      existing = existing.getParent();
    }
    if (existing == null) {
      return absolute;
    }
    try {
      return existing.toRealPath().resolve(existing.relativize(absolute));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot resolve the catalog directory " + absolute, e);
    }
  }

  /** One user's hold on a shared catalog; closing it releases the hold (once). */
  public static final class Handle implements AutoCloseable {
    private final Path dir;
    private final Shared shared;
    private final AtomicBoolean released = new AtomicBoolean();

    private Handle(Path dir, Shared shared) {
      this.dir = dir;
      this.shared = shared;
    }

    /** The shared catalog; do not close it, close this handle. */
    public SkadeCatalog catalog() {
      if (released.get()) {
        throw new IllegalStateException("this handle on the shared skade catalog at " + dir
            + " was released; acquire a new one");
      }
      return shared.catalog;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        release(dir, shared);
      }
    }
  }
}
