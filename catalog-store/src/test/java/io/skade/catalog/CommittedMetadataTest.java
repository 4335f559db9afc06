package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A metadata file this JVM committed, or read once, reads back from memory, equal to the file
 * parsed.
 */
class CommittedMetadataTest {
  @TempDir Path warehouse;

  @Test
  void everyKindOfCommitReadsBackAsItsFileParses() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      List<String> locations = new ArrayList<>();
      locations.add(location(table));
      Catalogs.append(table, "a");
      long first = table.currentSnapshot().snapshotId();
      locations.add(location(table));
      table.newAppend().appendFile(Catalogs.dataFile("b")).commit(); // a merge append
      locations.add(location(table));
      table.updateSchema().addColumn("name", Types.StringType.get()).commit();
      locations.add(location(table));
      table.updateProperties().set("owner", "test").commit();
      locations.add(location(table));
      table.manageSnapshots().rollbackTo(first).commit();
      locations.add(location(table));
      Catalogs.append(table, "c");
      table.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit();
      locations.add(location(table));

      for (String location : locations) {
        TableMetadata fromMemory = CommittedMetadata.read(catalog.io(), location);
        TableMetadata parsed = TableMetadataParser.read(catalog.io(), location);
        assertThat(fromMemory)
            .as(location)
            .isNotSameAs(parsed)
            .isSameAs(CommittedMetadata.read(catalog.io(), location));
        assertThat(fromMemory.metadataFileLocation()).isEqualTo(location);
        assertThat(fromMemory.changes()).isEmpty();
        assertThat(TableMetadataParser.toJson(fromMemory))
            .as(location)
            .isEqualTo(TableMetadataParser.toJson(parsed));
      }
    }
  }

  @Test
  void aMetadataFileDeletedBehindTheCatalogsBackIsNotServedFromMemory() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "a");
      String location = location(table);
      catalog.io().deleteFile(location);

      assertThatThrownBy(() -> CommittedMetadata.read(catalog.io(), location))
          .isInstanceOf(NotFoundException.class);
    }
  }

  @Test
  void aMetadataFileThisJvmDidNotWriteIsParsedOnceThenServedFromMemory() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "a");
      // A copy under a new name, as another process would have written it.
      String copy = warehouse.resolve("copied.metadata.json").toString();
      TableMetadataParser.overwrite(
          TableMetadataParser.read(catalog.io(), location(table)),
          catalog.io().newOutputFile(copy));

      TableMetadata first = CommittedMetadata.read(catalog.io(), copy);
      assertThat(CommittedMetadata.read(catalog.io(), copy)).isSameAs(first);
      assertThat(TableMetadataParser.toJson(first))
          .isEqualTo(TableMetadataParser.toJson(TableMetadataParser.read(catalog.io(), copy)));
      catalog.io().deleteFile(copy);
      assertThatThrownBy(() -> CommittedMetadata.read(catalog.io(), copy))
          .isInstanceOf(NotFoundException.class);
    }
  }

  private static String location(Table table) {
    table.refresh();
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }
}
