package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.BUCKET;
import static io.skade.table.SkadeConnectorOptions.CATALOG_PATH;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_BEFORE_IMAGE;
import static io.skade.table.SkadeConnectorOptions.CHANGELOG_MODE;
import static io.skade.table.SkadeConnectorOptions.DATABASE;
import static io.skade.table.SkadeConnectorOptions.DEFAULT_DATABASE;
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
import static io.skade.table.SkadeConnectorOptions.SCAN_CONSUMER_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_PARALLELISM;
import static io.skade.table.SkadeConnectorOptions.SCAN_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_COMMIT_SEQ;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_MODE;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_SNAPSHOT_ID;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS;
import static io.skade.table.SkadeConnectorOptions.SERVER_RETRY_TIMEOUT;
import static io.skade.table.SkadeConnectorOptions.SINK_BRANCH;
import static io.skade.table.SkadeConnectorOptions.SINK_PARALLELISM;
import static io.skade.table.SkadeConnectorOptions.TABLE;
import static io.skade.table.SkadeConnectorOptions.TOKEN;
import static io.skade.table.SkadeConnectorOptions.URI;
import static io.skade.table.SkadeConnectorOptions.WAREHOUSE;
import static java.util.Map.entry;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.CACHE_TYPE;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.MAX_RETRIES;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE;
import static org.apache.flink.table.connector.source.lookup.LookupOptions.PARTIAL_CACHE_MAX_ROWS;

import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.lineage.CatalogLineage;
import io.skade.lookup.TableLookup;
import io.skade.sink.SinkMaintenance;
import io.skade.source.StartupMode;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.ObjectIdentifier;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.source.lookup.LookupOptions.LookupCacheType;
import org.apache.flink.table.connector.source.lookup.cache.DefaultLookupCache;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.factories.CatalogFactory;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.factories.Factory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The options of a skade table or catalog, turned into checked values before anything is opened: no
 * catalog, directory or table is touched until every option has passed. Unknown keys fail with the
 * closest known key suggested; a value that does not parse, is out of range or is not one of the
 * accepted ones fails naming the option, the value and what is accepted; so do options that need
 * one another ({@code from-snapshot} and its snapshot id) or exclude one another (a companion of
 * another mode). The one place where skade's SQL options are read.
 */
final class CheckedOptions {
  private CheckedOptions() {}

  private static final Map<String, StartupMode> STARTUP_MODES =
      Arrays.stream(StartupMode.values())
          .collect(
              Collectors.toMap(StartupMode::value, mode -> mode, (a, b) -> a, LinkedHashMap::new));

  private static final Map<String, Mode> CHANGELOG_MODES =
      choices("per-snapshot", Mode.PER_SNAPSHOT, "collapsed", Mode.COLLAPSED);

  private static final Map<String, BeforeImage> BEFORE_IMAGES =
      choices("full", BeforeImage.FULL, "key-only", BeforeImage.KEY_ONLY);

  /** Each startup mode that takes a value, and the option giving it. */
  private static final Map<StartupMode, ConfigOption<Long>> STARTUP_VALUES =
      choices(
          StartupMode.FROM_SNAPSHOT, SCAN_STARTUP_SNAPSHOT_ID,
          StartupMode.FROM_TIMESTAMP, SCAN_STARTUP_TIMESTAMP_MILLIS,
          StartupMode.FROM_COMMIT_SEQ, SCAN_STARTUP_COMMIT_SEQ);

  /** The options that bound Flink's PARTIAL cache: one of them is needed. */
  private static final List<ConfigOption<?>> PARTIAL_CACHE_BOUNDS =
      List.of(
          PARTIAL_CACHE_MAX_ROWS,
          PARTIAL_CACHE_EXPIRE_AFTER_WRITE,
          PARTIAL_CACHE_EXPIRE_AFTER_ACCESS);

  private static final List<ConfigOption<?>> PARTIAL_CACHE_OPTIONS =
      Stream.concat(PARTIAL_CACHE_BOUNDS.stream(), Stream.of(PARTIAL_CACHE_CACHE_MISSING_KEY))
          .toList();

