package io.skade.lookup;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.SkadeRuntime;
import io.skade.scan.WindowFiles;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.StructLikeSet;

/**
 * What point lookups keep between probes, shared by every lookup of this JVM and keyed by immutable
 * ids, so it never answers from stale data: a snapshot's live files with their delete files and key
 * bounds (by table, snapshot id and key), each equality delete file's keys and each position delete
 * file's positions (by file path), data files held open, and the decoded pages and dictionaries of
 * those files. Metadata and pages are each bounded by estimated bytes; everything is emptied a
 * while after the last user releases it ({@link #keptAfterLastUser()}), so that a restarted job
 * finds it filled. Parsed manifests are not here: they are the changelog engine's, shared by every
 * reader of this JVM ({@code MetadataCache}).
 */
public final class LookupCaches {
  /** The default bound of the shared caches. */
  public static final long DEFAULT_MAX_BYTES = 256L << 20;

  private static final long TASK_BYTES = 2048;
  private static final long KEY_BYTES = 96;

  /** Data files held open at once. */
  private static final int OPEN_FILES = 1024;

  /** The system property of {@link #keptAfterLastUser()}, in milliseconds. */
  public static final String KEPT_PROPERTY = "skade.lookup.caches.kept-after-last-user-ms";

  /**
   * How long the caches stay filled after their last user released them: a job restarted on the
   * same TaskManager (a failover, a rescale, a resubmission from a savepoint) opens its lookups
   * within seconds, and finds the files open and the pages decoded instead of reading and decoding
   * them again; a TaskManager whose lookups are gone gets the memory back soon after. 30 s, or the
   * system property {@value #KEPT_PROPERTY} in milliseconds (0: emptied at once).
   */
  static Duration keptAfterLastUser() {
    return Duration.ofMillis(Math.max(0, Long.getLong(KEPT_PROPERTY, 30_000)));
  }

  /**
   * The caches a {@link SkadeRuntime}'s lookups share, and how many hold them; emptied {@link
   * #keptAfterLastUser()} after the last releases them unless another acquires them meanwhile, or
   * when the runtime closes.
   */
  private static final class Shared implements AutoCloseable {
    static final String THREAD = "skade-lookup-caches-emptying";

    private LookupCaches caches; // guarded by this
    private int users; // guarded by this
    private ScheduledExecutorService timer; // guarded by this; made on the first release
    private ScheduledFuture<?> emptying; // guarded by this

    synchronized Handle acquire() {
      if (emptying != null) {
        emptying.cancel(false);
        emptying = null;
      }
      if (caches == null) {
        caches = new LookupCaches(DEFAULT_MAX_BYTES);
      }
      users++;
      return new Handle(this, caches);
    }

    synchronized void release(LookupCaches released) {
      if (released != caches || --users > 0) {
        return;
      }
      long keptMillis = keptAfterLastUser().toMillis();
      if (keptMillis == 0) {
        emptyUnused(released);
        return;
      }
      if (timer == null) {
        timer =
            Executors.newSingleThreadScheduledExecutor(
                runnable -> SkadeRuntime.thread(runnable, THREAD));
      }
      emptying = timer.schedule(() -> emptyUnused(released), keptMillis, TimeUnit.MILLISECONDS);
    }

    private synchronized void emptyUnused(LookupCaches unused) {
      if (caches == unused && users == 0) {
        caches.empty();
        caches = null;
        emptying = null;
      }
    }

    @Override
    public synchronized void close() {
      if (caches != null) {
        caches.empty();
        caches = null;
        users = 0;
      }
      if (timer != null) {
        SkadeRuntime.shutDown(timer, THREAD);
        timer = null;
      }
    }
  }

  private final Cache<String, Sized> cache;

  /**
   * The decoded data pages and dictionaries open files keep (page -1: the dictionary), oldest
   * first, and their estimated bytes: past the bound, the oldest are forgotten by their files.
   * First in, first out: a probe of a cached page touches no shared structure, and a put is cheap,
   * which matters as much, since cold probes decode pages at a high rate.
   */
  private final ConcurrentLinkedQueue<PageRef> pages = new ConcurrentLinkedQueue<>();

