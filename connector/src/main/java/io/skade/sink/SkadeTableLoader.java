package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.maintenance.MaintainedTable;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.TableLoader;

/**
 * Loads a table for Iceberg's Flink operators (those of {@link SkadeSink}, or Iceberg's own source)
 * through a {@link CatalogConnection}: the skade catalog shared in the JVM, or, with the property
 * {@code uri}, the skade server that owns it. Either way a committer commits through the catalog's
 * one commit path (and its commit feed) and a reader sees new snapshots on each refresh, without
 * opening the single-owner RocksDB store a second time, as Iceberg's {@code CatalogLoader.custom}
 * would.
 */
public final class SkadeTableLoader implements TableLoader {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table;
  private final boolean maintained;
  private transient CatalogConnection connection;

  /** Loads {@code table} of the catalog {@code catalogProperties} name. */
  public SkadeTableLoader(Map<String, String> catalogProperties, TableIdentifier table) {
    this(catalogProperties, table, false);
  }

  private SkadeTableLoader(
      Map<String, String> catalogProperties, TableIdentifier table, boolean maintained) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
    this.maintained = maintained;
  }

  /**
   * Loads the table for Iceberg's maintenance: its compactions also remove the delete files they
   * leave dangling, and its expiries keep what the table's consumers need ({@link
   * MaintainedTable}).
   */
  public static SkadeTableLoader forMaintenance(
      Map<String, String> catalogProperties, TableIdentifier table) {
    return new SkadeTableLoader(catalogProperties, table, true);
  }

  @Override
  public void open() {
    if (connection == null) {
      // On a TaskManager: never creates a catalog (SkadeCatalog.inTask).
      connection = CatalogConnection.forWriting(SkadeCatalog.inTask(catalogProperties));
    }
  }

  @Override
  public boolean isOpen() {
    return connection != null;
  }

  @Override
  public Table loadTable() {
    if (connection == null) {
      throw new IllegalStateException("skade table loader for " + table + " is not open");
    }
    TableIdentifier identifier = TableIdentifier.parse(table);
    Table loaded = load(identifier);
    return maintained
        ? MaintainedTable.of(loaded, () -> connection.consumers().consumers(identifier))
        : loaded;
  }

  /**
   * Through a server, the table's refreshes and commits ride its restarts: the connection's catalog
   * loads tables that ride its retry policy.
   */
  private Table load(TableIdentifier identifier) {
    return connection.catalog().loadTable(identifier);
  }

  @Override
  @SuppressWarnings({"checkstyle:NoClone", "checkstyle:SuperClone"})
  public SkadeTableLoader clone() {
    return new SkadeTableLoader(catalogProperties, TableIdentifier.parse(table), maintained);
  }

  @Override
  public void close() {
    if (connection != null) {
      connection.close();
      connection = null;
    }
  }

  @Override
  public String toString() {
    return "skade table " + table;
  }
}
