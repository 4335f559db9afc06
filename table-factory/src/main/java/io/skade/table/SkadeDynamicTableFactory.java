package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.BUCKET;
import static io.skade.table.SkadeConnectorOptions.BUCKET_KEY;
import static io.skade.table.SkadeConnectorOptions.CATALOG_PATH;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_BEFORE_IMAGE;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_MODE;
import static io.skade.table.SkadeConnectorOptions.DATABASE;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_ACTOR;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_OPENLINEAGE_URL;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_SINK;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ASYNC;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ASYNC_THREADS;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_AS_OF_RETENTION;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_DISK_CACHE_DIR;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_DISK_CACHE_ENABLED;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_DISK_CACHE_MAX_BYTES;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ROW_CACHE_MAX_ROWS;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_COMPACT_DATA_FILES;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_COMPACT_DELETE_FILES;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_ENABLED;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_ORPHAN_MIN_AGE;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_SNAPSHOT_MAX_AGE;
import static io.skade.table.SkadeConnectorOptions.MAINTENANCE_SNAPSHOT_RETAIN_LAST;
import static io.skade.table.SkadeConnectorOptions.SCAN_APPEND_ONLY;
import static io.skade.table.SkadeConnectorOptions.SCAN_BOUNDED;
import static io.skade.table.SkadeConnectorOptions.SCAN_BRANCH;
import static io.skade.table.SkadeConnectorOptions.SCAN_CONSISTENCY;
import static io.skade.table.SkadeConnectorOptions.SCAN_CONSUMER_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_TAG;
import static io.skade.table.SkadeConnectorOptions.SCAN_PARALLELISM;
import static io.skade.table.SkadeConnectorOptions.SCAN_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_COMMIT_SEQ;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_MODE;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS;
import static io.skade.table.SkadeConnectorOptions.SCAN_START_TAG;
import static io.skade.table.SkadeConnectorOptions.SCAN_TABLES;
import static io.skade.table.SkadeConnectorOptions.SCAN_TAG;
import static io.skade.table.SkadeConnectorOptions.SERVER_RETRY_TIMEOUT;
import static io.skade.table.SkadeConnectorOptions.SINK_BRANCH;
import static io.skade.table.SkadeConnectorOptions.SINK_PARALLELISM;
import static io.skade.table.SkadeConnectorOptions.TABLE;
import static io.skade.table.SkadeConnectorOptions.TOKEN;
import static io.skade.table.SkadeConnectorOptions.URI;
import static io.skade.table.SkadeConnectorOptions.WAREHOUSE;

import io.skade.catalog.CatalogConnection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.FlinkSchemaUtil;

/**
 * The {@code skade} connector of Flink SQL: {@code CREATE TABLE t (...) WITH ('connector' =
 * 'skade', 'warehouse' = '/data/warehouse')} (or {@code 'uri' = 'http://catalog-host:8181'}, a
 * skade server) reads the table's changelog and writes upserts, deletes and overwrites through the
 * skade catalog of the warehouse (or the server's). Tables of a {@code skade} catalog ({@link
 * SkadeCatalogFactory}) use it too, with the catalog's warehouse.
 */
