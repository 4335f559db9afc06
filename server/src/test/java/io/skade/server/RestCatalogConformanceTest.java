package io.skade.server;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.catalog.CatalogTests;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * Iceberg's own catalog conformance suite, run by Iceberg's {@link RESTCatalog} against a skade
 * server over real HTTP with bearer tokens: each test gets its own server on its own catalog (real
 * RocksDB, real metadata files), as the suite expects a new catalog per test.
 */
class RestCatalogConformanceTest extends CatalogTests<RESTCatalog> {
  private static final String TOKEN = "conformance-token";
  @TempDir Path root;
  private final List<AutoCloseable> opened = new ArrayList<>();
  private SkadeServer server;
  private RESTCatalog catalog;

  @BeforeEach
  void startServer() throws Exception {
    Files.writeString(root.resolve("tokens"), TOKEN + "\n");
    server = startServer("warehouse", Map.of());
    catalog =
        initCatalog(
            "rest",
            Map.of(
                CatalogProperties.TABLE_DEFAULT_PREFIX + "default-key1", "catalog-default-key1",
                CatalogProperties.TABLE_DEFAULT_PREFIX + "default-key2", "catalog-default-key2",
                CatalogProperties.TABLE_DEFAULT_PREFIX + "override-key3", "catalog-default-key3",
                CatalogProperties.TABLE_OVERRIDE_PREFIX + "override-key3", "catalog-override-key3",
                CatalogProperties.TABLE_OVERRIDE_PREFIX + "override-key4",
                    "catalog-override-key4"));
  }

  @AfterEach
  void stopServer() throws Exception {
    for (AutoCloseable closeable : opened) {
      closeable.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Override
  protected RESTCatalog catalog() {
    return catalog;
  }

  /**
   * A client of the test's server; when the suite asks for a catalog property that only the catalog
   * behind a REST server can honour (where new tables go), a server of its own on a catalog with
   * that property.
   */
  @Override
  protected RESTCatalog initCatalog(String name, Map<String, String> additional) {
    Map<String, String> props = new HashMap<>(additional);
    SkadeServer target = server;
    String unique = props.remove(CatalogProperties.UNIQUE_TABLE_LOCATION);
    if (unique != null) {
      try {
        target =
            startServer(
                "warehouse-" + name, Map.of(CatalogProperties.UNIQUE_TABLE_LOCATION, unique));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      opened.add(target);
    }
    props.putAll(clientProperties());
    props.put(CatalogProperties.URI, target.uri().toString());
    props.put("token", TOKEN);
    RESTCatalog client = new RESTCatalog();
    client.initialize(name, props);
    opened.add(client);
    return client;
  }

  /** A server with the test's token on a catalog of its own, named {@code name} under root. */
  private SkadeServer startServer(String name, Map<String, String> properties) throws Exception {
    Map<String, String> catalog = new HashMap<>(serverProperties(root, name));
    catalog.putAll(properties);
    return SkadeServer.start(
        new SkadeServer.Settings(
            warehouse(root, name),
            null,
            "127.0.0.1",
            0,
            root.resolve("tokens"),
            false,
            null,
            null,
            catalog));
  }

  /** The warehouse of the server's catalog {@code name}: a local directory under {@code root}. */
  protected String warehouse(Path root, String name) {
    return root.resolve(name).toString();
  }

  /** Further catalog properties of the server's catalog {@code name} (none here). */
  protected Map<String, String> serverProperties(Path root, String name) {
    return Map.of();
  }

  /** What a client is given besides the server's address and token (nothing here). */
  protected Map<String, String> clientProperties() {
    return Map.of();
  }

  @Override
  protected boolean requiresNamespaceCreate() {
    return true;
  }

  @Override
  protected boolean supportsNestedNamespaces() {
    return true;
  }

  /** The server's update handler retries a lost compare-and-swap while the requirements hold. */
  @Override
  protected boolean supportsServerSideRetry() {
    return true;
  }

  // Feature flags left off, and why (as for the embedded catalog, SkadeCatalogConformanceTest):
  // - supportsNamesWithSlashes: '/' would let a name escape its directory in the warehouse; the
  //   catalog rejects such names (a 400 over REST).
  // - supportsEmptyNamespace: a table needs a named namespace (its directory and key prefix).
  @Override
  protected boolean supportsNamesWithSlashes() {
    return false;
  }

  @Override
  protected boolean supportsEmptyNamespace() {
    return false;
  }
}