  private static final String SNAPSHOT_ID = "a snapshot id, an integer";
  private static final String BOOLEAN = "'true' or 'false'";
  private static final String DURATION =
      "a positive duration such as '500 ms', '2 s' or" + " '1 min'";
  private static final String OPENLINEAGE_URLS =
      "an OpenLineage collector's http:// or" + " https:// URL, file:<path> or console";

  /** What each option accepts, as its errors say; an option missing here takes any string. */
  private static final Map<String, String> ACCEPTED =
      Map.ofEntries(
          entry(SCAN_STARTUP_MODE.key(), quoted(STARTUP_MODES.keySet())),
          entry(SCAN_STARTUP_SNAPSHOT_ID.key(), SNAPSHOT_ID),
          entry(SCAN_STARTUP_TIMESTAMP_MILLIS.key(), "epoch milliseconds, 0 or more"),
          entry(SCAN_STARTUP_COMMIT_SEQ.key(), "a catalog commit_seq, 0 or more"),
          entry(SCAN_BOUNDED.key(), BOOLEAN),
          entry(SCAN_APPEND_ONLY.key(), BOOLEAN),
          entry(SCAN_END_SNAPSHOT_ID.key(), SNAPSHOT_ID),
          entry(SCAN_POLL_INTERVAL.key(), DURATION),
          entry(CHANGELOG_MODE.key(), quoted(CHANGELOG_MODES.keySet())),
          entry(CHANGELOG_BEFORE_IMAGE.key(), quoted(BEFORE_IMAGES.keySet())),
          entry(LOOKUP_ASYNC.key(), BOOLEAN),
          entry(LOOKUP_ASYNC_THREADS.key(), "a positive integer"),
          entry(LOOKUP_SNAPSHOT_ID.key(), SNAPSHOT_ID),
          entry(
              LOOKUP_POLL_INTERVAL.key(),
              "'0 s' (every probe sees every commit durable when it" + " began) or " + DURATION),
          entry(LOOKUP_ROW_CACHE_MAX_ROWS.key(), "0 (off) or a positive number of rows"),
          entry(LOOKUP_DISK_CACHE_ENABLED.key(), BOOLEAN),
          entry(LOOKUP_DISK_CACHE_DIR.key(), "a local directory path, not blank"),
          entry(LOOKUP_DISK_CACHE_MAX_BYTES.key(), "a positive size, e.g. '512 mb' or '2 gb'"),
          entry(LOOKUP_AS_OF_RETENTION.key(), "a positive duration such as '7 d' or '12 h'"),
          entry(
              CACHE_TYPE.key(),
              quoted(Arrays.stream(LookupCacheType.values()).map(Enum::name).toList())),
          entry(MAX_RETRIES.key(), "0 or a positive integer"),
          entry(PARTIAL_CACHE_MAX_ROWS.key(), "a positive number of rows"),
          entry(PARTIAL_CACHE_EXPIRE_AFTER_WRITE.key(), DURATION),
          entry(PARTIAL_CACHE_EXPIRE_AFTER_ACCESS.key(), DURATION),
          entry(PARTIAL_CACHE_CACHE_MISSING_KEY.key(), BOOLEAN),
          entry(SINK_PARALLELISM.key(), "a positive integer"),
          entry(SCAN_PARALLELISM.key(), "a positive integer"),
          entry(BUCKET.key(), "a whole number of buckets, 1 or more, e.g. '8'"),
          entry(MAINTENANCE_ENABLED.key(), BOOLEAN),
          entry(MAINTENANCE_COMPACT_DATA_FILES.key(), "a positive integer"),
          entry(MAINTENANCE_COMPACT_DELETE_FILES.key(), "a positive integer"),
          entry(MAINTENANCE_SNAPSHOT_MAX_AGE.key(), DURATION),
          entry(MAINTENANCE_SNAPSHOT_RETAIN_LAST.key(), "a positive integer"),
          entry(MAINTENANCE_ORPHAN_MIN_AGE.key(), DURATION),
          entry(MAINTENANCE_INTERVAL.key(), DURATION),
          entry(LINEAGE_SINK.key(), quoted(CatalogLineage.SINKS)),
          entry(LINEAGE_OPENLINEAGE_URL.key(), OPENLINEAGE_URLS),
          entry(WAREHOUSE.key(), "a local path or a URI"),
          entry(SERVER_RETRY_TIMEOUT.key(), DURATION));

