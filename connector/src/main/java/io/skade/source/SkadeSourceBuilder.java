package io.skade.source;

import io.skade.catalog.CatalogConnection;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.ChangelogReader;
import io.skade.source.enumerator.SkadeSplitEnumerator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.types.Types;

/**
 * Builds a {@link SkadeSource}. Only the catalog and the table are required:
 *
 * <pre>{@code
 * SkadeSource<RowData> source = SkadeSource.builder()
 *     .catalogProperties(Map.of("warehouse", "/data/warehouse"))
 *     .table("shop.orders")
 *     .build();   // current rows as +I, then every change, unbounded
 * }</pre>
 *
 * <p>{@link #build()} opens the catalog once to check the table, the projection and the startup
 * position, and fails with an error naming what is wrong.
 *
 * @param <T> the emitted type
 */
public final class SkadeSourceBuilder<T> {
  /** The default bound of changes per fetch. */
  public static final int DEFAULT_BATCH_ROWS = 1024;

  /** The default interval of the safety poll of the commit log. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  private Map<String, String> catalogProperties;
  private TableIdentifier table;
  private StartupMode startupMode = StartupMode.FULL;
  private Long startupValue;
  private boolean bounded;
  private Long endSnapshotId;
  private ChangelogOptions options = ChangelogOptions.defaults();
  private Duration pollInterval = DEFAULT_POLL_INTERVAL;
  private String consumerId;
  private int batchRows = DEFAULT_BATCH_ROWS;
  private long limit = Long.MAX_VALUE;
  private ChangeDeserializer<T> deserializer;
  private Duration watermarkIdleTimeout;

  SkadeSourceBuilder() {}

  /**
   * The skade catalog's properties ({@code warehouse}, {@code catalog.path}, ...), handed to the
   * catalog and its file IO as they are: a warehouse on S3 or HDFS takes Iceberg's own {@code
   * io-impl}, {@code s3.*}, {@code client.*} and {@code hadoop.*} keys here.
   */
  public SkadeSourceBuilder<T> catalogProperties(Map<String, String> properties) {
    this.catalogProperties = new HashMap<>(properties);
    return this;
  }

  /** The table, e.g. {@code shop.orders}. */
  public SkadeSourceBuilder<T> table(String name) {
    return table(TableIdentifier.parse(name));
  }

  public SkadeSourceBuilder<T> table(TableIdentifier identifier) {
    this.table = identifier;
    return this;
  }

  /**
   * Where to start without a checkpoint: {@code FULL} (default), {@code LATEST} or {@code
   * EARLIEST}; the other modes take their argument, see {@link #startFromSnapshot} and others.
   */
  public SkadeSourceBuilder<T> startupMode(StartupMode mode) {
    return startup(mode, null);
  }

  /** Changes from snapshot {@code snapshotId} on, its own changes included. */
  public SkadeSourceBuilder<T> startFromSnapshot(long snapshotId) {
    return startup(StartupMode.FROM_SNAPSHOT, snapshotId);
  }

  /** Changes from the first snapshot committed at or after {@code epochMillis}. */
  public SkadeSourceBuilder<T> startFromTimestamp(long epochMillis) {
    return startup(StartupMode.FROM_TIMESTAMP, epochMillis);
  }

  /** Changes of the commits after catalog {@code commit_seq} {@code commitSeq}. */
  public SkadeSourceBuilder<T> startFromCommitSeq(long commitSeq) {
    return startup(StartupMode.FROM_COMMIT_SEQ, commitSeq);
  }

  /** A startup mode and its argument (null for full, latest and earliest). */
  public SkadeSourceBuilder<T> startup(StartupMode mode, Long value) {
    this.startupMode = Objects.requireNonNull(mode, "startup mode");
    this.startupValue = value;
    return this;
  }

  /** Stops at the snapshot current when the job starts. */
  public SkadeSourceBuilder<T> bounded() {
    this.bounded = true;
    return this;
  }

