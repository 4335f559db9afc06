package io.skade.catalog;

import static io.skade.catalog.SkadeCatalog.CATALOG_ACCESS;
import static io.skade.catalog.SkadeCatalog.CATALOG_PATH;
import static io.skade.catalog.SkadeCatalog.CONSUMER_EXPIRY_TIMEOUT;
import static io.skade.catalog.SkadeCatalog.CREATE_IF_MISSING;
import static io.skade.catalog.SkadeCatalog.FEED_BUFFER_SIZE;
import static io.skade.catalog.SkadeCatalog.FOLLOWER_PATH;
import static io.skade.catalog.SkadeCatalog.MAX_BATCH_SIZE;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.util.PropertyUtil;

/**
 * The properties of one {@link SkadeCatalog}, read and checked once, before anything is opened:
 * what the catalog itself uses (its name, warehouse, feed buffer, consumer expiry timeout) and what
 * it asks of its store ({@link SharedStore.Spec}). The property names and their meaning are listed
 * on {@link SkadeCatalog}; a bad value fails with an {@link IllegalArgumentException} naming the
 * catalog, the property, the value and what is accepted.
 *
 * <p><b>Internal</b> to skade's catalog store: instances are made and read only inside {@code
 * io.skade.catalog}. The class is public only for its two static helpers, which {@code
 * io.skade.catalog.remote} shares: {@link #duration} and {@link #defaultHadoopConf}.
 */
