package io.skade.catalog;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.catalog.CatalogTests;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** Iceberg's own catalog conformance suite, run against a real RocksDB store and local files. */
class SkadeCatalogConformanceTest extends CatalogTests<SkadeCatalog> {
  @TempDir Path root;
  private final List<SkadeCatalog> opened = new ArrayList<>();
  private SkadeCatalog catalog;
  private int warehouses;

  @BeforeEach
  void openCatalog() {
    catalog =
        initCatalog(
            "skade",
            Map.of(
                CatalogProperties.TABLE_DEFAULT_PREFIX + "default-key1", "catalog-default-key1",
                CatalogProperties.TABLE_DEFAULT_PREFIX + "default-key2", "catalog-default-key2",
                CatalogProperties.TABLE_DEFAULT_PREFIX + "override-key3", "catalog-default-key3",
                CatalogProperties.TABLE_OVERRIDE_PREFIX + "override-key3", "catalog-override-key3",
                CatalogProperties.TABLE_OVERRIDE_PREFIX + "override-key4",
                    "catalog-override-key4"));
  }

  @AfterEach
  void closeCatalogs() throws IOException {
    for (SkadeCatalog c : opened) {
      c.close();
    }
  }

  @Override
  protected SkadeCatalog catalog() {
    return catalog;
  }

  /** Each catalog the suite asks for gets its own warehouse, as the suite expects a new catalog. */
  @Override
  protected SkadeCatalog initCatalog(String name, Map<String, String> additional) {
    Map<String, String> props = new HashMap<>(additional);
    props.putAll(warehouse(root, warehouses++));
    SkadeCatalog c = new SkadeCatalog();
    c.initialize(name, props);
    opened.add(c);
    return c;
  }

  /**
   * The properties that put the {@code n}th catalog of a test in a warehouse of its own: a local
   * directory under {@code root}.
   */
  protected Map<String, String> warehouse(Path root, int n) {
    return Map.of(CatalogProperties.WAREHOUSE_LOCATION, root.resolve("wh" + n).toString());
  }

  @Override
  protected boolean requiresNamespaceCreate() {
    return true;
  }

  @Override
  protected boolean supportsNestedNamespaces() {
    return true;
  }

  // Feature flags left off, and why:
  // - supportsNamesWithSlashes: '/' would let a name escape its directory in the warehouse; names
  //   with it are rejected (issue: names must not escape the warehouse).
  // - supportsEmptyNamespace: a table needs a named namespace (its directory and key prefix);
  //   the empty namespace is rejected with an error saying so.
  // - supportsServerSideRetry: an embedded catalog has no server; Iceberg's client retries.
  // - overridesRequestedLocation: off because skade honours a table's requested location.
  @Override
  protected boolean supportsNamesWithSlashes() {
    return false;
  }

  @Override
  protected boolean supportsEmptyNamespace() {
    return false;
  }
}