  /** Stops after snapshot {@code snapshotId}; implies {@link #bounded()}. */
  public SkadeSourceBuilder<T> endSnapshot(long snapshotId) {
    this.bounded = true;
    this.endSnapshotId = snapshotId;
    return this;
  }

  /** Every change ({@code PER_SNAPSHOT}, default) or each window's net change. */
  public SkadeSourceBuilder<T> changelogMode(Mode mode) {
    this.options = options.withMode(mode);
    return this;
  }

  /** Full old rows for {@code -U}/{@code -D} (default), or only their keys. */
  public SkadeSourceBuilder<T> beforeImage(BeforeImage beforeImage) {
    this.options = options.withBeforeImage(beforeImage);
    return this;
  }

  /** The columns to emit, in this order; all by default. */
  public SkadeSourceBuilder<T> columns(List<String> columns) {
    this.options = options.withColumns(columns);
    return this;
  }

  /** Only changes whose row matches {@code rows}. */
  public SkadeSourceBuilder<T> filter(Expression rows) {
    this.options = options.withFilter(rows);
    return this;
  }

  /** How often the commit log is polled besides the in-process feed (default 1 s). */
  public SkadeSourceBuilder<T> pollInterval(Duration interval) {
    this.pollInterval = interval;
    return this;
  }

  /**
   * The id under which the job's position is stored in the catalog, holding back the expiry of
   * snapshots it still needs; by default derived from the job name and the table.
   */
  public SkadeSourceBuilder<T> consumerId(String id) {
    this.consumerId = id;
    return this;
  }

  /** The most changes a reader fetches at once (default 1024). */
  public SkadeSourceBuilder<T> batchRows(int rows) {
    this.batchRows = rows;
    return this;
  }

  /**
   * Reads at most {@code rows} rows per reader (a SQL {@code LIMIT}; the job keeps its own limit
   * over the readers): each reader stops there, and reads only the data files those rows need. Only
   * for a read of one snapshot's rows, {@link #bounded()} from {@link StartupMode#FULL} with no end
   * snapshot, whose every change is an insert.
   */
  public SkadeSourceBuilder<T> limit(long rows) {
    this.limit = rows;
    return this;
  }

  /**
   * Readers emit watermarks on commit time: pass {@link SkadeSource#commitTimeWatermarks()} to
   * {@code env.fromSource}. A reader's watermark stays just before the oldest commit among its
   * splits and follows the catalog's log while it has none, so it is exact and never held back by a
   * reader that is given no split.
   *
   * @param idleTimeout after how long without a split and without the log advancing a reader is
   *     marked idle, so that a table without commits does not hold a job's other inputs back; zero
   *     for never (then the watermark stays at the last commit's stamp until the next)
   */
  public SkadeSourceBuilder<T> commitTimeWatermarks(Duration idleTimeout) {
    this.watermarkIdleTimeout = Objects.requireNonNull(idleTimeout, "idleTimeout");
    return this;
  }

  /** Maps each change to records of type {@code R}. */
  @SuppressWarnings("unchecked")
  public <R> SkadeSourceBuilder<R> deserializer(ChangeDeserializer<R> mapping) {
    SkadeSourceBuilder<R> self = (SkadeSourceBuilder<R>) this;
    self.deserializer = Objects.requireNonNull(mapping, "deserializer");
    return self;
  }

