package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CatalogLoadingTest {
  @TempDir Path root;

  @Test
  void loadsTheIcebergWayAndKeepsItsStoreInTheConfiguredOrDefaultPath() throws Exception {
    Path warehouse = root.resolve("wh");
    Catalog catalog =
        CatalogUtil.loadCatalog(
            "io.skade.catalog.SkadeCatalog",
            "lake",
            Map.of("warehouse", warehouse.toUri().toString()),
            new Configuration());
    try {
      assertThat(catalog).isInstanceOf(SkadeCatalog.class);
      assertThat(catalog.name()).isEqualTo("lake");
      ((SupportsNamespaces) catalog).createNamespace(Namespace.of("a", "b"), Map.of("owner", "x"));
      catalog.createTable(TableIdentifier.of("a", "b", "t"), Catalogs.SCHEMA);
      assertThat(Files.isDirectory(warehouse.resolve("_catalog"))).isTrue();
      assertThat(Files.isDirectory(warehouse.resolve("a/b/t/metadata"))).isTrue();
    } finally {
      ((SkadeCatalog) catalog).close();
    }

    Path elsewhere = root.resolve("store");
    try (SkadeCatalog custom =
        Catalogs.open(root.resolve("wh2"), Map.of("catalog.path", elsewhere.toString()))) {
      assertThat(custom.catalogPath()).isEqualTo(elsewhere.toAbsolutePath().toString());
      assertThat(Files.exists(root.resolve("wh2/_catalog"))).isFalse();
    }
  }

  @Test
  void tablesNamespacesAndTheirPropertiesSurviveAReopen() throws Exception {
    Path warehouse = root.resolve("wh");
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Namespace.of("sales", "eu"), Map.of("owner", "team-eu"));
      catalog
          .buildTable(TableIdentifier.of("sales", "eu", "orders"), Catalogs.SCHEMA)
          .withProperty("format-version", "2")
          .withProperty("k", "v")
          .create();
    }
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThat(catalog.listNamespaces()).containsExactly(Namespace.of("sales"));
      assertThat(catalog.listNamespaces(Namespace.of("sales")))
          .containsExactly(Namespace.of("sales", "eu"));
      assertThat(catalog.loadNamespaceMetadata(Namespace.of("sales", "eu")))
          .containsEntry("owner", "team-eu");
      assertThat(catalog.loadTable(TableIdentifier.of("sales", "eu", "orders")).properties())
          .containsEntry("k", "v");
      assertThat(catalog.commitSeq()).isEqualTo(1);
    }
  }
}