  /** Where a declaration's table is: the skade catalog's properties and the Iceberg table. */
  record Location(Map<String, String> catalogProperties, TableIdentifier table) {}

  /**
   * The unknown-key check of a declaration. A skade catalog's table carries its Iceberg table
   * properties among its options, which can be told from unknown keys only once it is loaded; every
   * other declaration has been checked already, and this does nothing.
   */
  interface KeyCheck {
    void afterLoading(Table table);
  }

  /** A table source's checked options. */
  record Source(
      Location location,
      SkadeTableSource.Scan scan,
      ScanRefs refs,
      SkadeTableSource.Lookup lookup,
      KeyCheck keys) {}

  /** A table sink's checked options; {@code parallelism} and {@code actor} may be null. */
  record Sink(
      Location location,
      Integer parallelism,
      String actor,
      SinkMaintenance maintenance,
      String branch,
      KeyCheck keys) {}

  /** A {@code skade} catalog's checked options. */
  record CatalogSettings(String defaultDatabase, Map<String, String> properties) {}

  /**
   * The options of a table read by {@code factory}; {@code catalogProperties} are those of the
   * skade catalog serving the table, or null for a {@code 'connector' = 'skade'} table.
   */
  static Source source(
      DynamicTableFactory factory,
      DynamicTableFactory.Context context,
      Map<String, String> catalogProperties) {
    Declaration declaration = new Declaration(factory, context, catalogProperties);
    Location location = declaration.location(context.getObjectIdentifier());
    boolean batch =
        context.getConfiguration().get(ExecutionOptions.RUNTIME_MODE) == RuntimeExecutionMode.BATCH;
    ResolvedSchema physical =
        TableResolution.physical(context.getCatalogTable().getResolvedSchema());
    ScanRefs refs = ScanRefs.of(declaration.options.raw, batch); // named first: it says more
    return new Source(
        location,
        declaration.options.scan(location, batch, physical),
        refs,
        declaration.options.lookup(),
        declaration.keyCheck());
  }

  /** A declaration's options, keys checked, and the catalog they name. */
  record Declared(Map<String, String> catalogProperties, ReadableConfig config) {}

  /**
   * The options of a {@code 'connector' = 'skade'} table that is not one of the catalog's tables (a
   * database changelog, {@code scan.tables}): its keys checked, and its catalog.
   */
  static Declared declared(DynamicTableFactory factory, DynamicTableFactory.Context context) {
    Declaration declaration = new Declaration(factory, context, null);
    return new Declared(declaration.options.catalogProperties(), declaration.options.config);
  }

  /** The options of a table written by {@code factory}; see {@link #source}. */
  static Sink sink(
      DynamicTableFactory factory,
      DynamicTableFactory.Context context,
      Map<String, String> catalogProperties) {
    Declaration declaration = new Declaration(factory, context, catalogProperties);
    Location location = declaration.location(context.getObjectIdentifier());
    Values options = declaration.options;
    String branch = options.config.getOptional(SINK_BRANCH).map(String::trim).orElse(null);
    SinkMaintenance maintenance = options.maintenance();
    if (branch != null && (branch.isEmpty() || maintenance.enabled())) {
      throw new ValidationException(
          "option '"
              + SINK_BRANCH.key()
              + (branch.isEmpty()
                  ? "' is blank; name a branch of the table, or remove the option to write to main"
                  : "' = '"
                      + branch
                      + "' writes to a branch, but '"
                      + MAINTENANCE_ENABLED.key()
                      + "' = 'true' maintains the table's main branch: remove one of them"));
    }
    return new Sink(
        location,
        options.config.getOptional(SINK_PARALLELISM).orElse(null),
        options.config.getOptional(LINEAGE_ACTOR).orElse(null),
        maintenance,
        branch,
        declaration.keyCheck());
  }