  /** Checks everything against the catalog and builds the source. */
  @SuppressWarnings("unchecked")
  public SkadeSource<T> build() {
    if (catalogProperties == null
        || !catalogProperties.containsKey("warehouse")
            && !catalogProperties.containsKey(CatalogConnection.URI)) {
      throw new IllegalArgumentException(
          "skade source: the catalog properties must name a"
              + " 'warehouse' (a catalog in this JVM) or a skade server's 'uri'; call"
              + " catalogProperties(Map.of(\"warehouse\", \"/path\", ...)) or"
              + " catalogProperties(Map.of(\"uri\", \"http://host:8181\", \"token\", ...))");
    }
    if (table == null) {
      throw new IllegalArgumentException("skade source: no table given; call table(\"db.name\")");
    }
    boolean takesValue =
        startupMode == StartupMode.FROM_SNAPSHOT
            || startupMode == StartupMode.FROM_TIMESTAMP
            || startupMode == StartupMode.FROM_COMMIT_SEQ;
    if (takesValue != (startupValue != null)) {
      throw new IllegalArgumentException(
          "skade source on "
              + table
              + ": startup mode "
              + startupMode.value()
              + (takesValue
                  ? " needs its argument (a snapshot id, timestamp or"
                      + " commit_seq); use startFromSnapshot/startFromTimestamp/startFromCommitSeq"
                  : " takes no argument, got " + startupValue));
    }
    if (pollInterval == null || pollInterval.isNegative() || pollInterval.isZero()) {
      throw new IllegalArgumentException(
          "skade source on "
              + table
              + ": the poll interval must"
              + " be positive, got "
              + pollInterval);
    }
    if (batchRows <= 0) {
      throw new IllegalArgumentException(
          "skade source on " + table + ": batch rows must be" + " positive, got " + batchRows);
    }
    if (limit <= 0) {
      throw new IllegalArgumentException(
          "skade source on " + table + ": a limit must be positive, got " + limit);
    }
    if (limit != Long.MAX_VALUE && (!bounded || startupMode != StartupMode.FULL)) {
      throw new IllegalArgumentException(
          "skade source on "
              + table
              + ": a limit of "
              + limit
              + " rows applies to a read of one snapshot's rows, where every change is an insert;"
              + " call bounded() with startup mode full, or read without a limit");
    }
    if (watermarkIdleTimeout != null && watermarkIdleTimeout.isNegative()) {
      throw new IllegalArgumentException(
          "skade source on "
              + table
              + ": the watermark idle timeout must be zero (never idle) or positive, got "
              + watermarkIdleTimeout);
    }
    SkadeSplitEnumerator.Settings settings =
        new SkadeSplitEnumerator.Settings(
            path(table),
            startupMode,
            startupValue,
            bounded,
            endSnapshotId,
            options.mode(),
            pollInterval,
            consumerId,
            watermarkIdleTimeout != null);
    Schema projected;
    String location;
    try (CatalogConnection connection = CatalogConnection.open(catalogProperties)) {
      location = connection.location();
      Table loaded = loadTable(connection, table);
      new ChangelogReader(loaded, options); // checks the projection against the table
      projected =
          options.columns() == null ? loaded.schema() : loaded.schema().select(options.columns());
      SkadeSplitEnumerator.checkStart(connection, settings); // start position and end
    }
    // Pin the projection: a column added later is not emitted, so rows keep their type.
    ChangelogOptions pinned =
        options.withColumns(projected.columns().stream().map(Types.NestedField::name).toList());
    RowType rowType = FlinkSchemaUtil.convert(projected);
    ChangeDeserializer<T> mapping =
        deserializer != null
            ? deserializer
            : (ChangeDeserializer<T>) ChangeDeserializer.rowData(rowType);
    return new SkadeSource<>(
        catalogProperties,
        location,
        settings,
        pinned,
        batchRows,
        limit,
        mapping,
        watermarkIdleTimeout);
  }

  private static List<String> path(TableIdentifier identifier) {
    List<String> path = new ArrayList<>(List.of(identifier.namespace().levels()));
    path.add(identifier.name());
    return path;
  }

  private static Table loadTable(CatalogConnection connection, TableIdentifier identifier) {
    try {
      return connection.catalog().loadTable(identifier);
    } catch (NoSuchTableException e) {
      List<String> existing =
          connection.namespaces().namespaceExists(identifier.namespace())
              ? connection.catalog().listTables(identifier.namespace()).stream()
                  .map(TableIdentifier::toString)
                  .toList()
              : List.of();
      throw new IllegalArgumentException(
          "skade source: table "
              + identifier
              + " does not exist;"
              + " tables in namespace "
              + identifier.namespace()
              + ": "
              + (existing.isEmpty() ? "none" : String.join(", ", existing)),
          e);
    }
  }
}
