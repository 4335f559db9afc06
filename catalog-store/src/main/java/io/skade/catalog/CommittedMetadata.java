package io.skade.catalog;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.io.FileIO;

/**
 * The table metadata this JVM wrote or read lately, by metadata file location: a reader of a commit
 * made in this process (the writer's own refresh, a source's planner) takes it from memory instead
 * of parsing back the file just written, and a table loaded again (by SQL planning, then by the
 * job's lookup or source) is not parsed again; the file's size grows with the table's snapshots. A
 * metadata file is never rewritten under the same location, so an entry never goes stale. The
 * entries are the current {@link SkadeRuntime}'s.
 */
public final class CommittedMetadata {
  /** Enough for the latest metadata of a few busy tables; older files are parsed if needed. */
  private static final int MAX_ENTRIES = 64;

  /** The entries of one {@link SkadeRuntime}, least recently used first; guarded by itself. */
  private static final class Recent extends LinkedHashMap<String, TableMetadata> {
    Recent() {
      super(16, 0.75f, true);
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, TableMetadata> eldest) {
      return size() > MAX_ENTRIES;
    }
  }

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

  /** Notes that {@code metadata} was just written to {@code location}. */
  static void written(String location, TableMetadata metadata) {
    // As parsed from the file: located there, with no pending changes.
    TableMetadata located =
        TableMetadata.buildFrom(metadata).discardChanges().withMetadataLocation(location).build();
    Recent recent = recent();
    synchronized (recent) {
      recent.put(location, located);
    }
  }

  /** Forgets {@code location}, whose file was deleted (a refused commit). */
  static void deleted(String location) {
    Recent recent = recent();
    synchronized (recent) {
      recent.remove(location);
    }
  }
}
