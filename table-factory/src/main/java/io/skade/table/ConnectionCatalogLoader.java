package io.skade.table;

import io.skade.catalog.CatalogConnection;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.flink.CatalogLoader;

/**
 * Hands Iceberg's Flink catalog the skade catalog its properties name: one sharing the store this
 * JVM has open on its directory (or opening it, as its owner), or, with {@code uri}, the server's
 * catalog through Iceberg's REST client. It is closed by {@link #release()}, when the Flink catalog
 * closes.
 */
final class ConnectionCatalogLoader implements CatalogLoader {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> properties;
  private transient CatalogConnection connection;

  ConnectionCatalogLoader(Map<String, String> properties) {
    this.properties = new HashMap<>(properties);
  }

  @Override
  public synchronized Catalog loadCatalog() {
    if (connection == null) {
      connection = CatalogConnection.forWriting(properties);
    }
    return connection.catalog();
  }

  synchronized void release() {
    if (connection != null) {
      connection.close();
      connection = null;
    }
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public CatalogLoader clone() {
    return new ConnectionCatalogLoader(properties);
  }
}