  /** The options of a {@code CREATE CATALOG ... WITH ('type' = 'skade', ...)}. */
  static CatalogSettings catalog(CatalogFactory factory, CatalogFactory.Context context) {
    FactoryUtil.CatalogFactoryHelper helper =
        FactoryUtil.createCatalogFactoryHelper(factory, context);
    Values options = new Values(helper.getOptions());
    options.parse(factory);
    UnknownKeys.validate(
        factory,
        options.config.toMap().keySet(),
        StorageOptions.SKIPPED,
        () -> helper.validateExcept(StorageOptions.SKIPPED.toArray(String[]::new)));
    Map<String, String> properties = options.catalogProperties();
    options
        .config
        .getOptional(LINEAGE_ACTOR)
        .ifPresent(actor -> properties.put(LINEAGE_ACTOR.key(), actor));
    return new CatalogSettings(options.config.get(DEFAULT_DATABASE), properties);
  }

  /** The table factory's options of one declaration, parsed and with their keys checked. */
  private static final class Declaration {
    final DynamicTableFactory factory;
    final FactoryUtil.TableFactoryHelper helper;
    final Map<String, String> catalogProperties;
    final Values options;

    Declaration(
        DynamicTableFactory factory,
        DynamicTableFactory.Context context,
        Map<String, String> catalogProperties) {
      this.factory = factory;
      this.helper = FactoryUtil.createTableFactoryHelper(factory, context);
      this.catalogProperties = catalogProperties;
      this.options = new Values(helper.getOptions());
      options.parse(factory);
      options.checkRanges();
      if (catalogProperties == null) {
        UnknownKeys.validate(
            factory,
            options.config.toMap().keySet(),
            StorageOptions.SKIPPED,
            () -> helper.validateExcept(StorageOptions.SKIPPED.toArray(String[]::new)));
      }
    }

    Location location(ObjectIdentifier id) {
      if (catalogProperties != null) {
        return new Location(
            catalogProperties,
            TableIdentifier.of(Namespace.of(id.getDatabaseName()), id.getObjectName()));
      }
      Map<String, String> properties = options.catalogProperties();
      String database = options.config.getOptional(DATABASE).orElse(id.getDatabaseName());
      String name = options.config.getOptional(TABLE).orElse(id.getObjectName());
      return new Location(properties, TableIdentifier.of(Namespace.of(database), name));
    }

    KeyCheck keyCheck() {
      if (catalogProperties == null) {
        return table -> {};
      }
      return table -> {
        String[] tableProperties = table.properties().keySet().toArray(String[]::new);
        if (tableProperties.length == 0) {
          UnknownKeys.validate(
              factory, options.config.toMap().keySet(), Set.of(), helper::validate);
        } else {
          UnknownKeys.validate(
              factory,
              options.config.toMap().keySet(),
              Set.of(tableProperties),
              () -> helper.validateExcept(tableProperties));
        }
      };
    }
  }

  /** Reads and checks option values; every failure names the option, value and accepted. */
  private static final class Values {
    final ReadableConfig config;
    final Map<String, String> raw;

    Values(ReadableConfig config) {
      this.config = config;
      this.raw = config.toMap();
    }

    /** Parses every option of {@code factory} that is set, as Flink would on first use. */
    void parse(Factory factory) {
      Stream.concat(factory.requiredOptions().stream(), factory.optionalOptions().stream())
          .forEach(
              option -> {
                try {
                  config.getOptional(option);
                } catch (IllegalArgumentException e) {
                  throw invalid(option, "does not parse", e);
                }
              });
    }

