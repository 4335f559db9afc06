package io.skade.table;

import io.skade.catalog.SharedCatalogs;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.flink.CatalogLoader;

/**
 * Hands Iceberg's Flink catalog one skade catalog, which shares the store this JVM has open on
 * its directory (or opens it). It is closed by {@link #release()}, when the Flink catalog closes.
 */
final class SharedCatalogLoader implements CatalogLoader {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> properties;
  private transient SharedCatalogs.Handle handle;

  SharedCatalogLoader(Map<String, String> properties) {
    this.properties = new HashMap<>(properties);
  }

  @Override
  public synchronized Catalog loadCatalog() {
    if (handle == null) {
      handle = SharedCatalogs.acquire(properties);
    }
    return handle.catalog();
  }

  synchronized void release() {
    if (handle != null) {
      handle.close();
      handle = null;
    }
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public CatalogLoader clone() {
    return new SharedCatalogLoader(properties);
  }
}