  private final AtomicLong pageBytes = new AtomicLong();
  private final long maxPageBytes;

  /** Data files held open for probes, by path; closed when evicted. */
  private final Cache<String, java.util.Optional<ProbeFile>> files;

  /** Where ranges of remote files are kept on local disk; null: nowhere. */
  private volatile DiskCache disk;

  private record Sized(Object value, long bytes) {}

  private record PageRef(ProbeFile file, int group, int column, int page, long bytes) {}

  LookupCaches(long maxBytes) {
    this.cache =
        Caffeine.newBuilder()
            .maximumWeight(maxBytes)
            .weigher((String key, Sized value) -> (int) Math.min(Integer.MAX_VALUE, value.bytes()))
            .build();
    this.maxPageBytes = maxBytes;
    this.files =
        Caffeine.newBuilder()
            .maximumSize(OPEN_FILES)
            .<String, java.util.Optional<ProbeFile>>removalListener(
                (path, file, cause) -> {
                  if (file != null && file.isPresent()) {
                    ProbeFile closed = file.get();
                    for (Iterator<PageRef> it = pages.iterator(); it.hasNext(); ) {
                      PageRef page = it.next();
                      if (page.file() == closed) { // its pages go with it
                        it.remove();
                        pageBytes.addAndGet(-page.bytes());
                      }
                    }
                    try {
                      closed.close();
                    } catch (java.io.IOException e) {
                      // a read-only file: nothing to lose
                    }
                  }
                })
            .build();
  }

  /**
   * The data file at {@code path}, opened for probes once and kept open (its footer parsed, its
   * stream held), or empty when it cannot be probed directly and goes through Iceberg's reader.
   */
  java.util.Optional<ProbeFile> probeFile(
      FileIO io,
      org.apache.iceberg.DataFile file,
      io.skade.scan.DataFileRows.ReadListener listener) {
    return probeFile(io, file, file.location(), listener);
  }

  /**
   * As {@link #probeFile(FileIO, org.apache.iceberg.DataFile,
   * io.skade.scan.DataFileRows.ReadListener)}, given the file's {@code location}: a probe passes
   * the one it keeps, whose hash is known, where {@code DataFile.location()} may build a new string
   * that is hashed and compared whole.
   */
  java.util.Optional<ProbeFile> probeFile(
      FileIO io,
      org.apache.iceberg.DataFile file,
      String location,
      io.skade.scan.DataFileRows.ReadListener listener) {
    java.util.Optional<ProbeFile> open = files.getIfPresent(location);
    if (open != null) {
      return open; // a read of the cache, cheaper than its compute on every probe
    }
    return files.get(
        location,
        path ->
            java.util.Optional.ofNullable(ProbeFile.open(io, file, this::added, disk, listener)));
  }

  /** Whether the file at {@code location} is open for probes already. */
  boolean isOpen(String location) {
    return files.getIfPresent(location) != null;
  }

  /**
   * Reads ranges of remote files through {@code cache} from now on (files opened from now on). The
   * first disk cache given stays: the JVM's lookups share one; a lookup naming another directory is
   * told so in the log.
   */
  synchronized void useDiskCache(DiskCache cache) {
    if (disk == null) {
      disk = cache;
    } else if (disk != cache) {
      org.slf4j.LoggerFactory.getLogger(LookupCaches.class)
          .warn(
              "lookup.disk-cache.dir {} is ignored: this JVM's lookups share the disk cache in {},"
                  + " which a lookup opened first; give every lookup table the same directory",
              cache.dir(),
              disk.dir());
    }
  }

  /** The disk cache this JVM's lookups read remote files through, or null. */
  DiskCache diskCache() {
    return disk;
  }

