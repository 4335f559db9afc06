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
    Path tokens = Files.writeString(root.resolve("tokens"), TOKEN + "\n");
    server =
        SkadeServer.start(
            SkadeServer.Settings.of(root.resolve("warehouse").toString(), "127.0.0.1", 0, tokens));
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
            SkadeServer.start(
                new SkadeServer.Settings(
                    root.resolve("warehouse-" + name).toString(),
                    null,
                    "127.0.0.1",
                    0,
                    root.resolve("tokens"),
                    false,
                    null,
                    null,
                    Map.of(CatalogProperties.UNIQUE_TABLE_LOCATION, unique)));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      opened.add(target);
    }
    props.put(CatalogProperties.URI, target.uri().toString());
    props.put("token", TOKEN);
    RESTCatalog client = new RESTCatalog();
    client.initialize(name, props);
    opened.add(client);
    return client;
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
