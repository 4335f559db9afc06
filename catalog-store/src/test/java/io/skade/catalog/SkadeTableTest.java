package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every way the catalog hands out a table gives a {@link SkadeTable}, whose appends do their
 * manifest work in the committing thread; metadata tables stay Iceberg's.
 */
class SkadeTableTest {
  @TempDir Path warehouse;

  @Test
  void createdLoadedAndRegisteredTablesAreSkadeTablesAndMetadataTablesAreIcebergs()
      throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Catalogs.DB);
      TableIdentifier id = TableIdentifier.of(Catalogs.DB, "t");
      Table created = catalog.createTable(id, Catalogs.SCHEMA);
      Catalogs.append(created, "a");
      created.newAppend().appendFile(Catalogs.dataFile("b")).commit();
      Table loaded = catalog.loadTable(id);
      String location = ((HasTableOperations) loaded).operations().current().metadataFileLocation();
      catalog.dropTable(id, false);
      Table registered = catalog.registerTable(id, location);

      assertThat(created).isInstanceOf(SkadeTable.class);
      assertThat(loaded).isInstanceOf(SkadeTable.class);
      assertThat(registered).isInstanceOf(SkadeTable.class);
      assertThat(registered.currentSnapshot().allManifests(registered.io())).hasSize(2);
      assertThat(catalog.loadTable(TableIdentifier.of("db", "t", "snapshots")))
          .isNotInstanceOf(SkadeTable.class);
    }
  }
}
