package io.skade.catalog;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * skade's process-wide state: one runtime per class loader owns every registry, cache and executor
 * that the parts of one process share, and closes them together.
 *
 * <p>Each piece is shared because two parts of one process that cannot hand each other an object
 * must meet in it: Flink creates sources, lookup functions, sinks, catalogs and job listeners from
 * factories, each with only its options. Each holds only immutable entries or things opened and
 * closed by count, so none can answer with stale data. The runtime holds them as components, each
 * created on first use ({@link #component}), so the modules above the catalog store add theirs
 * without the store depending on them:
 *
 * <ul>
 *   <li>the open catalog stores, by directory ({@code SharedStore}): RocksDB opens a directory once
 *       per process, so every {@link SkadeCatalog} on one directory must share its store, or the
 *       second would fail or, worse, be a second catalog. Counted by hold; the last close closes
 *       it;
 *   <li>the table metadata just committed or read ({@link CommittedMetadata}): the committing
 *       catalog and the source, lookup or planner that loads the table next are different objects;
 *       a metadata file is never rewritten, so an entry never goes stale. 64 entries, least
 *       recently used out;
 *   <li>parsed metadata files, manifest lists and manifests ({@code io.skade.scan.MetadataCache}):
 *       every source reader, enumerator, lookup and lineage of a TaskManager reads the same
 *       immutable files, and one parse serves them all. About 1/16 of the heap (at most 256 MB), by
 *       estimated bytes, and one prefetch thread;
 *   <li>the lookup caches ({@code io.skade.lookup.LookupCaches}): the lookup functions of one
 *       TaskManager (and a delta join's two sides) probe the same files, and one bound in bytes
 *       keeps its memory predictable. 256 MB of metadata and 256 MB of pages, 1,024 open files;
 *       counted by user, emptied 30 s after the last releases it (a restarted job finds them
 *       filled);
 *   <li>the running lineage of the open stores ({@code io.skade.lineage.CatalogLineage}): Flink's
 *       job listener and lineage graph name tables by warehouse, and only a registry finds the
 *       catalog behind a name. An entry per open store with lineage, removed when it closes;
 *   <li>the submitted Flink jobs ({@code io.skade.lineage.FlinkJobs}): the job listener hears of a
 *       job, and the sink's commit, another object, must name it. 1,000 jobs, least recently used
 *       out;
 *   <li>the job listener's planned tables and servers ({@code
 *       io.skade.lineage.flink.SkadeJobListenerFactory}): the planner's table factory sees the
 *       tables, and the listener Flink creates later reports the job's runs. 10,000 entries each,
 *       and one thread reporting to servers.
 * </ul>
 *
 * <p>{@link #close} closes the components newest first: executors are shut down, open stores closed
 * (a catalog holding one finds it closed, and its own close then changes nothing). {@link #get}
 * afterwards starts a new runtime, as {@link #reset} does at once: a test that must start from
 * nothing resets instead of waiting for what earlier tests left open to drain.
 */
public final class SkadeRuntime implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeRuntime.class);

  /** How long {@link #shutDown} waits for an executor's threads to end. */
  private static final Duration EXECUTOR_WAIT = Duration.ofSeconds(5);

  private static final Object CURRENT_LOCK = new Object();

  /** This class loader's runtime; null until first used, and after it closed. */
  private static volatile SkadeRuntime current;

  /** The components by type, for lookups without a lock. */
  private final Map<Class<?>, Object> components = new ConcurrentHashMap<>();

  /** The components' types in creation order; guarded by this. */
  private final List<Class<?>> created = new ArrayList<>();

  private boolean closed; // guarded by this

  private SkadeRuntime() {}

  /** The runtime of this class loader, started on first use and again after a {@link #close}. */
  public static SkadeRuntime get() {
    SkadeRuntime runtime = current;
    if (runtime != null) {
      return runtime;
    }
    synchronized (CURRENT_LOCK) {
      if (current == null) {
        current = new SkadeRuntime();
      }
      return current;
    }
  }

  /**
   * Closes the current runtime, if there is one, and starts a fresh one, which anything using skade
   * from now on meets (also what the closing components do while they close). For tests: a catalog,
   * source or lookup still open on the old runtime finds its store closed.
   *
   * @return the fresh runtime
   */
  public static SkadeRuntime reset() {
    SkadeRuntime fresh = new SkadeRuntime();
    SkadeRuntime old;
    synchronized (CURRENT_LOCK) {
      old = current;
      current = fresh;
    }
    if (old != null) {
      old.close();
    }
    return fresh;
  }

  /**
   * This runtime's component of type {@code type}, made by {@code create} the first time it is
   * asked for. A component that is {@link AutoCloseable} is closed with the runtime; {@code create}
   * may ask for other components, which then close after it.
   *
   * @throws IllegalStateException when this runtime is closed
   */
  public <T> T component(Class<T> type, Supplier<? extends T> create) {
    Object found = components.get(type);
    if (found != null) {
      return type.cast(found);
    }
    synchronized (this) {
      requireOpen(type);
      found = components.get(type);
      if (found != null) {
        return type.cast(found);
      }
      T made =
          Objects.requireNonNull(
              create.get(), () -> "skade runtime: no " + type.getName() + " made");
      components.put(type, made);
      created.add(type);
      return made;
    }
  }

  /** The types of this runtime's components, oldest first. */
  public synchronized List<Class<?>> componentTypes() {
    return List.copyOf(created);
  }

  /** Whether this runtime is closed. */
  public synchronized boolean isClosed() {
    return closed;
  }

  /**
   * Closes every component, newest first, once; a later {@link #get} starts a new runtime. Each
   * component is closed even when one before it fails.
   *
   * @throws IllegalStateException after closing them all, when some failed (each one suppressed)
   */
  @Override
  public void close() {
    List<Object> closing = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      for (Class<?> type : created) {
        closing.add(components.get(type));
      }
      created.clear();
      components.clear();
    }
    synchronized (CURRENT_LOCK) {
      if (current == this) {
        current = null;
      }
    }
    IllegalStateException failed = null;
    for (int i = closing.size() - 1; i >= 0; i--) {
      if (closing.get(i) instanceof AutoCloseable component) {
        try {
          component.close();
        } catch (Exception e) {
          if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
          }
          if (failed == null) {
            failed = new IllegalStateException("closing the skade runtime: a component failed");
          }
          failed.addSuppressed(e);
        }
      }
    }
    if (failed != null) {
      throw failed;
    }
  }

  /**
   * A daemon thread named {@code name} running {@code work}, whose context class loader is the one
   * that loaded skade. A thread inherits its creator's, and skade's shared threads (committers,
   * fetch pools, caches' timers, feeds) are often started from a Flink task, whose user-code class
   * loader Flink closes when the job ends: the thread would then outlive it, and everything that
   * loads classes through the context loader (the AWS SDK's S3 client, Hadoop's file systems) would
   * fail in it for every later job of the TaskManager.
   */
  public static Thread thread(Runnable work, String name) {
    Thread thread = new Thread(work, name);
    thread.setDaemon(true);
    thread.setContextClassLoader(SkadeRuntime.class.getClassLoader());
    return thread;
  }

  /**
   * Shuts {@code executor} down as a component's close does: queued tasks are dropped, running ones
   * interrupted, and its threads given a few seconds to end (a warning names {@code name} when they
   * do not).
   */
  public static void shutDown(ExecutorService executor, String name) {
    executor.shutdownNow();
    try {
      if (!executor.awaitTermination(EXECUTOR_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("skade runtime: {} did not stop within {}", name, EXECUTOR_WAIT);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void requireOpen(Class<?> type) {
    if (closed) {
      throw new IllegalStateException(
          "skade runtime: asked for its "
              + type.getName()
              + " after it closed; use SkadeRuntime.get(), which starts a new runtime");
    }
  }
}
