package io.skade.scan;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The versions of one table that a follower of its commits (a source's planner, a lookup) meets,
 * each named by its metadata file: held in this JVM ({@link MetadataCache}), else built from the
 * version loaded last and the updates between them when the catalog's server holds those (one small
 * answer, most often carried by the commit feed, rather than the whole file, which grows with every
 * snapshot the table keeps), else read. The tables are read-only and share their parsed manifests
 * through the cache. One instance serves one follower at a time.
 */
public final class TableVersions {
  private static final Logger LOG = LoggerFactory.getLogger(TableVersions.class);

  private final CatalogConnection catalog;
  private final TableIdentifier identifier;
  private final String tableKey;
  private FileIO io;

  /** The version returned or noted last, which the next may be built from. */
  private Table held;

  /** The versions of {@code identifier} in {@code catalog}. */
  public TableVersions(CatalogConnection catalog, TableIdentifier identifier) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.tableKey = catalog.feed().commitTableKey(identifier);
  }

  /** Notes {@code table}, loaded by other means, as the version the next one may be built from. */
  public void loaded(Table table) {
    if (io == null) {
      io = catalog.readIO(table);
    }
    held = table;
  }

  /** The table as metadata file {@code location} describes it. */
  public Table at(String location) {
    MetadataCache cache = MetadataCache.shared();
    Table table = cache.tableInMemory(location, io(), tableKey);
    if (table == null) {
      table = replayedOnHeld(location);
    }
    if (table == null) {
      table = cache.table(location, io(), tableKey);
    }
    held = table;
    return table;
  }

  /**
   * The version {@code commit} made when it is the one held or was committed right onto it (built
   * from the held one and the updates between them, which the commit feed most often carried);
   * otherwise null, and the caller loads the table itself ({@link #loaded}). Never a version older
   * than the one held: a commit the feed named may be older than a table loaded meanwhile.
   */
  public Table next(CommitEvent commit) {
    if (held == null) {
      return null;
    }
    String heldLocation = metadata(held).metadataFileLocation();
    if (commit.metadataLocation().equals(heldLocation)) {
      return held;
    }
    Table table =
        heldLocation.equals(commit.previousMetadataLocation())
            ? replayedOnHeld(commit.metadataLocation())
            : null;
    if (table != null) {
      held = table;
    }
    return table;
  }

  /** The table at {@code location} built from the held version and its updates, or null. */
  private Table replayedOnHeld(String location) {
    if (held == null || !catalog.isRemote()) {
      return null;
    }
    TableMetadata base = metadata(held);
    try {
      return catalog
          .metadataUpdates(location, base.metadataFileLocation())
          .map(updates -> MetadataCache.shared().replayed(location, base, updates, io(), tableKey))
          .orElse(null);
    } catch (RuntimeException e) {
      // updates this release cannot apply: the file itself holds the same metadata
      LOG.warn(
          "skade on table {}: could not apply the updates that made {}; reading the file",
          identifier,
          location,
          e);
      return null;
    }
  }

  private static TableMetadata metadata(Table table) {
    return ((HasTableOperations) table).operations().current();
  }

  /**
   * The file IO metadata and data files are read with: the catalog's for the table ({@link
   * CatalogConnection#readIO}), which through a server takes metadata files from the server.
   */
  public FileIO io() {
    if (io == null) {
      io = catalog.readIO(catalog.catalog().loadTable(identifier));
    }
    return io;
  }
}
