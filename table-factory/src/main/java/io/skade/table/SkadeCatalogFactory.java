package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.CATALOG_PATH;
import static io.skade.table.SkadeConnectorOptions.DEFAULT_DATABASE;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_ACTOR;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_OPENLINEAGE_URL;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_SINK;
import static io.skade.table.SkadeConnectorOptions.SERVER_RETRY_TIMEOUT;
import static io.skade.table.SkadeConnectorOptions.TOKEN;
import static io.skade.table.SkadeConnectorOptions.URI;
import static io.skade.table.SkadeConnectorOptions.WAREHOUSE;

import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.catalog.Catalog;
import org.apache.flink.table.factories.CatalogFactory;

/**
 * The {@code skade} catalog type: {@code CREATE CATALOG c WITH ('type' = 'skade', 'warehouse' =
 * '/data/warehouse')}, or {@code 'uri' = 'http://catalog-host:8181'} for the catalog a skade server
 * owns. Its databases are the catalog's namespaces; its tables persist in the RocksDB catalog (this
 * JVM's, or the server's) and are read and written with the {@code skade} connector.
 */
public final class SkadeCatalogFactory implements CatalogFactory {

  @Override
  public String factoryIdentifier() {
    return SkadeDynamicTableFactory.IDENTIFIER;
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return Set.of(); // 'warehouse' or 'uri', checked with the other options
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    return Set.of(
        WAREHOUSE,
        URI,
        TOKEN,
        SERVER_RETRY_TIMEOUT,
        CATALOG_PATH,
        DEFAULT_DATABASE,
        LINEAGE_SINK,
        LINEAGE_OPENLINEAGE_URL,
        LINEAGE_ACTOR);
  }

  /** Checks every option before the catalog is opened, then opens it (shared in this JVM). */
  @Override
  public Catalog createCatalog(Context context) {
    CheckedOptions.CatalogSettings settings = CheckedOptions.catalog(this, context);
    return new SkadeFlinkCatalog(
        context.getName(), settings.defaultDatabase(), settings.properties());
  }
}
