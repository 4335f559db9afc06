package io.skade.sink;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.TableLoader;

/**
 * Loads a table for Iceberg's Flink operators (those of {@link SkadeSink}, or Iceberg's own
 * source) from the skade catalog shared in the JVM ({@link SharedCatalogs}), so a committer
 * commits through the catalog's one commit path (and its commit feed) and a reader sees new
 * snapshots on each refresh, without opening the single-owner RocksDB store a second time, as
 * Iceberg's {@code CatalogLoader.custom} would.
 */
public final class SkadeTableLoader implements TableLoader {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table;
  private transient SharedCatalogs.Handle handle;

  /** Loads {@code table} of the catalog {@code catalogProperties} name. */
  public SkadeTableLoader(Map<String, String> catalogProperties, TableIdentifier table) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
  }

  @Override
  public void open() {
    if (handle == null) {
      // On a TaskManager: never creates a catalog (SkadeCatalog.inTask).
      handle = SharedCatalogs.acquire(SkadeCatalog.inTask(catalogProperties));
    }
  }

  @Override
  public boolean isOpen() {
    return handle != null;
  }

  @Override
  public Table loadTable() {
    if (handle == null) {
      throw new IllegalStateException("skade table loader for " + table + " is not open");
    }
    return handle.catalog().loadTable(TableIdentifier.parse(table));
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public TableLoader clone() {
    return new SkadeTableLoader(catalogProperties, TableIdentifier.parse(table));
  }

  @Override
  public void close() {
    if (handle != null) {
      handle.close();
      handle = null;
    }
  }

  @Override
  public String toString() {
    return "skade table " + table;
  }
}