    /** Checks the ranges and choices of all values, whether the table is read or written. */
    void checkRanges() {
      startupMode();
      choice(CHANGELOG_MODE, CHANGELOG_MODES);
      choice(CHANGELOG_BEFORE_IMAGE, BEFORE_IMAGES);
      atLeast(SCAN_STARTUP_TIMESTAMP_MILLIS, 0);
      atLeast(SCAN_STARTUP_COMMIT_SEQ, 0);
      positive(SCAN_POLL_INTERVAL);
      positive(SERVER_RETRY_TIMEOUT);
      config
          .getOptional(LOOKUP_POLL_INTERVAL)
          .ifPresent(
              value -> {
                if (value.isNegative()) {
                  throw invalid(LOOKUP_POLL_INTERVAL, "is negative", null);
                }
              });
      positive(PARTIAL_CACHE_EXPIRE_AFTER_WRITE);
      positive(LOOKUP_AS_OF_RETENTION);
      positive(PARTIAL_CACHE_EXPIRE_AFTER_ACCESS);
      atLeast(LOOKUP_ASYNC_THREADS, 1);
      atLeast(MAX_RETRIES, 0);
      atLeast(LOOKUP_ROW_CACHE_MAX_ROWS, 0);
      if (config.get(LOOKUP_DISK_CACHE_MAX_BYTES).getBytes() <= 0) {
        throw invalid(LOOKUP_DISK_CACHE_MAX_BYTES, "is not positive", null);
      }
      if (config.getOptional(LOOKUP_DISK_CACHE_DIR).map(String::isBlank).orElse(false)) {
        throw invalid(LOOKUP_DISK_CACHE_DIR, "is blank", null);
      }
      if (!config.get(LOOKUP_DISK_CACHE_ENABLED)
          && config.getOptional(LOOKUP_DISK_CACHE_DIR).isPresent()) {
        throw new ValidationException(
            "option '"
                + LOOKUP_DISK_CACHE_DIR.key()
                + "' names the directory of a disk cache that '"
                + LOOKUP_DISK_CACHE_ENABLED.key()
                + "' = 'false' turns off: remove one of them");
      }
      atLeast(PARTIAL_CACHE_MAX_ROWS, 1);
      atLeast(SINK_PARALLELISM, 1);
      atLeast(SCAN_PARALLELISM, 1);
      atLeast(BUCKET, 1);
    }

    /** The sink's maintenance; its own checks name the option that is wrong. */
    SinkMaintenance maintenance() {
      return new SinkMaintenance(
          config.get(MAINTENANCE_ENABLED),
          config.get(MAINTENANCE_COMPACT_DATA_FILES),
          config.get(MAINTENANCE_COMPACT_DELETE_FILES),
          config.get(MAINTENANCE_SNAPSHOT_MAX_AGE),
          config.get(MAINTENANCE_SNAPSHOT_RETAIN_LAST),
          config.get(MAINTENANCE_ORPHAN_MIN_AGE),
          config.get(MAINTENANCE_INTERVAL));
    }

    /**
     * The properties of the skade catalog a {@code 'connector' = 'skade'} table or a {@code skade}
     * catalog opens: warehouse, catalog path, the lineage sink and the storage properties of its
     * file IO ({@link StorageOptions}), or the server's address with those storage properties.
     */
    Map<String, String> catalogProperties() {
      Map<String, String> properties = new HashMap<>(StorageOptions.of(raw));
      String uri = config.getOptional(URI).orElse(null);
      if (uri != null) {
        remote(uri, properties);
        return properties;
      }
      for (ConfigOption<?> remoteOnly : List.of(TOKEN, SERVER_RETRY_TIMEOUT)) {
        if (config.getOptional(remoteOnly).isPresent()) {
          throw new ValidationException(
              "option '"
                  + remoteOnly.key()
                  + "' applies only to a"
                  + " catalog reached through a skade server ('"
                  + URI.key()
                  + "'), but none is"
                  + " set: remove it, or set '"
                  + URI.key()
                  + "'");
        }
      }
      String warehouse = config.getOptional(WAREHOUSE).orElse(null);
      if (warehouse == null) {
        throw new ValidationException(
            "a skade table or catalog needs option '"
                + WAREHOUSE.key()
                + "' (a local path or a URI: the catalog is opened in this JVM)"
                + " or option '"
                + URI.key()
                + "' (a skade server's http:// address: the catalog"
                + " is reached through it); set one of them");
      }
      if (warehouse.isBlank()) {
        throw invalid(WAREHOUSE, "is empty", null);
      }
      properties.put(WAREHOUSE.key(), warehouse);
      config.getOptional(CATALOG_PATH).ifPresent(path -> properties.put(CATALOG_PATH.key(), path));
      String sink =
          choice(
              LINEAGE_SINK,
              CatalogLineage.SINKS.stream()
                  .collect(Collectors.toMap(s -> s, s -> s, (a, b) -> a, LinkedHashMap::new)));
      String url = config.getOptional(LINEAGE_OPENLINEAGE_URL).orElse(null);
      if (sink.equals("openlineage")) {
        if (url == null || url.isBlank()) {
          throw new ValidationException(
              "option '"
                  + LINEAGE_SINK.key()
                  + "' = 'openlineage'"
                  + " needs option '"
                  + LINEAGE_OPENLINEAGE_URL.key()
                  + "' ("
                  + OPENLINEAGE_URLS
                  + "); set it");
        }
        if (!(url.equals("console")
            || url.startsWith("file:")
            || url.startsWith("http://")
            || url.startsWith("https://"))) {
          throw invalid(LINEAGE_OPENLINEAGE_URL, "is not a destination", null);
        }
        properties.put(LINEAGE_OPENLINEAGE_URL.key(), url);
      } else if (url != null) {
        throw new ValidationException(
            "option '"
                + LINEAGE_OPENLINEAGE_URL.key()
                + "' applies only to '"
                + LINEAGE_SINK.key()
                + "' = 'openlineage', but the sink is '"
                + sink
                + "': remove it (it is '"
                + url
                + "') or set the sink to 'openlineage'");
      }
      if (!sink.equals("none")) {
        properties.put(LINEAGE_SINK.key(), sink);
      }
      return properties;
    }

