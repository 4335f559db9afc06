package io.skade.catalog;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;

/** Small helpers shared by the catalog-store tests. */
final class Catalogs {
  static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  static final Namespace DB = Namespace.of("db");

  private Catalogs() {}

  static SkadeCatalog open(Path warehouse) {
    return open(warehouse, Map.of());
  }

  static SkadeCatalog open(Path warehouse, Map<String, String> extra) {
    Map<String, String> props = new HashMap<>(extra);
    props.put("warehouse", warehouse.toString());
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("test", props);
    return catalog;
  }

  /** Creates {@code db.<name>} with retries tuned for tests that commit concurrently. */
  static Table createTable(SkadeCatalog catalog, String name) {
    if (!catalog.namespaceExists(DB)) {
      catalog.createNamespace(DB);
    }
    return catalog
        .buildTable(TableIdentifier.of(DB, name), SCHEMA)
        .withProperty(TableProperties.COMMIT_NUM_RETRIES, "1000")
        .withProperty(TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "1")
        .withProperty(TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "20")
        .create();
  }

  /** A data file entry (the file itself need not exist for a catalog-level test). */
  static DataFile dataFile(String name) {
    return DataFiles.builder(PartitionSpec.unpartitioned())
        .withPath("/data/" + name + ".parquet")
        .withFileSizeInBytes(10)
        .withRecordCount(1)
        .withFormat(FileFormat.PARQUET)
        .build();
  }

  /** The cursor of a consumer that has read table {@code id} up to {@code snapshotId}. */
  static ConsumerCursor cursorAt(SkadeCatalog catalog, TableIdentifier id, long snapshotId) {
    return new ConsumerCursor(
        id, catalog.loadTable(id).uuid().toString(), snapshotId, catalog.commitSeq());
  }

  static ConsumerCursor cursorAtCurrent(SkadeCatalog catalog, TableIdentifier id) {
    return cursorAt(catalog, id, catalog.loadTable(id).currentSnapshot().snapshotId());
  }

  static void append(Table table, String fileName) {
    table.newFastAppend().appendFile(dataFile(fileName)).commit();
  }
}