  private void added(ProbeFile file, int group, int column, int page, long bytes) {
    pages.add(new PageRef(file, group, column, page, bytes));
    if (pageBytes.addAndGet(bytes) > maxPageBytes) {
      PageRef oldest;
      while (pageBytes.get() > maxPageBytes && (oldest = pages.poll()) != null) {
        oldest.file().forget(oldest.group(), oldest.column(), oldest.page());
        pageBytes.addAndGet(-oldest.bytes());
      }
    }
  }

  /** Forgets everything and closes the open files. */
  private void empty() {
    cache.invalidateAll();
    pages.clear();
    files.invalidateAll();
    files.cleanUp();
  }

  /** One hold on the JVM's shared caches; close it when done. */
  public static final class Handle implements AutoCloseable {
    private final Shared shared;
    private final LookupCaches caches;
    private final AtomicBoolean released = new AtomicBoolean();

    private Handle(Shared shared, LookupCaches caches) {
      this.shared = shared;
      this.caches = caches;
    }

    public LookupCaches caches() {
      return caches;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        shared.release(caches);
      }
    }
  }

  /**
   * A hold on the JVM's shared caches (the current {@link SkadeRuntime}'s), created on first use.
   */
  public static Handle acquire() {
    return SkadeRuntime.get().component(Shared.class, Shared::new).acquire();
  }

  @SuppressWarnings("unchecked")
  private <V> V get(String key, Supplier<V> load, java.util.function.ToLongFunction<V> size) {
    return (V)
        cache
            .get(
                key,
                k -> {
                  V value = load.get();
                  return new Sized(value, size.applyAsLong(value));
                })
            .value();
  }

  /**
   * The snapshot's live data files with the bounds of the key columns {@code key}, built by {@code
   * build} from the snapshot's scan tasks once per table, snapshot and key. The tasks come from
   * manifests parsed once per JVM ({@link WindowFiles#tasks}), so a new snapshot parses only the
   * manifests it wrote.
   */
  @SuppressWarnings("unchecked")
  PointLookup.KeyedFiles keyedFiles(
      Table table,
      Snapshot snapshot,
      List<org.apache.iceberg.types.Types.NestedField> key,
      java.util.function.Function<List<FileScanTask>, PointLookup.KeyedFiles> build) {
    StringBuilder id =
        new StringBuilder("keyed:").append(table.uuid()).append('@').append(snapshot.snapshotId());
    for (org.apache.iceberg.types.Types.NestedField field : key) {
      id.append(':').append(field.fieldId());
    }
    Sized cached = cache.getIfPresent(id.toString());
    if (cached != null) {
      return (PointLookup.KeyedFiles) cached.value();
    }
    List<FileScanTask> tasks = WindowFiles.tasks(table, snapshot); // outside the load: no nesting
    return get(
        id.toString(), () -> build.apply(tasks), files -> TASK_BYTES * (files.files().size() + 1));
  }

  /**
   * The keys an equality delete file deletes, as rows of {@code keys} (internal values): the
   * table's columns the file names.
   */
  StructLikeSet equalityDeletes(FileIO io, DeleteFile file, Schema keys) {
    return get(
        "eq:" + file.location(),
        () ->
            new BaseDeleteLoader(delete -> io.newInputFile(delete.location()), null)
                .loadEqualityDeletes(List.of(file), keys),
        set -> KEY_BYTES * (set.size() + 1));
  }

  /** The positions of {@code dataFile} that position delete files or a deletion vector delete. */
  PositionDeleteIndex positionDeletes(FileIO io, List<DeleteFile> files, String dataFile) {
    return new BaseDeleteLoader(delete -> io.newInputFile(delete.location()), null) {
      @Override
      protected boolean canCache(long size) {
        return true;
      }

      @Override
      protected <V> V getOrLoad(String key, Supplier<V> load, long size) {
        return get("pos:" + key, load, value -> Math.max(size, 64));
      }
    }.loadPositionDeletes(files, dataFile);
  }
}
