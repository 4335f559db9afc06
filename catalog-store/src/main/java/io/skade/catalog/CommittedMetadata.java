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
 * metadata file is never rewritten under the same location, so an entry never goes stale.
 */
public final class CommittedMetadata {
  /** Enough for the latest metadata of a few busy tables; older files are parsed if needed. */
  private static final int MAX_ENTRIES = 64;

  // A JVM-wide registry: why it must be one is in docs/internals.md, "Process-wide state".
  private static final Map<String, TableMetadata> RECENT =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, TableMetadata> eldest) {
          return size() > MAX_ENTRIES;
        }
      };

  private CommittedMetadata() {}

  /**
   * The metadata in file {@code location}: from memory when this JVM wrote or read it lately and
   * the file is still there (a file deleted behind the catalog's back fails as it would when read).
   */
  public static TableMetadata read(FileIO io, String location) {
    TableMetadata metadata;
    synchronized (RECENT) {
      metadata = RECENT.get(location);
    }
    if (metadata != null && io.newInputFile(location).exists()) {
      return metadata;
    }
    TableMetadata parsed = TableMetadataParser.read(io, location);
    synchronized (RECENT) {
      RECENT.put(location, parsed);
    }
    return parsed;
  }

  /** Notes that {@code metadata} was just written to {@code location}. */
  static void written(String location, TableMetadata metadata) {
    // As parsed from the file: located there, with no pending changes.
    TableMetadata located =
        TableMetadata.buildFrom(metadata).discardChanges().withMetadataLocation(location).build();
    synchronized (RECENT) {
      RECENT.put(location, located);
    }
  }

  /** Forgets {@code location}, whose file was deleted (a refused commit). */
  static void deleted(String location) {
    synchronized (RECENT) {
      RECENT.remove(location);
    }
  }
}