    /**
     * The properties of a catalog reached through the skade server {@code uri}: its address, token
     * and retry time, checked here. The server owns the warehouse, the store and the commit
     * lineage, so the options that set them for a catalog of this JVM are refused.
     */
    private void remote(String uri, Map<String, String> properties) {
      for (String member : uri.split(",")) { // a server group: every member's address
        java.net.URI parsed; // not imported: URI is the option here
        try {
          parsed = java.net.URI.create(member.trim());
        } catch (IllegalArgumentException e) {
          parsed = null;
        }
        if (parsed == null
            || parsed.getHost() == null
            || !("http".equalsIgnoreCase(parsed.getScheme())
                || "https".equalsIgnoreCase(parsed.getScheme()))) {
          throw invalid(
              URI,
              "is not the http:// or https:// address of a skade server (such as"
                  + " 'http://catalog-host:8181'), or the comma-separated addresses of a server"
                  + " group's members",
              null);
        }
      }
      for (ConfigOption<?> local :
          List.of(WAREHOUSE, CATALOG_PATH, LINEAGE_SINK, LINEAGE_OPENLINEAGE_URL)) {
        if (config.getOptional(local).isPresent()) {
          throw new ValidationException(
              "option '"
                  + local.key()
                  + "' sets up a catalog"
                  + " opened in this JVM, but option '"
                  + URI.key()
                  + "' = '"
                  + uri
                  + "' names a"
                  + " skade server, which owns the catalog's warehouse, store and lineage: remove '"
                  + local.key()
                  + "' (the server's own flags set it)");
        }
      }
      properties.put(URI.key(), uri.trim());
      config.getOptional(TOKEN).ifPresent(token -> properties.put(TOKEN.key(), token));
      properties.put(
          SERVER_RETRY_TIMEOUT.key(), config.get(SERVER_RETRY_TIMEOUT).toMillis() + " ms");
    }

