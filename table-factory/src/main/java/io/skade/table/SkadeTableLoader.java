package io.skade.table;

import io.skade.catalog.SharedCatalogs;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.TableLoader;

/**
 * Loads a table for Iceberg's Flink sink from the skade catalog shared in the JVM, so the sink's
 * committer commits through the catalog's one commit path (and its commit feed) instead of
 * opening the RocksDB store a second time.
 */
final class SkadeTableLoader implements TableLoader {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table;
  private transient SharedCatalogs.Handle handle;

  SkadeTableLoader(Map<String, String> catalogProperties, TableIdentifier table) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
  }

  @Override
  public void open() {
    if (handle == null) {
      handle = SharedCatalogs.acquire(catalogProperties);
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