public final class SkadeDynamicTableFactory
    implements DynamicTableSourceFactory, DynamicTableSinkFactory {
  /** The connector's identifier, {@code skade}. */
  public static final String IDENTIFIER = "skade";

  /** The catalog's properties when the factory serves a skade catalog's tables; else null. */
  private final Map<String, String> catalogProperties;

  /** The factory of {@code 'connector' = 'skade'} tables. */
  public SkadeDynamicTableFactory() {
    this(null);
  }

  SkadeDynamicTableFactory(Map<String, String> catalogProperties) {
    this.catalogProperties = catalogProperties == null ? null : Map.copyOf(catalogProperties);
  }

  @Override
  public String factoryIdentifier() {
    return IDENTIFIER;
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return Set.of(); // 'warehouse' or 'uri', checked with the other options
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    Set<ConfigOption<?>> options = new LinkedHashSet<>();
    if (catalogProperties == null) {
      options.addAll(
          List.of(
              WAREHOUSE,
              URI,
              TOKEN,
              SERVER_RETRY_TIMEOUT,
              CATALOG_PATH,
              DATABASE,
              TABLE,
              LINEAGE_SINK,
              LINEAGE_OPENLINEAGE_URL,
              SCAN_TABLES,
              SCAN_CONSISTENCY));
    }
    options.addAll(
        List.of(
            SCAN_STARTUP_MODE,
            SCAN_STARTUP_SNAPSHOT_ID,
            SCAN_STARTUP_TIMESTAMP_MILLIS,
            SCAN_STARTUP_COMMIT_SEQ,
            SCAN_BOUNDED,
            SCAN_APPEND_ONLY,
            SCAN_END_SNAPSHOT_ID,
            SCAN_TAG,
            SCAN_BRANCH,
            SCAN_START_TAG,
            SCAN_END_TAG,
            SCAN_POLL_INTERVAL,
            SCAN_CONSUMER_ID,
            CHANGELOG_MODE,
            CHANGELOG_BEFORE_IMAGE,
            SCAN_PARALLELISM,
            SINK_PARALLELISM,
            SINK_BRANCH,
            LOOKUP_ASYNC,
            LOOKUP_ASYNC_THREADS,
            LOOKUP_SNAPSHOT_ID,
            LOOKUP_POLL_INTERVAL,
            LOOKUP_ROW_CACHE_MAX_ROWS,
            LOOKUP_DISK_CACHE_ENABLED,
            LOOKUP_DISK_CACHE_DIR,
            LOOKUP_DISK_CACHE_MAX_BYTES,
            LOOKUP_AS_OF_RETENTION,
            LookupOptions.CACHE_TYPE,
            LookupOptions.MAX_RETRIES,
            LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS,
            LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE,
            LookupOptions.PARTIAL_CACHE_MAX_ROWS,
            LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY,
            LINEAGE_ACTOR,
            MAINTENANCE_ENABLED,
            MAINTENANCE_COMPACT_DATA_FILES,
            MAINTENANCE_COMPACT_DELETE_FILES,
            MAINTENANCE_SNAPSHOT_MAX_AGE,
            MAINTENANCE_SNAPSHOT_RETAIN_LAST,
            MAINTENANCE_ORPHAN_MIN_AGE,
            MAINTENANCE_INTERVAL,
            BUCKET,
            BUCKET_KEY));
    return options;
  }

  @Override
  public DynamicTableSource createDynamicTableSource(Context context) {
    String name = context.getObjectIdentifier().getObjectName();
    if (catalogProperties != null && name.contains("$")) {
      return SkadeMetadataTables.source(
          catalogProperties, context.getObjectIdentifier().toObjectPath(), context);
    }
    if (catalogProperties == null
        && context.getCatalogTable().getOptions().containsKey(SCAN_TABLES.key())) {
      return SkadeDatabaseTableSource.of(CheckedOptions.declared(this, context), context);
    }
    CheckedOptions.Source source = CheckedOptions.source(this, context, catalogProperties);
    CheckedOptions.Location location = source.location();
    ResolvedSchema physical =
        TableResolution.physical(context.getCatalogTable().getResolvedSchema());
    SourceWatermarks watermarks =
        SourceWatermarks.of(
            location.table().toString(),
            Configuration.fromMap(context.getCatalogTable().getOptions()),
            context.getConfiguration(),
            context.getCatalogTable().getResolvedSchema());
    Schema schema;
    BucketShuffle buckets;
    SkadeTableSource.Scan scan;
    try (CatalogConnection connection = CatalogConnection.open(location.catalogProperties())) {
      planned(context, location, connection);
      Table table = TableResolution.load(connection, location.table());
      source.keys().afterLoading(table);
      TableResolution.requireCompatible(table, location.table(), physical, false);
      schema = table.schema();
      buckets = BucketShuffle.of(table).orElse(null);
      scan = source.refs().resolve(source.scan(), table, connection);
    }
    return new SkadeTableSource(
        scan, source.lookup(), schema, physical.toPhysicalRowDataType(), buckets, watermarks);
  }

  @Override
  public DynamicTableSink createDynamicTableSink(Context context) {
    CheckedOptions.Sink sink = CheckedOptions.sink(this, context, catalogProperties);
    CheckedOptions.Location location = sink.location();
    ResolvedSchema physical =
        TableResolution.physical(context.getCatalogTable().getResolvedSchema());
    // Checked before the catalog is opened; used only if the table is created.
    Optional<TableBuckets> buckets =
        TableBuckets.of(
            location.table().toString(),
            context.getCatalogTable().getOptions(),
            FlinkSchemaUtil.convert(physical));
    Schema schema;
    try (CatalogConnection connection =
        CatalogConnection.forWriting(location.catalogProperties())) {
      planned(context, location, connection);
      Table table =
          TableResolution.loadOrCreate(
              connection,
              location.table(),
              physical,
              context.getCatalogTable().getPartitionKeys(),
              buckets);
      sink.keys().afterLoading(table);
      TableResolution.requireCompatible(table, location.table(), physical, true);
      schema = table.schema();
    }
    return new SkadeTableSink(
        location.catalogProperties(),
        location.table(),
        schema,
        physical,
        context.getConfiguration(),
        sink.parallelism(),
        sink.actor(),
        sink.maintenance(),
        sink.branch());
  }

  /** Tells the job listener which skade table the Flink table is, for lineage. */
  private static void planned(
      Context context, CheckedOptions.Location location, CatalogConnection connection) {
    io.skade.lineage.flink.SkadeJobListenerFactory.planned(
        context.getObjectIdentifier().asSummaryString(),
        connection.location(),
        location.table().toString(),
        connection.isRemote() ? location.catalogProperties() : null);
  }
}