    SkadeTableSource.Scan scan(Location location, boolean batch, ResolvedSchema physical) {
      StartupMode mode = startupMode();
      Long value = null;
      for (Map.Entry<StartupMode, ConfigOption<Long>> entry : STARTUP_VALUES.entrySet()) {
        ConfigOption<Long> option = entry.getValue();
        if (entry.getKey() == mode) {
          value =
              config
                  .getOptional(option)
                  .orElseThrow(
                      () ->
                          new ValidationException(
                              "option '"
                                  + SCAN_STARTUP_MODE.key()
                                  + "' = '"
                                  + mode.value()
                                  + "' needs option '"
                                  + option.key()
                                  + "' ("
                                  + ACCEPTED.get(option.key())
                                  + "); set it"));
        } else if (raw.containsKey(option.key())) {
          throw new ValidationException(
              "option '"
                  + option.key()
                  + "' applies only to '"
                  + SCAN_STARTUP_MODE.key()
                  + "' = '"
                  + entry.getKey().value()
                  + "', but the mode is"
                  + " '"
                  + mode.value()
                  + "': remove it (it is '"
                  + raw.get(option.key())
                  + "') or set the mode to '"
                  + entry.getKey().value()
                  + "'");
        }
      }
      if (batch && mode != StartupMode.FULL) {
        throw new ValidationException(
            "option '"
                + SCAN_STARTUP_MODE.key()
                + "' = '"
                + mode.value()
                + "' reads changes, which batch mode cannot take: a batch query reads"
                + " the table's rows ('full', optionally as of '"
                + SCAN_END_SNAPSHOT_ID.key()
                + "'). Run the query in streaming mode to read changes");
      }
      BeforeImage beforeImage = choice(CHANGELOG_BEFORE_IMAGE, BEFORE_IMAGES);
      if (beforeImage == BeforeImage.KEY_ONLY && physical.getPrimaryKey().isEmpty()) {
        throw new ValidationException(
            "option '"
                + CHANGELOG_BEFORE_IMAGE.key()
                + "' ="
                + " 'key-only' emits upserts, which need a primary key: declare PRIMARY KEY (...)"
                + " NOT ENFORCED (the table's identifier fields), or use 'full'");
      }
      boolean appendOnly = config.get(SCAN_APPEND_ONLY);
      if (appendOnly && beforeImage == BeforeImage.KEY_ONLY) {
        throw new ValidationException(
            "option '"
                + SCAN_APPEND_ONLY.key()
                + "' = 'true' reads"
                + " inserts only, but '"
                + CHANGELOG_BEFORE_IMAGE.key()
                + "' = 'key-only' asks for"
                + " upserts: remove one of them");
      }
      return new SkadeTableSource.Scan(
          location.catalogProperties(),
          location.table(),
          mode,
          value,
          config.get(SCAN_BOUNDED),
          config.getOptional(SCAN_END_SNAPSHOT_ID).orElse(null),
          choice(CHANGELOG_MODE, CHANGELOG_MODES),
          beforeImage,
          config.get(SCAN_POLL_INTERVAL),
          config.getOptional(SCAN_CONSUMER_ID).orElse(null),
          batch,
          appendOnly,
          config.getOptional(SCAN_PARALLELISM).orElse(null));
    }

