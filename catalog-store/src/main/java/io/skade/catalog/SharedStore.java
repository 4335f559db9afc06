package io.skade.catalog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One open catalog store of this JVM: the RocksDB store of one directory, its {@link Committer}
 * (and so its commit feed) and the {@link CatalogService}s started for it, shared by every {@link
 * SkadeCatalog} opened on that directory and counted by hold. The first catalog to open the
 * directory opens the store, each later one shares it, and the last to close closes it, or the
 * {@link SkadeRuntime} that holds the open stores does when it closes. Directories are told apart
 * by their real path.
 *
 * <p>The services run on a catalog instance of the store's own ({@link #serviceCatalog}), opened
 * with the first opener's name and properties and closed only with the store, so they keep working
 * whichever user instance closes first.
 *
 * <p>The {@link Setting}s that define the store must agree between its catalogs; see {@link
 * SkadeCatalog} for the list.
 */
final class SharedStore {
  private static final Logger LOG = LoggerFactory.getLogger(SharedStore.class);

  /**
   * The open stores of a {@link SkadeRuntime} by real directory; opens and the last close run under
   * its lock. Closed with the runtime: every store still open closes then, whoever holds it.
   */
  static final class Registry implements AutoCloseable {
    private final Map<Path, SharedStore> stores = new HashMap<>();
    private boolean closed; // guarded by this

    @Override
    public synchronized void close() {
      closed = true;
      RuntimeException failed = null;
      for (SharedStore open : List.copyOf(stores.values())) {
        open.closed = true;
        try {
          open.closeAll();
        } catch (RuntimeException e) {
          if (failed == null) {
            failed = e;
          } else {
            failed.addSuppressed(e);
          }
        }
      }
      stores.clear();
      if (failed != null) {
        throw failed;
      }
    }
  }

  /** The current runtime's open stores. */
  private static Registry registry() {
    return SkadeRuntime.get().component(Registry.class, Registry::new);
  }

  /**
   * One setting that defines a store: {@code shown} is how an error names it (the value as given,
   * or the default), {@code value} what is compared (a parsed number, a duration).
   */
  record Setting(String shown, Object value) {
    static Setting of(String value) {
      return new Setting(value, value);
    }
  }

  /** What a catalog asks of its store, from its properties, checked before anything opens. */
  record Spec(
      Path catalogPath,
      boolean follower,
      Path followerPath,
      int maxBatchSize,
      boolean createIfMissing,
      Map<String, Setting> settings) {}

  private final Registry registry;
  private final Path dir;
  private final Map<String, Setting> settings;
  private final CatalogStore store;
  private final Committer committer;
  private final Path scratchFollowerDir;

  /** What the store's services started, closed first, newest first. */
  private final Deque<AutoCloseable> services = new ArrayDeque<>();

  private SkadeCatalog serviceCatalog;
  private int holds; // guarded by registry
  private boolean closed; // guarded by registry

  private SharedStore(
      Registry registry,
      Path dir,
      Map<String, Setting> settings,
      CatalogStore store,
      Committer committer,
      Path scratchFollowerDir) {
    this.registry = registry;
    this.dir = dir;
    this.settings = settings;
    this.store = store;
    this.committer = committer;
    this.scratchFollowerDir = scratchFollowerDir;
  }

  /**
   * A hold on the store {@code spec} names, opened (with its services) when this JVM has none open
   * on that directory yet. Release it with {@link #release()}, once.
   *
   * @param name the catalog's name; a store opened now keeps it (thread names, its services)
   * @param properties the catalog's properties, handed to the services of a store opened now
   * @throws IllegalArgumentException when the store is open with other defining settings
   */
  static SharedStore acquire(
      String name, Spec spec, Map<String, String> properties, Object hadoopConf) {
    Path dir = realPath(spec.catalogPath());
    List<CatalogService> found = spec.follower() ? List.of() : services();
    Map<String, Setting> settings = new TreeMap<>(spec.settings());
    for (CatalogService service : found) {
      service.settings(properties).forEach((key, value) -> settings.put(key, Setting.of(value)));
    }
    while (true) {
      Registry registry = registry();
      synchronized (registry) {
        if (registry.closed) {
          continue; // the runtime closed meanwhile: open on the new one
        }
        SharedStore open = registry.stores.get(dir);
        if (open != null) {
          requireSame(dir, open.settings, settings);
          open.holds++;
          return open;
        }
        SharedStore opened =
            open(registry, dir, name, spec, Map.copyOf(settings), properties, hadoopConf, found);
        opened.holds = 1;
        registry.stores.put(dir, opened);
        return opened;
      }
    }
  }

  /** How many catalogs of this JVM hold the store of {@code catalogPath}; 0 when it is closed. */
  static int holds(Path catalogPath) {
    Registry registry = registry();
    synchronized (registry) {
      SharedStore open = registry.stores.get(realPath(catalogPath));
      return open == null ? 0 : open.holds;
    }
  }

