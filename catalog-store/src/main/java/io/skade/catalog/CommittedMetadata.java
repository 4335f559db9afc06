package io.skade.catalog;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The table metadata this JVM wrote or read lately, by metadata file location: a reader of a commit
 * made in this process (the writer's own refresh, a source's planner) takes it from memory instead
 * of parsing back the file just written, and a table loaded again (by SQL planning, then by the
 * job's lookup or source) is not parsed again; the file's size grows with the table's snapshots. A
 * metadata file is never rewritten under the same location, so an entry never goes stale. The
 * entries are the current {@link SkadeRuntime}'s.
 */
public final class CommittedMetadata {
  private static final Logger LOG = LoggerFactory.getLogger(CommittedMetadata.class);

  /** Enough for the latest metadata of a few busy tables; older files are parsed if needed. */
  private static final int MAX_ENTRIES = 64;

  /**
   * The kinds of update {@link #updates} hands out: what a data commit, a snapshot expiry or a
   * change of properties or refs makes. Anything else (a schema, a spec, a sort order, a format
   * upgrade) is rare, and a reader then reads the whole file.
   */
  private static final Set<Class<? extends MetadataUpdate>> REPLAYED =
      Set.of(
          MetadataUpdate.AddSnapshot.class,
          MetadataUpdate.SetSnapshotRef.class,
          MetadataUpdate.RemoveSnapshots.class,
          MetadataUpdate.RemoveSnapshotRef.class,
          MetadataUpdate.SetProperties.class,
          MetadataUpdate.RemoveProperties.class,
          MetadataUpdate.SetStatistics.class,
          MetadataUpdate.RemoveStatistics.class);

  /**
   * Told of each metadata file this JVM writes for a commit, before the commit is submitted: while
   * the catalog syncs the commit, a reader in this JVM can read what the commit wrote.
   */
  @FunctionalInterface
  public interface WriteListener {
    /**
     * The metadata of the file just written for table {@code tableKey}, as read back from it, with
     * the IO that wrote it, the snapshots it adds, and per added snapshot whose data files the
     * committing code named ({@link KnownAppend}: an append of this JVM), those files. Called on
     * the committing thread: it must not block.
     */
    void written(
        String tableKey,
        TableMetadata metadata,
        FileIO io,
        List<Long> addedSnapshotIds,
        Map<Long, List<DataFile>> appendedFiles);
  }

  /** The entries of one {@link SkadeRuntime}, least recently used first; guarded by itself. */
  private static final class Recent extends LinkedHashMap<String, TableMetadata> {
    /** Told of every file written; not guarded. */
    final List<WriteListener> listeners = new CopyOnWriteArrayList<>();

    /** Per file this JVM committed, the file it was committed onto and the updates between. */
    final Map<String, Updates> updates =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Updates> eldest) {
            return size() > MAX_ENTRIES;
          }
        };

    Recent() {
      super(16, 0.75f, true);
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, TableMetadata> eldest) {
      return size() > MAX_ENTRIES;
    }
  }

  /**
   * How a committed metadata file follows from the one it was committed onto: applied in order to
   * {@code base}'s metadata, {@code updates} give this file's metadata (bar its location and logs).
   */
  public record Updates(String base, List<MetadataUpdate> updates) {}

  private CommittedMetadata() {}

  private static Recent recent() {
    return SkadeRuntime.get().component(Recent.class, Recent::new);
  }

  /**
   * The metadata in file {@code location}: from memory when this JVM wrote or read it lately and
   * the file is still there (a file deleted behind the catalog's back fails as it would when read):
   * what a table's first load reads.
   */
  public static TableMetadata read(FileIO io, String location) {
    return read(io, location, true);
  }

  /**
   * The metadata in file {@code location}, which the reader already knows to be a table's: from
   * memory when this JVM wrote or read it lately, without asking the file system whether the file
   * is still there (on object storage that question is a request of its own, paid by every commit a
   * reader follows). A table's later refreshes and a planner of its commits read this way.
   */
  public static TableMetadata readKnown(FileIO io, String location) {
    return read(io, location, false);
  }

  /** The metadata in file {@code location} when this JVM wrote or read it lately; else null. */
  public static TableMetadata inMemory(String location) {
    Recent recent = recent();
    synchronized (recent) {
      return recent.get(location);
    }
  }

  private static TableMetadata read(FileIO io, String location, boolean checkExists) {
    Recent recent = recent();
    TableMetadata metadata;
    synchronized (recent) {
      metadata = recent.get(location);
    }
    if (metadata != null && (!checkExists || io.newInputFile(location).exists())) {
      return metadata;
    }
    TableMetadata parsed = TableMetadataParser.read(io, location);
    synchronized (recent) {
      recent.put(location, parsed);
    }
    return parsed;
  }

  /**
   * How the file {@code location} this JVM committed follows from the file it was committed onto,
   * when it was committed lately by updates of the kinds readers replay; else null.
   */
  public static Updates updates(String location) {
    Recent recent = recent();
    synchronized (recent) {
      return recent.updates.get(location);
    }
  }

  /** Tells {@code listener} of every metadata file this JVM writes for a commit from now on. */
  public static void listen(WriteListener listener) {
    recent().listeners.add(listener);
  }

  /**
   * Notes that {@code metadata} of table {@code tableKey} was just written to {@code location} with
   * {@code io}, committed onto {@code base} and adding {@code added} (of which {@code
   * appendedFiles} gives the data files of those a {@link KnownAppend} made), and tells the
   * listeners.
   */
  static void written(
      String tableKey,
      String location,
      TableMetadata metadata,
      TableMetadata base,
      FileIO io,
      List<Long> added,
      Map<Long, List<DataFile>> appendedFiles) {
    // As parsed from the file: located there, with no pending changes.
    TableMetadata located =
        TableMetadata.buildFrom(metadata).discardChanges().withMetadataLocation(location).build();
    // The builder's changes since base, when base had none of its own pending.
    boolean replayable =
        base != null
            && base.metadataFileLocation() != null
            && base.changes().isEmpty()
            && replayable(metadata.changes());
    Recent recent = recent();
    synchronized (recent) {
      recent.put(location, located);
      if (replayable) {
        recent.updates.put(
            location, new Updates(base.metadataFileLocation(), List.copyOf(metadata.changes())));
      }
    }
    for (WriteListener listener : recent.listeners) {
      try {
        listener.written(tableKey, located, io, added, appendedFiles);
      } catch (RuntimeException e) {
        // a listener only reads ahead: the commit goes on without it
        LOG.warn("a listener of commits to {} failed on {}", tableKey, location, e);
      }
    }
  }

  /**
   * Whether {@code updates} rebuild the metadata they made when replayed: all of the kinds in
   * {@link #REPLAYED}, and the main branch moved only to a snapshot they add (moved to an older
   * one, its history entry is stamped with the commit's own time, which a replay cannot know).
   */
  private static boolean replayable(List<MetadataUpdate> updates) {
    Set<Long> added = new HashSet<>();
    for (MetadataUpdate update : updates) {
      if (!REPLAYED.contains(update.getClass())) {
        return false;
      }
      if (update instanceof MetadataUpdate.AddSnapshot add) {
        added.add(add.snapshot().snapshotId());
      } else if (update instanceof MetadataUpdate.SetSnapshotRef ref
          && ref.name().equals(SnapshotRef.MAIN_BRANCH)
          && !added.contains(ref.snapshotId())) {
        return false;
      }
    }
    return !updates.isEmpty();
  }

  /**
   * {@code base} with {@code updates} applied: the metadata of file {@code location}, as a reader
   * that holds {@code base} builds it from {@link #updates} instead of parsing the whole file —
   * equal to the file's but for its last-updated time, which is the replay's (and so, replayed onto
   * a replay, for the times its metadata log gives its previous files).
   */
  public static TableMetadata replay(
      TableMetadata base, List<MetadataUpdate> updates, String location) {
    TableMetadata.Builder builder = TableMetadata.buildFrom(base);
    updates.forEach(update -> update.applyTo(builder));
    // Built as the commit built it (base joins the metadata log, the time is now), then located:
    // locating a builder keeps its base's time, which snapshots added since may be newer than.
    TableMetadata built = builder.discardChanges().build();
    return TableMetadata.buildFrom(built).withMetadataLocation(location).build();
  }

  /** Forgets {@code location}, whose file was deleted (a refused commit). */
  static void deleted(String location) {
    Recent recent = recent();
    synchronized (recent) {
      recent.remove(location);
      recent.updates.remove(location);
    }
  }
}