public final class CatalogConfig {
  /** The default of {@link SkadeCatalog#CONSUMER_EXPIRY_TIMEOUT}. */
  static final String DEFAULT_CONSUMER_EXPIRY_TIMEOUT = "7d";

  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|min|h|d)?");

  private final String name;
  private final String warehouse;
  private final boolean localWarehouse;
  private final boolean uniqueTableLocation;
  private final int feedBufferSize;
  private final Duration consumerExpiryTimeout;
  private final String consumerExpiryTimeoutText;
  private final SharedStore.Spec spec;

  private CatalogConfig(
      String name,
      String warehouse,
      boolean localWarehouse,
      boolean uniqueTableLocation,
      int feedBufferSize,
      Duration consumerExpiryTimeout,
      String consumerExpiryTimeoutText,
      SharedStore.Spec spec) {
    this.name = name;
    this.warehouse = warehouse;
    this.localWarehouse = localWarehouse;
    this.uniqueTableLocation = uniqueTableLocation;
    this.feedBufferSize = feedBufferSize;
    this.consumerExpiryTimeout = consumerExpiryTimeout;
    this.consumerExpiryTimeoutText = consumerExpiryTimeoutText;
    this.spec = spec;
  }

  /**
   * Reads and checks the properties of the catalog {@code name}; opens nothing.
   *
   * @throws IllegalArgumentException for the first bad property, naming it and its value
   */
  static CatalogConfig parse(String name, Map<String, String> props) {
    String warehouse = warehouse(name, props);
    Path catalogPath = catalogPath(name, props);
    String access = props.getOrDefault(CATALOG_ACCESS, "owner");
    if (!access.equals("owner") && !access.equals("follower")) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': property '"
              + CATALOG_ACCESS
              + "' is '"
              + access
              + "'; accepted values are 'owner' and 'follower'");
    }
    boolean uniqueTableLocation =
        PropertyUtil.propertyAsBoolean(
            props,
            CatalogProperties.UNIQUE_TABLE_LOCATION,
            CatalogProperties.UNIQUE_TABLE_LOCATION_DEFAULT);
    int feedBufferSize =
        positiveInt(name, props, FEED_BUFFER_SIZE, CommitFeed.DEFAULT_SUBSCRIBER_BUFFER);
    int maxBatch = positiveInt(name, props, MAX_BATCH_SIZE, Committer.DEFAULT_MAX_GROUP);
    String timeout = props.getOrDefault(CONSUMER_EXPIRY_TIMEOUT, DEFAULT_CONSUMER_EXPIRY_TIMEOUT);
    Duration expiryTimeout = duration(timeout);
    if (expiryTimeout == null) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': property '"
              + CONSUMER_EXPIRY_TIMEOUT
              + "' = '"
              + timeout
              + "' is not a positive duration; write a whole number with"
              + " a unit ms, s, m (or min), h or d, e.g. 7d or 24h (a bare number is"
              + " milliseconds)");
    }
    boolean follower = access.equals("follower");
    String followerValue = props.get(FOLLOWER_PATH);
    Path followerPath =
        follower && followerValue != null ? localPath(name, followerValue, FOLLOWER_PATH) : null;
    Map<String, SharedStore.Setting> settings = new TreeMap<>();
    Path localWarehouse = localWarehouse(name, warehouse); // compared as a directory when local
    settings.put(
        CatalogProperties.WAREHOUSE_LOCATION,
        new SharedStore.Setting(
            warehouse,
            localWarehouse == null ? warehouse : SharedStore.realPath(localWarehouse).toString()));
    settings.put(CATALOG_ACCESS, SharedStore.Setting.of(access));
    if (follower) {
      settings.put(
          FOLLOWER_PATH,
          followerPath == null
              ? new SharedStore.Setting("a temporary directory", "")
              : new SharedStore.Setting(
                  followerValue, SharedStore.realPath(followerPath).toString()));
    } else {
      settings.put(MAX_BATCH_SIZE, new SharedStore.Setting(String.valueOf(maxBatch), maxBatch));
      settings.put(CONSUMER_EXPIRY_TIMEOUT, new SharedStore.Setting(timeout.trim(), expiryTimeout));
    }
    SharedStore.Spec spec =
        new SharedStore.Spec(
            catalogPath,
            follower,
            followerPath,
            maxBatch,
            booleanProperty(name, props, CREATE_IF_MISSING, true),
            Map.copyOf(settings));
    return new CatalogConfig(
        name,
        warehouse,
        localWarehouse != null,
        uniqueTableLocation,
        feedBufferSize,
        expiryTimeout,
        timeout,
        spec);
  }

  /** The catalog's name. */
  String name() {
    return name;
  }

  /** The {@code warehouse} property, without trailing slashes. */
  String warehouse() {
    return warehouse;
  }

  /** Whether the warehouse is a local directory (a path or a {@code file:} URI). */
  boolean localWarehouse() {
    return localWarehouse;
  }

  /** Iceberg's {@code unique-table-location}: whether a new table's directory gets a suffix. */
  boolean uniqueTableLocation() {
    return uniqueTableLocation;
  }

  /** {@link SkadeCatalog#FEED_BUFFER_SIZE}: the default buffer of a commit subscription. */
  int feedBufferSize() {
    return feedBufferSize;
  }

  /** {@link SkadeCatalog#CONSUMER_EXPIRY_TIMEOUT}, parsed. */
  Duration consumerExpiryTimeout() {
    return consumerExpiryTimeout;
  }

  /** {@link SkadeCatalog#CONSUMER_EXPIRY_TIMEOUT} as given (or its default), for messages. */
  String consumerExpiryTimeoutText() {
    return consumerExpiryTimeoutText;
  }

  /** What the catalog asks of its store. */
  SharedStore.Spec spec() {
    return spec;
  }

  /**
   * {@code props} with {@link SkadeCatalog#TABLE_DEFAULTS} added as {@code table-default.*}
   * properties where they do not set them.
   */
  static Map<String, String> withTableDefaults(Map<String, String> props) {
    Map<String, String> merged = new HashMap<>(props);
    SkadeCatalog.TABLE_DEFAULTS.forEach(
        (key, value) -> merged.putIfAbsent(CatalogProperties.TABLE_DEFAULT_PREFIX + key, value));
    return Map.copyOf(merged);
  }

  /**
   * The duration {@code text} names, or null when it names none (or zero): a whole number with a
   * unit {@code ms}, {@code s}, {@code m} (or {@code min}), {@code h} or {@code d}; a bare number
   * is milliseconds. How skade's catalog properties write durations.
   *
   * <p><b>Internal</b>: shared with {@code io.skade.catalog.remote}; not part of skade's API.
   */
  public static Duration duration(String text) {
    Matcher m = DURATION.matcher(text.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      return null;
    }
    ChronoUnit unit =
        switch (m.group(2) == null ? "ms" : m.group(2)) {
          case "ms" -> ChronoUnit.MILLIS;
          case "s" -> ChronoUnit.SECONDS;
          case "m", "min" -> ChronoUnit.MINUTES;
          case "h" -> ChronoUnit.HOURS;
          default -> ChronoUnit.DAYS;
        };
    try {
      Duration duration = Duration.of(Long.parseLong(m.group(1)), unit);
      return duration.isZero() ? null : duration;
    } catch (ArithmeticException | NumberFormatException e) {
      return null; // too large
    }
  }

  /**
   * A default Hadoop configuration that loads its resources through skade's class loader, not the
   * creating thread's: a file IO outlives the Flink job whose thread made it (a shared catalog, the
   * metadata cache), and a job's class loader is closed when the job ends.
   *
   * <p><b>Internal</b>: shared with {@code io.skade.catalog.remote}; not part of skade's API.
   */
  public static Configuration defaultHadoopConf() {
    // A copy of one loaded configuration: parsing Hadoop's default XML resources for each
    // catalog made opening one (open, load a table, close) take 25-32 ms instead of 17-19 ms.
    return new Configuration(DefaultHadoopConf.LOADED);
  }

  /** The default Hadoop configuration, its resources loaded once per JVM; never modified. */
  private static final class DefaultHadoopConf {
    static final Configuration LOADED = load();

    private static Configuration load() {
      Configuration conf = new Configuration();
      conf.setClassLoader(SkadeCatalog.class.getClassLoader());
      // Hadoop's own local file system starts a chmod process per file written. Uncached, so
      // that a local file system another component cached in this JVM cannot stand in for it.
      conf.setClass("fs.file.impl", SkadeLocalFileSystem.class, FileSystem.class);
      conf.setBoolean("fs.file.impl.disable.cache", true);
      conf.size(); // loads the default resources now, so that copies do not parse them again
      return conf;
    }
  }

  /** The {@code warehouse} property, required, without trailing slashes. */
  static String warehouse(String name, Map<String, String> props) {
    String location = props.get(CatalogProperties.WAREHOUSE_LOCATION);
    if (location == null || location.isBlank()) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': property 'warehouse' is required; set it to the root"
              + " directory (or URI) of table data, e.g. warehouse=/data/warehouse");
    }
    return location.replaceAll("/+$", "");
  }

  /** The RocksDB directory the properties name: {@code catalog.path}, or the default. */
  static Path catalogPath(String name, Map<String, String> props) {
    String configured = props.get(CATALOG_PATH);
    if (configured != null && !configured.isBlank()) {
      return localPath(name, configured, CATALOG_PATH);
    }
    String warehouse = warehouse(name, props);
    Path local = localWarehouse(name, warehouse);
    if (local == null) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': warehouse "
              + warehouse
              + " is not a local path, so"
              + " property '"
              + CATALOG_PATH
              + "' is required; set it to a local directory for"
              + " the catalog's RocksDB store");
    }
    return local.resolve(TableKeys.RESERVED_NAMESPACE);
  }

  /**
   * The local directory of a warehouse, or null when it is not local. The warehouse is read as
   * Iceberg's file IO reads the locations made from it, Hadoop's {@code Path}: a path, or a URI
   * whose parts are written as they are (never percent-decoded), so that the catalog lives in the
   * directory its tables' files do, whatever characters its name holds.
   */
  private static Path localWarehouse(String name, String warehouse) {
    URI uri;
    try {
      uri = new org.apache.hadoop.fs.Path(warehouse).toUri();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': property 'warehouse' = '"
              + warehouse
              + "' is neither a path nor a URI ("
              + e.getMessage()
              + "); set "
              + CATALOG_PATH
              + " explicitly or fix the warehouse",
          e);
    }
    if (uri.getScheme() == null) {
      return Paths.get(warehouse);
    }
    return "file".equals(uri.getScheme()) ? Paths.get(uri.getPath()) : null;
  }

  /** A local directory property: a path, or a {@code file:} URI written as Hadoop writes one. */
  private static Path localPath(String name, String value, String property) {
    try {
      return value.startsWith("file:")
          ? Paths.get(new org.apache.hadoop.fs.Path(value).toUri().getPath())
          : Paths.get(value);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + name
              + "': property '"
              + property
              + "' = '"
              + value
              + "' is not a local path: "
              + e.getMessage(),
          e);
    }
  }

  private static boolean booleanProperty(
      String name, Map<String, String> props, String key, boolean defaultValue) {
    String value = props.get(key);
    if (value == null) {
      return defaultValue;
    }
    if (value.trim().equalsIgnoreCase("true") || value.trim().equalsIgnoreCase("false")) {
      return Boolean.parseBoolean(value.trim());
    }
    throw new IllegalArgumentException(
        "skade catalog '"
            + name
            + "': property '"
            + key
            + "' = '"
            + value
            + "' must be true or false");
  }

  private static int positiveInt(
      String name, Map<String, String> props, String key, int defaultValue) {
    String value = props.get(key);
    if (value == null) {
      return defaultValue;
    }
    try {
      int parsed = Integer.parseInt(value.trim());
      if (parsed > 0) {
        return parsed;
      }
    } catch (NumberFormatException ignored) {
      // falls through to the error below
    }
    throw new IllegalArgumentException(
        "skade catalog '"
            + name
            + "': property '"
            + key
            + "' = '"
            + value
            + "' must be a positive integer");
  }
}