    SkadeTableSource.Lookup lookup() {
      LookupCacheType cacheType = config.get(CACHE_TYPE);
      LookupCache flinkCache = null;
      if (cacheType == LookupCacheType.PARTIAL) {
        if (PARTIAL_CACHE_BOUNDS.stream().noneMatch(o -> raw.containsKey(o.key()))) {
          throw new ValidationException(
              "option '"
                  + CACHE_TYPE.key()
                  + "' = 'PARTIAL' needs a"
                  + " bound: set '"
                  + PARTIAL_CACHE_MAX_ROWS.key()
                  + "' ("
                  + ACCEPTED.get(PARTIAL_CACHE_MAX_ROWS.key())
                  + "), '"
                  + PARTIAL_CACHE_EXPIRE_AFTER_WRITE.key()
                  + "' or '"
                  + PARTIAL_CACHE_EXPIRE_AFTER_ACCESS.key()
                  + "' ("
                  + DURATION
                  + ")");
        }
        flinkCache = DefaultLookupCache.fromConfig(config);
      } else {
        for (ConfigOption<?> option : PARTIAL_CACHE_OPTIONS) {
          if (raw.containsKey(option.key())) {
            throw new ValidationException(
                "option '"
                    + option.key()
                    + "' applies only to '"
                    + CACHE_TYPE.key()
                    + "' = 'PARTIAL', but the cache is '"
                    + cacheType
                    + "':"
                    + " remove it (it is '"
                    + raw.get(option.key())
                    + "') or set the cache to"
                    + " 'PARTIAL'");
          }
        }
      }
      long rowCacheRows = config.get(LOOKUP_ROW_CACHE_MAX_ROWS);
      if (rowCacheRows > 0 && cacheType != LookupCacheType.NONE) {
        throw new ValidationException(
            "option '"
                + LOOKUP_ROW_CACHE_MAX_ROWS.key()
                + "' applies only to '"
                + CACHE_TYPE.key()
                + "' = 'NONE' (skade's row cache), but"
                + " the cache is '"
                + cacheType
                + "': remove it (it is '"
                + rowCacheRows
                + "') or set the cache to 'NONE'");
      }
      return new SkadeTableSource.Lookup(
          config.get(LOOKUP_ASYNC),
          config.get(LOOKUP_ASYNC_THREADS),
          config.getOptional(LOOKUP_SNAPSHOT_ID).orElse(null),
          // A delta join reads append-only, and needs each probe to see every row emitted.
          config
              .getOptional(LOOKUP_POLL_INTERVAL)
              .orElse(
                  config.get(SCAN_APPEND_ONLY)
                      ? Duration.ZERO
                      : LOOKUP_POLL_INTERVAL.defaultValue()),
          config.get(MAX_RETRIES),
          cacheType,
          rowCacheRows,
          flinkCache,
          config.get(LOOKUP_DISK_CACHE_ENABLED)
              ? config
                  .getOptional(LOOKUP_DISK_CACHE_DIR)
                  .orElseGet(TableLookup.Settings::defaultDiskCacheDir)
              : null,
          config.get(LOOKUP_DISK_CACHE_MAX_BYTES).getBytes(),
          config.getOptional(LOOKUP_AS_OF_RETENTION).orElse(null));
    }

    private StartupMode startupMode() {
      return choice(SCAN_STARTUP_MODE, STARTUP_MODES);
    }

    /** The choice {@code option}'s value names, ignoring case and surrounding blanks. */
    private <T> T choice(ConfigOption<String> option, Map<String, T> choices) {
      T chosen = choices.get(config.get(option).trim().toLowerCase(Locale.ROOT));
      if (chosen == null) {
        throw invalid(option, "unknown", null);
      }
      return chosen;
    }

    private void atLeast(ConfigOption<? extends Number> option, long min) {
      config
          .getOptional(option)
          .ifPresent(
              value -> {
                if (value.longValue() < min) {
                  throw invalid(option, min == 0 ? "is negative" : "is not positive", null);
                }
              });
    }

    private void positive(ConfigOption<Duration> option) {
      config
          .getOptional(option)
          .ifPresent(
              value -> {
                if (value.isNegative() || value.isZero()) {
                  throw invalid(option, "must be positive", null);
                }
              });
    }

    /**
     * {@code option 'k' has an invalid value 'v' (problem); accepted: ...}. The value is as
     * written, or the default when the option is not set.
     */
    private ValidationException invalid(ConfigOption<?> option, String problem, Throwable cause) {
      String value =
          UnknownKeys.allKeys(option)
              .map(raw::get)
              .filter(v -> v != null)
              .findFirst()
              .orElse(String.valueOf(option.hasDefaultValue() ? option.defaultValue() : ""));
      String accepted = ACCEPTED.getOrDefault(option.key(), "see the option's description");
      return new ValidationException(
          "option '"
              + option.key()
              + "' has an invalid value '"
              + value
              + "' ("
              + problem
              + "); accepted: "
              + accepted,
          cause);
    }
  }

  private static <K, V> Map<K, V> choices(K k1, V v1, K k2, V v2) {
    Map<K, V> map = new LinkedHashMap<>();
    map.put(k1, v1);
    map.put(k2, v2);
    return map;
  }

  private static <K, V> Map<K, V> choices(K k1, V v1, K k2, V v2, K k3, V v3) {
    Map<K, V> map = choices(k1, v1, k2, v2);
    map.put(k3, v3);
    return map;
  }

  private static String quoted(Collection<String> values) {
    List<String> quoted = values.stream().map(v -> "'" + v + "'").toList();
    return String.join(", ", quoted.subList(0, quoted.size() - 1))
        + " or "
        + quoted.get(quoted.size() - 1);
  }
}
