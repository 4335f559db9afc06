package io.skade.sink;

import org.apache.iceberg.BaseTable;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.LocationProviders;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * A table loader of the table as the job was planned: its metadata and FileIO, no catalog. It
 * writes files where the table's operations would put them and commits nothing.
 */
final class PlannedTableLoader implements TableLoader {
  private static final long serialVersionUID = 1L;
  private final String name;
  private final String metadataJson; // TableMetadata itself does not serialize whole
  private final FileIO io;
  private transient TableMetadata metadata;

  PlannedTableLoader(Table table) {
    this.name = table.name();
    this.metadataJson =
        TableMetadataParser.toJson(((HasTableOperations) table).operations().current());
    this.io = table.io();
  }

  @Override
  public void open() {}

  @Override
  public boolean isOpen() {
    return true;
  }

  @Override
  public Table loadTable() {
    if (metadata == null) {
      metadata = TableMetadataParser.fromJson(metadataJson);
    }
    return new BaseTable(
        new TableOperations() {
          @Override
          public TableMetadata current() {
            return metadata;
          }

          @Override
          public TableMetadata refresh() {
            return metadata;
          }

          @Override
          public void commit(TableMetadata base, TableMetadata updated) {
            throw new UnsupportedOperationException("the table as planned commits nothing");
          }

          @Override
          public FileIO io() {
            return io;
          }

          @Override
          public String metadataFileLocation(String fileName) {
            String dir = metadata.properties().get(TableProperties.WRITE_METADATA_LOCATION);
            return (dir == null ? metadata.location() + "/metadata" : dir) + "/" + fileName;
          }

          @Override
          public LocationProvider locationProvider() {
            return LocationProviders.locationsFor(metadata.location(), metadata.properties());
          }
        },
        name);
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public TableLoader clone() {
    return this;
  }

  @Override
  public void close() {}
}
