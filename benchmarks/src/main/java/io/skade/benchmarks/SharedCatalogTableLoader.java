package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.TableLoader;

/**
 * Loads a table from the skade catalog this JVM already holds open ({@link SharedCatalogs}), so
 * Iceberg's Flink source reads through the catalog (and a streaming read sees new snapshots on
 * each refresh) without opening the single-owner catalog directory a second time. Iceberg's own
 * {@code CatalogLoader.custom} would open a new catalog and close it with the loader.
 */
final class SharedCatalogTableLoader implements TableLoader {
  private final HashMap<String, String> properties;
  private final String table; // Iceberg's TableIdentifier is not serializable
  private transient SharedCatalogs.Handle handle;

  SharedCatalogTableLoader(Map<String, String> properties, String table) {
    this.properties = new HashMap<>(properties);
    this.table = table;
  }

  @Override
  public void open() {
    if (handle == null) {
      handle = SharedCatalogs.acquire(properties);
    }
  }

  @Override
  public boolean isOpen() {
    return handle != null;
  }

  @Override
  public Table loadTable() {
    open();
    return handle.catalog().loadTable(TableIdentifier.parse(table));
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public TableLoader clone() {
    return new SharedCatalogTableLoader(properties, table);
  }

  @Override
  public void close() {
    if (handle != null) {
      handle.close();
      handle = null;
    }
  }
}
