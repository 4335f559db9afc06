package io.skade.benchmarks;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.hadoop.HadoopFileIO;

/**
 * Loads a table read-only from one metadata file, so Iceberg's Flink source can read the very files
 * a benchmark wrote without opening the (single-owner) skade catalog a second time.
 */
final class StaticTableLoader implements TableLoader {
  private final String metadataLocation;
  private transient Table table;

  StaticTableLoader(String metadataLocation) {
    this.metadataLocation = metadataLocation;
  }

  @Override
  public void open() {
    table =
        new BaseTable(
            new StaticTableOperations(metadataLocation, new HadoopFileIO(new Configuration())),
            metadataLocation);
  }

  @Override
  public boolean isOpen() {
    return table != null;
  }

  @Override
  public Table loadTable() {
    if (table == null) {
      open();
    }
    return table;
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public TableLoader clone() {
    return new StaticTableLoader(metadataLocation);
  }

  @Override
  public void close() {
    table = null;
  }
}
