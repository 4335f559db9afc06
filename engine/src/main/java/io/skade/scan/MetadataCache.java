package io.skade.scan;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.SkadeRuntime;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotChanges;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.inmemory.InMemoryInputFile;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Parsed table metadata files, manifest lists and manifests, shared by every changelog read, lookup
 * and lineage of this JVM, and bounded by an estimate of their heap; beside them the raw bytes of
 * manifest lists and manifests, within a quarter of that bound again. All three are immutable files
 * whose paths are never reused, so they are keyed by path and never go stale.
 *
 * <p>Consecutive windows of a table share nearly all manifests: without this cache each window
 * parsed the whole table state twice (its start and its end), so a one-row commit cost as many
 * manifest reads as the table had manifests. A metadata file is parsed once for the source's
 * planner and its readers when they share a JVM, and not at all when this JVM committed it ({@link
 * CommittedMetadata}). The shared cache and its prefetch thread are the current {@link
 * SkadeRuntime}'s.
 */
public final class MetadataCache {
  /** A rough heap cost of one parsed file entry or manifest-list entry with its statistics. */
  private static final int ENTRY_BYTES = 1024;

  /** The bound of the shared cache: 1/16 of the heap, at most 256 MB. */
  private static final long SHARED_MAX_BYTES =
      Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 16);

  /**
   * Where prefetches run, one per {@link SkadeRuntime} (shut down with it): one daemon thread of
   * its own, never Iceberg's worker pool, since a prefetch reads manifests on that pool and waits
   * for them (on the pool, prefetches took every worker and waited on each other, and every commit
   * of the JVM hung behind them). A prefetch is a hint: when the queue is full the oldest one is
   * dropped, and so is one after the runtime closed.
   */
  private static final class Prefetch implements AutoCloseable {
    static final String THREAD = "skade-metadata-prefetch";

    final ThreadPoolExecutor executor =
        new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(64),
            runnable -> SkadeRuntime.thread(runnable, THREAD),
            new ThreadPoolExecutor.DiscardOldestPolicy());

    @Override
    public void close() {
      SkadeRuntime.shutDown(executor, THREAD);
    }
  }

  /** A table followed ({@link #follow}) until closed. */
  public interface Following extends AutoCloseable {
    @Override
    void close();
  }

  /** The tables whose commits in this JVM are read ahead ({@link #follow}), with their handles. */
  private final Map<String, Integer> followed = new ConcurrentHashMap<>();

  /** Parsed files by kind and path: a {@link TableMetadata}, or a list of entries. */
  private final Cache<String, Object> entries;

  /**
   * The bytes of manifest lists and manifests read lately, by path: a file parsed twice (for its
   * live entries here, for its added and removed ones by {@link #changes}) or parsed again after
   * its entries were evicted costs no second request.
   */
  private final Cache<String, byte[]> files;

  /** Names this cache, so that a source's planner can tell the readers that share it. */
  private final String id = UUID.randomUUID().toString();

  /** A cache of at most about {@code maxBytes} of heap. */
  public MetadataCache(long maxBytes) {
    this.files =
        Caffeine.newBuilder()
            .maximumWeight(Math.max(1, maxBytes / 4))
            .weigher((String key, byte[] bytes) -> bytes.length)
            .build();
    this.entries =
        Caffeine.newBuilder()
            .maximumWeight(maxBytes)
            .weigher(
                (String key, Object value) ->
                    ENTRY_BYTES
                        * Math.max(
                            1,
                            value instanceof TableMetadata metadata
                                ? metadata.snapshots().size() + metadata.schemas().size()
                                : ((List<?>) value).size()))
            .build();
  }

  /** The cache every read of this JVM uses: the current {@link SkadeRuntime}'s. */
  public static MetadataCache shared() {
    return SkadeRuntime.get()
        .component(
            MetadataCache.class,
            () -> {
              MetadataCache cache = new MetadataCache(SHARED_MAX_BYTES);
              CommittedMetadata.listen(cache::written);
              return cache;
            });
  }

  /**
   * This cache's name, unique to it: a reader whose {@link #shared} cache has the id of its
   * planner's holds the metadata the planner read.
   */
  public String id() {
    return id;
  }

  /**
   * Has this cache read what each commit this JVM makes to table {@code tableKey} wrote (its
   * manifest list and the manifests it wrote), in the background while the catalog syncs the
   * commit, or, for an append that named its files, keep those ({@link #appendedHere}), until the
   * handle is closed: a source that follows the table then plans the commit's window from memory.
   * Handles of one table are counted.
   */
  public Following follow(String tableKey) {
    followed.merge(tableKey, 1, Integer::sum);
    return () -> followed.computeIfPresent(tableKey, (key, count) -> count == 1 ? null : count - 1);
  }

  private void written(
      String tableKey,
      TableMetadata metadata,
      FileIO io,
      List<Long> added,
      Map<Long, List<DataFile>> appendedFiles) {
    if (!followed.containsKey(tableKey)) {
      return;
    }
    Table table = readOnly(metadata, io, tableKey);
    for (long snapshotId : added) {
      Snapshot snapshot = metadata.snapshot(snapshotId);
      List<DataFile> files = appendedFiles.get(snapshotId);
      if (files != null && snapshot != null && snapshot.manifestListLocation() != null) {
        entries.put(appendedKey(snapshot.manifestListLocation()), files);
      } else {
        prefetch(() -> table, snapshotId, WindowFiles::prefetchWritten);
      }
    }
  }

  /**
   * The data files {@code snapshot} appended, when an append of this JVM made it and named them
   * while this cache followed its table ({@link #follow}); else null, and its manifests tell.
   */
  @SuppressWarnings("unchecked")
  public List<DataFile> appendedHere(Snapshot snapshot) {
    String list = snapshot.manifestListLocation();
    return list == null ? null : (List<DataFile>) entries.getIfPresent(appendedKey(list));
  }

  /**
   * The table as metadata file {@code location} describes it, read with {@code io}: a read-only
   * table whose snapshots (and their parsed manifest lists) are shared.
   */
  public Table table(String location, FileIO io, String name) {
    TableMetadata metadata =
        (TableMetadata)
            entries.get(metadataKey(location), key -> CommittedMetadata.readKnown(io, location));
    return readOnly(metadata, io, name);
  }

  /**
   * As {@link #table}, when this JVM holds the metadata file {@code location} parsed already (this
   * cache, or {@link CommittedMetadata} for one it committed); otherwise null, without any I/O.
   */
  public Table tableInMemory(String location, FileIO io, String name) {
    String key = metadataKey(location);
    TableMetadata metadata = (TableMetadata) entries.getIfPresent(key);
    if (metadata == null) {
      metadata = CommittedMetadata.inMemory(location);
      if (metadata == null) {
        return null;
      }
      entries.put(key, metadata);
    }
    return readOnly(metadata, io, name);
  }

  /**
   * The table as metadata file {@code location} describes it, built from {@code base} (the metadata
   * of the file it was committed onto) and the {@code updates} between them ({@link
   * CommittedMetadata#replay}), and kept as that file's: what a follower of a table's commits reads
   * instead of the whole file, which grows with every snapshot the table keeps.
   */
  public Table replayed(
      String location, TableMetadata base, List<MetadataUpdate> updates, FileIO io, String name) {
    TableMetadata metadata =
        (TableMetadata)
            entries.get(
                metadataKey(location), key -> CommittedMetadata.replay(base, updates, location));
    return readOnly(metadata, io, name);
  }

  /**
   * Reads metadata file {@code location}, and the manifest list and the manifests a window ending
   * at its snapshot {@code snapshotId} reads, into this cache in the background, so that window
   * finds them parsed: a reader with a backlog of windows reads the next windows' metadata while it
   * reads this window's rows. Failures are ignored here; the read itself reports them.
   */
  public void prefetch(String location, FileIO io, String name, long snapshotId) {
    prefetch(() -> table(location, io, name), snapshotId, WindowFiles::prefetch);
  }

  /** As above, of a table in hand (one a split carried). */
  public void prefetch(Table table, long snapshotId) {
    prefetch(() -> table, snapshotId, WindowFiles::prefetch);
  }

  private void prefetch(
      Supplier<Table> tables, long snapshotId, BiConsumer<Table, Snapshot> reading) {
    SkadeRuntime.get()
        .component(Prefetch.class, Prefetch::new)
        .executor
        .execute(
            () -> {
              try {
                Table table = tables.get();
                Snapshot snapshot = table.snapshot(snapshotId);
                if (snapshot != null) {
                  reading.accept(table, snapshot);
                }
              } catch (RuntimeException e) {
                // the window's own read fails with this, where it can be reported
              }
            });
  }

  /** The manifests of {@code snapshot}, data and deletes. */
  @SuppressWarnings("unchecked")
  public List<ManifestFile> manifests(Snapshot snapshot, Table table) {
    String list = snapshot.manifestListLocation();
    if (list == null) { // a v1 snapshot may list its manifests inline
      return snapshot.allManifests(table.io());
    }
    return (List<ManifestFile>)
        entries.get(
            listKey(list), key -> List.copyOf(snapshot.allManifests(new FileBytes(table.io()))));
  }

  /** The live data files of a data manifest. */
  @SuppressWarnings("unchecked")
  public List<DataFile> dataFiles(ManifestFile manifest, Table table) {
    return (List<DataFile>)
        entries.get(
            key(manifest),
            key -> {
              try (ManifestReader<DataFile> reader =
                  ManifestFiles.read(manifest, new FileBytes(table.io()), table.specs())) {
                return copy(reader);
              } catch (IOException e) {
                throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
              }
            });
  }

  /** The live delete files of a delete manifest. */
  @SuppressWarnings("unchecked")
  public List<DeleteFile> deleteFiles(ManifestFile manifest, Table table) {
    return (List<DeleteFile>)
        entries.get(
            key(manifest),
            key -> {
              try (ManifestReader<DeleteFile> reader =
                  ManifestFiles.readDeleteManifest(
                      manifest, new FileBytes(table.io()), table.specs())) {
                return copy(reader);
              } catch (IOException e) {
                throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
              }
            });
  }

  /**
   * The data and delete files {@code snapshot} of {@code table} added and removed, read from the
   * manifest list and manifests this cache holds, or read whole and kept.
   */
  public SnapshotChanges changes(Table table, Snapshot snapshot) {
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    Table reading =
        new BaseTable(new StaticTableOperations(metadata, new FileBytes(table.io())), table.name());
    return SnapshotChanges.builderFor(reading).snapshot(snapshot).build();
  }

  /** Whether the manifest list of {@code snapshot} is parsed here already (reading it is free). */
  public boolean holdsManifestList(Snapshot snapshot) {
    String list = snapshot.manifestListLocation();
    return list == null || entries.getIfPresent(listKey(list)) != null;
  }

  /** Whether the manifest's entries are cached already (so reading it costs nothing). */
  public boolean holds(ManifestFile manifest) {
    return entries.getIfPresent(key(manifest)) != null;
  }

  /**
   * A table's file IO that reads manifest lists and manifests whole, in one request, and keeps
   * their bytes in {@link #files}: Iceberg's Avro reader would first ask the store for the length
   * of a file no one knows it of (a manifest list), a round trip of its own on every commit a
   * reader follows. Read-only; never serialized (it lives within one read).
   */
  @SuppressWarnings("serial")
  private final class FileBytes implements FileIO {
    private final FileIO io;

    FileBytes(FileIO io) {
      this.io = io;
    }

    @Override
    public InputFile newInputFile(String path) {
      byte[] bytes =
          files.get(
              path,
              key -> {
                try (SeekableInputStream in = io.newInputFile(path).newStream()) {
                  return in.readAllBytes();
                } catch (IOException e) {
                  throw new UncheckedIOException("cannot read " + path, e);
                }
              });
      return new InMemoryInputFile(path, bytes);
    }

    @Override
    public InputFile newInputFile(String path, long length) {
      return newInputFile(path);
    }

    @Override
    public OutputFile newOutputFile(String path) {
      throw new UnsupportedOperationException("read-only: cannot write " + path);
    }

    @Override
    public void deleteFile(String path) {
      throw new UnsupportedOperationException("read-only: cannot delete " + path);
    }
  }

  private static String metadataKey(String location) {
    return "metadata:" + location;
  }

  private static String appendedKey(String manifestList) {
    return "appended:" + manifestList;
  }

  private static String listKey(String manifestList) {
    return "list:" + manifestList;
  }

  /** A read-only table of {@code metadata}, reading its files with {@code io}. */
  private static Table readOnly(TableMetadata metadata, FileIO io, String name) {
    return new BaseTable(new StaticTableOperations(metadata, io), name);
  }

  private static String key(ManifestFile manifest) {
    return (manifest.content() == ManifestContent.DATA ? "data:" : "deletes:") + manifest.path();
  }

  private static <F extends ContentFile<F>> List<F> copy(ManifestReader<F> reader) {
    List<F> files = new ArrayList<>();
    reader.forEach(files::add); // its iterator yields live entries only, copied
    return List.copyOf(files);
  }
}
