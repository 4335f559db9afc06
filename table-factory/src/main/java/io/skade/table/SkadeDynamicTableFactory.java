package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.CATALOG_PATH;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_BEFORE_IMAGE;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_MODE;
import static io.skade.table.SkadeConnectorOptions.DATABASE;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_ACTOR;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_OPENLINEAGE_URL;
import static io.skade.table.SkadeConnectorOptions.LINEAGE_SINK;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ASYNC;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ASYNC_THREADS;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_ROW_CACHE_MAX_ROWS;
import static io.skade.table.SkadeConnectorOptions.LOOKUP_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_BOUNDED;
import static io.skade.table.SkadeConnectorOptions.SCAN_CONSUMER_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_COMMIT_SEQ;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_MODE;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS;
import static io.skade.table.SkadeConnectorOptions.SINK_PARALLELISM;
import static io.skade.table.SkadeConnectorOptions.TABLE;
import static io.skade.table.SkadeConnectorOptions.WAREHOUSE;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.lineage.CatalogLineage;
import io.skade.source.StartupMode;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.connector.source.lookup.cache.DefaultLookupCache;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The {@code skade} connector of Flink SQL: {@code CREATE TABLE t (...) WITH ('connector' =
 * 'skade', 'warehouse' = '/data/warehouse')} reads the table's changelog and writes upserts,
 * deletes and overwrites through the skade catalog in the warehouse. Tables of a {@code skade}
 * catalog ({@link SkadeCatalogFactory}) use it too, with the catalog's warehouse.
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
    return catalogProperties == null ? Set.of(WAREHOUSE) : Set.of();
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    Set<ConfigOption<?>> options = new LinkedHashSet<>();
    if (catalogProperties == null) {
      options.addAll(List.of(CATALOG_PATH, DATABASE, TABLE, LINEAGE_SINK,
          LINEAGE_OPENLINEAGE_URL));
    }
    options.addAll(List.of(SCAN_STARTUP_MODE, SCAN_STARTUP_SNAPSHOT_ID,
        SCAN_STARTUP_TIMESTAMP_MILLIS, SCAN_STARTUP_COMMIT_SEQ, SCAN_BOUNDED,
        SCAN_END_SNAPSHOT_ID, SCAN_POLL_INTERVAL, SCAN_CONSUMER_ID, CHANGELOG_MODE,
        CHANGELOG_BEFORE_IMAGE, SINK_PARALLELISM, LOOKUP_ASYNC, LOOKUP_ASYNC_THREADS,
        LOOKUP_SNAPSHOT_ID, LOOKUP_POLL_INTERVAL, LOOKUP_ROW_CACHE_MAX_ROWS,
        LookupOptions.CACHE_TYPE, LookupOptions.MAX_RETRIES,
        LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS,
        LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE, LookupOptions.PARTIAL_CACHE_MAX_ROWS,
        LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY, LINEAGE_ACTOR));
    return options;
  }

  @Override
  public DynamicTableSource createDynamicTableSource(Context context) {
    Resolved resolved = resolve(context);
    ReadableConfig options = resolved.helper.getOptions();
    ResolvedSchema physical = TableResolution.physical(context.getCatalogTable()
        .getResolvedSchema());
    boolean batch = context.getConfiguration().get(ExecutionOptions.RUNTIME_MODE)
        == RuntimeExecutionMode.BATCH;
    Schema schema;
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquireOrFollow(resolved.properties)) {
      Table table = TableResolution.load(handle.catalog(), resolved.table,
          resolved.properties.get(WAREHOUSE.key()));
      resolved.validate(table);
      TableResolution.requireCompatible(table, resolved.table, physical, false);
      schema = table.schema();
    }
    SkadeTableSource.Scan scan = scan(options, resolved, batch, physical);
    return new SkadeTableSource(scan, lookup(options), schema,
        physical.toPhysicalRowDataType());
  }

  @Override
  public DynamicTableSink createDynamicTableSink(Context context) {
    Resolved resolved = resolve(context);
    ReadableConfig options = resolved.helper.getOptions();
    ResolvedSchema physical = TableResolution.physical(context.getCatalogTable()
        .getResolvedSchema());
    Integer parallelism = options.getOptional(SINK_PARALLELISM).orElse(null);
    if (parallelism != null && parallelism <= 0) {
      throw new ValidationException("option '" + SINK_PARALLELISM.key() + "' must be positive,"
          + " got " + parallelism);
    }
    Schema schema;
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(resolved.properties)) {
      Table table = TableResolution.loadOrCreate(handle.catalog(), resolved.table, physical,
          context.getCatalogTable().getPartitionKeys());
      resolved.validate(table);
      TableResolution.requireCompatible(table, resolved.table, physical, true);
      schema = table.schema();
    }
    return new SkadeTableSink(resolved.properties, resolved.table, schema, physical,
        context.getConfiguration(), parallelism, options.getOptional(LINEAGE_ACTOR).orElse(null));
  }

  /**
   * Adds the lineage options that are catalog properties ({@code lineage.sink} and its URL) to
   * {@code properties}, when set; a bad sink fails here, naming the option.
   */
  static void lineageProperties(ReadableConfig options, Map<String, String> properties) {
    options.getOptional(LINEAGE_SINK).ifPresent(sink -> {
      if (!CatalogLineage.SINKS.contains(sink)) {
        throw new ValidationException("option '" + LINEAGE_SINK.key() + "' is '" + sink
            + "'; " + CatalogLineage.acceptedSinks());
      }
      if (!sink.equals("none")) {
        properties.put(LINEAGE_SINK.key(), sink);
      }
    });
    options.getOptional(LINEAGE_OPENLINEAGE_URL).ifPresent(url ->
        properties.put(LINEAGE_OPENLINEAGE_URL.key(), url));
  }

  /** The options, catalog and table of a declaration. */
  private final class Resolved {
    final FactoryUtil.TableFactoryHelper helper;
    final Map<String, String> properties;
    final TableIdentifier table;

    Resolved(FactoryUtil.TableFactoryHelper helper, Map<String, String> properties,
        TableIdentifier table) {
      this.helper = helper;
      this.properties = properties;
      this.table = table;
    }

    /**
     * Rejects unknown options. A catalog table also carries its Iceberg table properties as
     * options; only those are let through.
     */
    void validate(Table loaded) {
      if (catalogProperties == null) {
        return; // validated up front
      }
      helper.validateExcept(loaded.properties().keySet().toArray(String[]::new));
    }
  }

  private Resolved resolve(Context context) {
    Resolved resolved = resolveOptions(context);
    SkadeJobListenerFactory.planned(context.getObjectIdentifier().asSummaryString(),
        SkadeCatalog.warehouse(resolved.table.toString(), resolved.properties),
        resolved.table.toString());
    return resolved;
  }

  private Resolved resolveOptions(Context context) {
    FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
    ReadableConfig options = helper.getOptions();
    if (catalogProperties != null) {
      return new Resolved(helper, catalogProperties, TableIdentifier.of(
          Namespace.of(context.getObjectIdentifier().getDatabaseName()),
          context.getObjectIdentifier().getObjectName()));
    }
    helper.validate();
    Map<String, String> properties = new HashMap<>();
    properties.put(WAREHOUSE.key(), options.get(WAREHOUSE));
    options.getOptional(CATALOG_PATH).ifPresent(path -> properties.put(CATALOG_PATH.key(), path));
    lineageProperties(options, properties);
    String database = options.getOptional(DATABASE)
        .orElse(context.getObjectIdentifier().getDatabaseName());
    String name = options.getOptional(TABLE).orElse(context.getObjectIdentifier().getObjectName());
    return new Resolved(helper, properties, TableIdentifier.of(Namespace.of(database), name));
  }

  private static SkadeTableSource.Scan scan(ReadableConfig options, Resolved resolved,
      boolean batch, ResolvedSchema physical) {
    StartupMode mode = parse(SCAN_STARTUP_MODE, options.get(SCAN_STARTUP_MODE),
        StartupMode::of);
    Map<StartupMode, ConfigOption<Long>> valueOptions = Map.of(
        StartupMode.FROM_SNAPSHOT, SCAN_STARTUP_SNAPSHOT_ID,
        StartupMode.FROM_TIMESTAMP, SCAN_STARTUP_TIMESTAMP_MILLIS,
        StartupMode.FROM_COMMIT_SEQ, SCAN_STARTUP_COMMIT_SEQ);
    Long value = null;
    for (Map.Entry<StartupMode, ConfigOption<Long>> entry : valueOptions.entrySet()) {
      ConfigOption<Long> option = entry.getValue();
      if (entry.getKey() == mode) {
        value = options.getOptional(option).orElseThrow(() -> new ValidationException(
            "option '" + SCAN_STARTUP_MODE.key() + "' = '" + mode.value() + "' needs option '"
                + option.key() + "'; set it"));
      } else if (options.getOptional(option).isPresent()) {
        throw new ValidationException("option '" + option.key() + "' applies only to '"
            + SCAN_STARTUP_MODE.key() + "' = '" + entry.getKey().value() + "', but the mode is '"
            + mode.value() + "'; remove it or change the mode");
      }
    }
    if (batch && mode != StartupMode.FULL) {
      throw new ValidationException("option '" + SCAN_STARTUP_MODE.key() + "' = '"
          + mode.value() + "' reads changes, which batch mode cannot take: a batch query reads"
          + " the table's rows ('full', optionally as of '" + SCAN_END_SNAPSHOT_ID.key()
          + "'). Run the query in streaming mode to read changes");
    }
    Mode changelogMode = parse(CHANGELOG_MODE, options.get(CHANGELOG_MODE),
        text -> switch (text) {
          case "per-snapshot" -> Mode.PER_SNAPSHOT;
          case "collapsed" -> Mode.COLLAPSED;
          default -> throw new IllegalArgumentException("use 'per-snapshot' or 'collapsed'");
        });
    BeforeImage beforeImage = parse(CHANGELOG_BEFORE_IMAGE, options.get(CHANGELOG_BEFORE_IMAGE),
        text -> switch (text) {
          case "full" -> BeforeImage.FULL;
          case "key-only" -> BeforeImage.KEY_ONLY;
          default -> throw new IllegalArgumentException("use 'full' or 'key-only'");
        });
    if (beforeImage == BeforeImage.KEY_ONLY && physical.getPrimaryKey().isEmpty()) {
      throw new ValidationException("option '" + CHANGELOG_BEFORE_IMAGE.key() + "' = 'key-only'"
          + " emits upserts, which need a primary key: declare PRIMARY KEY (...) NOT ENFORCED"
          + " (the table's identifier fields), or use 'full'");
    }
    Duration poll = options.get(SCAN_POLL_INTERVAL);
    if (poll.isNegative() || poll.isZero()) {
      throw new ValidationException("option '" + SCAN_POLL_INTERVAL.key() + "' must be"
          + " positive, got " + poll);
    }
    return new SkadeTableSource.Scan(resolved.properties, resolved.table, mode, value,
        options.get(SCAN_BOUNDED), options.getOptional(SCAN_END_SNAPSHOT_ID).orElse(null),
        changelogMode, beforeImage, poll, options.getOptional(SCAN_CONSUMER_ID).orElse(null),
        batch);
  }

  private static SkadeTableSource.Lookup lookup(ReadableConfig options) {
    LookupOptions.LookupCacheType cacheType = options.get(LookupOptions.CACHE_TYPE);
    LookupCache flinkCache = null;
    if (cacheType == LookupOptions.LookupCacheType.PARTIAL) {
      try {
        flinkCache = DefaultLookupCache.fromConfig(options);
      } catch (IllegalArgumentException e) {
        throw new ValidationException("option '" + LookupOptions.CACHE_TYPE.key() + "' = "
            + "'PARTIAL' needs a bound: set '" + LookupOptions.PARTIAL_CACHE_MAX_ROWS.key()
            + "', '" + LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE.key() + "' or '"
            + LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS.key() + "'", e);
      }
    }
    int threads = options.get(LOOKUP_ASYNC_THREADS);
    int retries = options.get(LookupOptions.MAX_RETRIES);
    long rows = options.get(LOOKUP_ROW_CACHE_MAX_ROWS);
    Duration poll = options.get(LOOKUP_POLL_INTERVAL);
    if (threads <= 0 || retries < 0 || rows < 0 || poll.isNegative() || poll.isZero()) {
      throw new ValidationException("lookup options out of range: '"
          + LOOKUP_ASYNC_THREADS.key() + "' = " + threads + " (must be positive), '"
          + LookupOptions.MAX_RETRIES.key() + "' = " + retries + " (0 or more), '"
          + LOOKUP_ROW_CACHE_MAX_ROWS.key() + "' = " + rows + " (0 or more), '"
          + LOOKUP_POLL_INTERVAL.key() + "' = " + poll + " (positive)");
    }
    return new SkadeTableSource.Lookup(options.get(LOOKUP_ASYNC), threads,
        options.getOptional(LOOKUP_SNAPSHOT_ID).orElse(null), poll, retries, cacheType, rows,
        flinkCache);
  }

  private static <T> T parse(ConfigOption<String> option, String text, Function<String, T> parser) {
    try {
      return parser.apply(text.trim().toLowerCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new ValidationException("option '" + option.key() + "' has an invalid value '"
          + text + "': " + e.getMessage(), e);
    }
  }
}