  /** Whether this JVM has the store of {@code catalogPath} open as a read-only follower. */
  static boolean openAsFollower(Path catalogPath) {
    Registry registry = registry();
    synchronized (registry) {
      SharedStore open = registry.stores.get(realPath(catalogPath));
      return open != null && open.committer == null;
    }
  }

  private static List<CatalogService> services() {
    List<CatalogService> services = new ArrayList<>();
    ServiceLoader.load(CatalogService.class, SkadeCatalog.class.getClassLoader())
        .forEach(services::add);
    return services;
  }

  private static SharedStore open(
      Registry registry,
      Path dir,
      String name,
      Spec spec,
      Map<String, Setting> settings,
      Map<String, String> properties,
      Object hadoopConf,
      List<CatalogService> found) {
    Path scratch = null;
    CatalogStore store;
    try {
      if (spec.follower()) {
        Path followerDir = spec.followerPath();
        if (followerDir == null) {
          scratch = Files.createTempDirectory("skade-follower-");
          followerDir = scratch;
        }
        store = CatalogStore.openFollower(spec.catalogPath(), followerDir);
      } else {
        store = CatalogStore.openOwner(spec.catalogPath(), spec.createIfMissing());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a scratch directory for a follower", e);
    } catch (RuntimeException e) {
      deleteScratch(scratch);
      throw e;
    }
    Committer committer = spec.follower() ? null : new Committer(store, name, spec.maxBatchSize());
    SharedStore shared = new SharedStore(registry, dir, settings, store, committer, scratch);
    if (committer != null) {
      shared.startServices(name, properties, hadoopConf, found);
    }
    LOG.info(
        "skade catalog '{}' opened the store at {} as {} (commit_seq {})",
        name,
        dir,
        spec.follower() ? "follower" : "owner",
        store.commitSeq());
    return shared;
  }

  /** Starts the services on the store's own catalog; one failing closes the store again. */
  private void startServices(
      String name, Map<String, String> properties, Object hadoopConf, List<CatalogService> found) {
    try {
      if (found.isEmpty()) {
        return;
      }
      serviceCatalog = SkadeCatalog.attached(this, name, properties, hadoopConf);
      for (CatalogService service : found) {
        AutoCloseable started = service.start(serviceCatalog, properties);
        if (started != null) {
          services.push(started);
        }
      }
    } catch (RuntimeException | ServiceConfigurationError e) {
      try {
        closeAll();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
  }

  /**
   * Releases one hold; the last closes the services, the committer and the store. Nothing, once the
   * store's runtime closed it.
   */
  void release() {
    synchronized (registry) { // closed under the lock, so a new acquire never meets the closing one
      if (closed || --holds > 0) {
        return;
      }
      closed = true;
      registry.stores.remove(dir);
      closeAll();
    }
  }

  private void closeAll() {
    while (!services.isEmpty()) {
      AutoCloseable service = services.pop();
      try {
        service.close();
      } catch (Exception e) {
        LOG.warn("skade catalog store at {}: closing {} failed", dir, service, e);
      }
    }
    try {
      if (serviceCatalog != null) {
        serviceCatalog.closeAttached();
      }
      if (committer != null) {
        committer.close();
      }
    } finally {
      store.close();
      deleteScratch(scratchFollowerDir);
    }
  }

  CatalogStore store() {
    return store;
  }

  /** The committer; null in a follower. */
  Committer committer() {
    return committer;
  }

  private static void requireSame(Path dir, Map<String, Setting> open, Map<String, Setting> asked) {
    List<String> differences = new ArrayList<>();
    TreeSet<String> keys = new TreeSet<>(open.keySet());
    keys.addAll(asked.keySet());
    for (String key : keys) {
      Setting was = open.get(key);
      Setting now = asked.get(key);
      if (was == null || now == null || !Objects.equals(was.value(), now.value())) {
        differences.add(key + " is " + quoted(was) + " there and " + quoted(now) + " here");
      }
    }
    if (!differences.isEmpty()) {
      throw new IllegalArgumentException(
          "skade catalog at "
              + dir
              + " is already open in this"
              + " JVM with other properties: "
              + String.join("; ", differences)
              + ". Every"
              + " catalog opened on one directory in a JVM shares one store, so the properties"
              + " that define the store must agree; align them, or use another catalog.path");
    }
  }

  private static String quoted(Setting setting) {
    return setting == null ? "unset" : "'" + setting.shown() + "'";
  }

  /** The real path of {@code path}, whose tail may not exist yet (a catalog not yet created). */
  static Path realPath(Path path) {
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

  private static void deleteScratch(Path scratch) {
    if (scratch == null) {
      return;
    }
    try (Stream<Path> paths = Files.walk(scratch)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      LOG.warn("could not remove follower scratch directory {}", scratch, e);
    }
  }
}
