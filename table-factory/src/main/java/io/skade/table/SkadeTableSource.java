package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.SnapshotAggregates;
import io.skade.changelog.SnapshotAggregates.Aggregate;
import io.skade.lookup.TableLookup;
import io.skade.source.SkadeSource;
import io.skade.source.SkadeSourceBuilder;
import io.skade.source.StartupMode;
import io.skade.source.WatermarksOnEveryChange;
import io.skade.table.SqlChangeDeserializer.MetadataColumn;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.ProviderContext;
import org.apache.flink.table.connector.source.DataStreamScanProvider;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.InputFormatProvider;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsAggregatePushDown;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsLimitPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsLookupCustomShuffle;
import org.apache.flink.table.connector.source.abilities.SupportsLookupCustomShuffle.InputDataPartitioner;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.connector.source.abilities.SupportsSourceWatermark;
import org.apache.flink.table.connector.source.abilities.SupportsWatermarkPushDown;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.connector.source.lookup.PartialCachingAsyncLookupProvider;
import org.apache.flink.table.connector.source.lookup.PartialCachingLookupProvider;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.expressions.AggregateExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;

/**
 * A skade table read by SQL: the changelog source ({@link SkadeSource}) with projection, exact
 * filter, metadata and watermark pushdown. It produces {@code +I -U +U -D} with full before-images,
 * which the planner needs no ChangelogNormalize for; upsert rows with key-only deletes in {@code
 * key-only} mode; inserts only in batch mode, where it reads the rows of one snapshot.
 */
final class SkadeTableSource
    implements ScanTableSource,
        LookupTableSource,
        SupportsProjectionPushDown,
        SupportsFilterPushDown,
        SupportsReadingMetadata,
        SupportsLimitPushDown,
        SupportsAggregatePushDown,
        SupportsWatermarkPushDown,
        SupportsSourceWatermark,
        SupportsLookupCustomShuffle {

  /** What to read and from where, as the table's options say. */
  record Scan(
      Map<String, String> catalogProperties,
      TableIdentifier table,
      StartupMode startupMode,
      Long startupValue,
      boolean bounded,
      Long endSnapshotId,
      Mode mode,
      BeforeImage beforeImage,
      Duration pollInterval,
      String consumerId,
      boolean batch,
      boolean appendOnly,
      Integer parallelism) {

    boolean upsert() {
      return !batch && beforeImage == BeforeImage.KEY_ONLY;
    }

    /** This read, started as {@code mode} and {@code value} say, ending at {@code end}. */
    Scan startingAt(StartupMode mode, Long value, Long end) {
      return new Scan(
          catalogProperties,
          table,
          mode,
          value,
          bounded,
          end,
          this.mode,
          beforeImage,
          pollInterval,
          consumerId,
          batch,
          appendOnly,
          parallelism);
    }
  }

  /**
   * How lookup joins probe the table, as the table's options say.
   *
   * @param flinkCache Flink's cache in front of the lookup function ({@code lookup.cache} PARTIAL);
   *     null for none
   * @param asOfRetention {@code lookup.as-of.retention}, or null
   */
  record Lookup(
      boolean async,
      int asyncThreads,
      Long snapshotId,
      Duration pollInterval,
      int maxRetries,
      LookupOptions.LookupCacheType cacheType,
      long rowCacheMaxRows,
      LookupCache flinkCache,
      String diskCacheDir,
      long diskCacheMaxBytes,
      Duration asOfRetention) {

    /**
     * How the engine answers lookups for {@code lookup.cache}: NONE probes (through skade's row
     * cache when it has a size), PARTIAL probes behind Flink's cache, FULL holds every row.
     */
    TableLookup.Caching engineCaching() {
      return switch (cacheType) {
        case NONE -> rowCacheMaxRows > 0 ? TableLookup.Caching.ROWS : TableLookup.Caching.PROBE;
        case PARTIAL -> TableLookup.Caching.PROBE;
        case FULL -> TableLookup.Caching.FULL;
      };
    }
  }

  /**
   * The metadata column of lookups as of a time: compared with a probe's time, it makes the lookup
   * answer with the rows of the snapshot current then.
   */
  static final String AS_OF = "as_of";

  private final Scan scan;
  private final Lookup lookup;

  /** The table's schema when the job was planned. */
  private final Schema tableSchema;

  /** The DDL's physical columns. */
  private final DataType physicalRowType;

  private int[] projection; // into the physical columns; null = all of them
  private List<String> metadataKeys = List.of();
  private DataType producedDataType;
  private Expression filter = Expressions.alwaysTrue();

  /** The query's {@code LIMIT}, when the planner pushed one; null otherwise. */
  private Long limit;

  /**
   * The aggregates the planner pushed ({@code COUNT(*)}, {@code MIN}, {@code MAX}; the source then
   * emits their one row) and their result types; null for none.
   */
  private List<Aggregate> aggregates;

  private List<LogicalType> aggregateTypes;

  /** The table's bucketing when the job was planned; null when it has no single bucket field. */
  private final BucketShuffle buckets;

  /** The lookup join's input partitioner, once the lookup keys are known; null for none. */
  private InputDataPartitioner shuffle;

  /** How {@code SOURCE_WATERMARK()} is generated, from the table's options. */
  private final SourceWatermarks sourceWatermarks;

  /**
   * The watermark the planner pushed ({@code WATERMARK FOR c AS <expression>}), generated per split
   * in the source; null for none.
   */
  private WatermarkStrategy<RowData> watermarkStrategy;

  /** Whether the table declares {@code SOURCE_WATERMARK()}: the readers' own, on commit time. */
  private boolean sourceWatermark;

  SkadeTableSource(
      Scan scan,
      Lookup lookup,
      Schema tableSchema,
      DataType physicalRowType,
      BucketShuffle buckets,
      SourceWatermarks sourceWatermarks) {
    this.scan = scan;
    this.lookup = lookup;
    this.tableSchema = tableSchema;
    this.physicalRowType = physicalRowType;
    this.producedDataType = physicalRowType;
    this.buckets = buckets;
    this.sourceWatermarks = sourceWatermarks;
  }

  private SkadeTableSource(SkadeTableSource other) {
    this(
        other.scan,
        other.lookup,
        other.tableSchema,
        other.physicalRowType,
        other.buckets,
        other.sourceWatermarks);
    this.projection = other.projection;
    this.metadataKeys = other.metadataKeys;
    this.producedDataType = other.producedDataType;
    this.filter = other.filter;
    this.limit = other.limit;
    this.aggregates = other.aggregates;
    this.aggregateTypes = other.aggregateTypes;
    this.shuffle = other.shuffle;
    this.watermarkStrategy = other.watermarkStrategy;
    this.sourceWatermark = other.sourceWatermark;
  }

  @Override
  public ChangelogMode getChangelogMode() {
    if (scan.batch() || scan.appendOnly()) {
      return ChangelogMode.insertOnly();
    }
    return scan.upsert() ? ChangelogMode.upsert(true) : ChangelogMode.all();
  }

  @Override
  public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
    if (metadataKeys.contains(AS_OF)) {
      throw new ValidationException(
          "skade table "
              + scan.table()
              + ": the metadata column '"
              + AS_OF
              + "' has a value only in a lookup join as of a time (JOIN ... FOR SYSTEM_TIME AS OF"
              + " p.proc_time AS d ON ... AND d."
              + AS_OF
              + " = p.event_time); leave it out of this query");
    }
    if (aggregates != null) {
      return InputFormatProvider.of(
          new SnapshotAggregateFormat(
              scan.catalogProperties(),
              scan.table(),
              scan.endSnapshotId(),
              aggregates,
              aggregateTypes),
          1);
    }
    List<String> physical = DataType.getFieldNames(physicalRowType);
    List<String> produced = new ArrayList<>();
    if (projection == null) {
      physical.forEach(name -> produced.add(icebergName(name)));
    } else {
      for (int index : projection) {
        produced.add(icebergName(physical.get(index)));
      }
    }
    // Key-only changes need the key; a projection of no column still needs rows to count.
    List<String> read = new ArrayList<>(produced);
    if (scan.upsert()) {
      tableSchema.identifierFieldNames().stream()
          .sorted()
          .filter(key -> !read.contains(key))
          .forEach(read::add);
    }
    if (read.isEmpty()) {
      read.add(tableSchema.columns().get(0).name());
    }
    // The source emits the columns read in the table's order, whatever order they were asked in.
    List<String> emitted =
        tableSchema.select(read).columns().stream().map(Types.NestedField::name).toList();
    int[] positions =
        emitted.equals(produced) ? null : produced.stream().mapToInt(emitted::indexOf).toArray();

    SkadeSourceBuilder<RowData> builder =
        SkadeSource.builder()
            .catalogProperties(scan.catalogProperties())
            .table(scan.table())
            .startup(scan.startupMode(), scan.startupValue())
            .changelogMode(scan.mode())
            .beforeImage(scan.beforeImage())
            .columns(read)
            .filter(filter)
            .pollInterval(scan.pollInterval());
    if (scan.endSnapshotId() != null) {
      builder.endSnapshot(scan.endSnapshotId());
    } else if (scan.bounded() || scan.batch()) {
      builder.bounded();
    }
    if (scan.consumerId() != null) {
      builder.consumerId(scan.consumerId());
    }
    if (sourceWatermark) {
      builder.commitTimeWatermarks(sourceWatermarks.idleTimeout());
    }
    if (limit != null && readsRowsOfOneSnapshot()) {
      builder.limit(limit);
    }
    List<MetadataColumn> metadata = metadataKeys.stream().map(MetadataColumn::of).toList();
    InternalTypeInfo<RowData> type =
        InternalTypeInfo.of((RowType) producedDataType.getLogicalType());
    SkadeSource<RowData> source =
        builder
            .deserializer(
                new SqlChangeDeserializer(
                    type,
                    positions,
                    metadata,
                    scan.upsert(),
                    scan.appendOnly() ? scan.table().toString() : null))
            .build();
    WatermarkStrategy<RowData> watermarks =
        sourceWatermark
            ? sourceWatermarks.strategy(source)
            : watermarkStrategy == null ? null : WatermarksOnEveryChange.of(watermarkStrategy);
    return watermarks == null
        ? SourceProvider.of(source, scan.parallelism())
        : new WatermarkedScan(source, watermarks, scan.table().toString(), scan.parallelism());
  }

  /**
   * A source read with a watermark: Flink's planner hands a {@link SourceProvider}'s source no
   * watermark strategy, so the source is added to the job with its own.
   */
  private record WatermarkedScan(
      SkadeSource<RowData> source,
      WatermarkStrategy<RowData> watermarks,
      String table,
      Integer parallelism)
      implements DataStreamScanProvider {

    @Override
    public DataStream<RowData> produceDataStream(
        ProviderContext context, StreamExecutionEnvironment env) {
      DataStreamSource<RowData> stream =
          env.fromSource(source, watermarks, "skade " + table, source.getProducedType());
      context.generateUid("source").ifPresent(stream::uid);
      return stream;
    }

    @Override
    public boolean isBounded() {
      return source.getBoundedness() == Boundedness.BOUNDED;
    }

    @Override
    public Optional<Integer> getParallelism() {
      return Optional.ofNullable(parallelism);
    }
  }

  /**
   * Takes the watermark the planner generates for {@code WATERMARK FOR c AS <expression>}: it is
   * generated per split in the source, where filters stay pushed down, and emitted after every
   * change ({@link WatermarksOnEveryChange}).
   */
  @Override
  public void applyWatermark(WatermarkStrategy<RowData> watermarkStrategy) {
    this.watermarkStrategy = watermarkStrategy;
  }

  /**
   * {@code WATERMARK FOR commit_time AS SOURCE_WATERMARK()} (checked to be on the commit-time
   * metadata column when the table was resolved): the readers' own watermark on commit time.
   */
  @Override
  public void applySourceWatermark() {
    this.sourceWatermark = true;
  }

  @Override
  public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
    List<String> changeColumns = metadataKeys.stream().filter(key -> !key.equals(AS_OF)).toList();
    if (!changeColumns.isEmpty()) {
      throw new ValidationException(
          "skade table "
              + scan.table()
              + ": metadata columns "
              + changeColumns
              + " describe changes and have no value in a lookup join; leave them"
              + " out of the query");
    }
    RowType produced = (RowType) producedDataType.getLogicalType();
    // The as-of column is the last of the produced row when the query uses it (metadata follow
    // the physical columns).
    int asOfOutput = metadataKeys.contains(AS_OF) ? produced.getFieldCount() - 1 : -1;
    List<String> keyColumns = new ArrayList<>();
    List<RowType.RowField> keyFields = new ArrayList<>();
    int asOfKey = -1;
    for (int[] path : context.getKeys()) {
      if (path.length != 1) {
        throw new ValidationException(
            "skade table "
                + scan.table()
                + ": lookup keys must be"
                + " top-level columns, not nested fields");
      }
      if (path[0] == asOfOutput) {
        asOfKey = keyFields.size();
      } else {
        keyColumns.add(icebergName(produced.getFieldNames().get(path[0])));
      }
      keyFields.add(produced.getFields().get(path[0]));
    }
    if (asOfOutput >= 0) {
      requireAsOfLookup(asOfKey);
    }
    List<String> output = new ArrayList<>();
    for (int i = 0; i < produced.getFieldCount(); i++) {
      output.add(i == asOfOutput ? AS_OF : icebergName(produced.getFieldNames().get(i)));
    }
    // The filters accepted by applyFilters are applied by the engine, in every cache mode.
    TableLookup.Settings engine =
        new TableLookup.Settings(
            keyColumns,
            lookup.snapshotId(),
            lookup.pollInterval(),
            lookup.engineCaching(),
            lookup.rowCacheMaxRows(),
            filter,
            lookup.maxRetries(),
            lookup.diskCacheDir(),
            lookup.diskCacheMaxBytes(),
            lookup.asOfRetention());
    SkadeLookup.Settings settings =
        new SkadeLookup.Settings(
            scan.catalogProperties(), scan.table().toString(), output, asOfKey, asOfOutput, engine);
    RowType keyType = new RowType(keyFields);
    // Flink asks for the partitioner after the provider, with key rows in the same order.
    List<String> keyRowColumns = new ArrayList<>(keyColumns);
    if (asOfKey >= 0) {
      keyRowColumns.add(asOfKey, null); // the probe's time, no column of the table
    }
    shuffle = buckets == null ? null : buckets.partitioner(keyRowColumns, keyType).orElse(null);
    SkadeLookup probes = new SkadeLookup(settings, keyType);
    if (lookup.async()) {
      SkadeAsyncLookupFunction function =
          new SkadeAsyncLookupFunction(probes, lookup.asyncThreads());
      return lookup.flinkCache() == null
          ? AsyncLookupFunctionProvider.of(function)
          : PartialCachingAsyncLookupProvider.of(function, lookup.flinkCache());
    }
    SkadeLookupFunction function = new SkadeLookupFunction(probes);
    return lookup.flinkCache() == null
        ? LookupFunctionProvider.of(function)
        : PartialCachingLookupProvider.of(function, lookup.flinkCache());
  }

  /**
   * Refuses, before any I/O, an as-of lookup the engine could not answer: one whose as-of column is
   * not compared with the probe's time, or that is pinned to a snapshot or keeps every row in
   * memory (only the latest).
   */
  private void requireAsOfLookup(int asOfKey) {
    String problem = null;
    if (asOfKey < 0) {
      problem =
          "the metadata column '"
              + AS_OF
              + "' has a value only as a lookup key: join ON ... AND d."
              + AS_OF
              + " = <the probe's time>";
    } else if (lookup.snapshotId() != null) {
      problem =
          "an as-of lookup reads the snapshot current at the probe's time, but 'lookup.snapshot-id'"
              + " pins one; remove it";
    } else if (lookup.cacheType() == LookupOptions.LookupCacheType.FULL) {
      problem =
          "an as-of lookup reads the snapshot current at the probe's time, but 'lookup.cache' ="
              + " 'FULL' keeps only the latest rows; use 'NONE' (with 'lookup.row-cache.max-rows'"
              + " if keys repeat) or 'PARTIAL'";
    }
    if (problem != null) {
      throw new ValidationException("skade table " + scan.table() + ": " + problem);
    }
  }

  /** The table's name of a DDL column (names match regardless of case). */
  private String icebergName(String ddlName) {
    return tableSchema.caseInsensitiveFindField(ddlName).name();
  }

  @Override
  public boolean supportsNestedProjection() {
    return false;
  }

  @Override
  public void applyProjection(int[][] projectedFields, DataType producedDataType) {
    this.projection = new int[projectedFields.length];
    for (int i = 0; i < projectedFields.length; i++) {
      projection[i] = projectedFields[i][0];
    }
    this.producedDataType = producedDataType;
  }

  @Override
  public Result applyFilters(List<ResolvedExpression> filters) {
    // In key-only mode old rows carry only their key, so only the key can be tested on them.
    Set<String> filterable =
        (scan.upsert()
                ? tableSchema.identifierFieldNames()
                : DataType.getFieldNames(physicalRowType))
            .stream().map(name -> name.toLowerCase(Locale.ROOT)).collect(Collectors.toSet());
    SkadeFilters converter = new SkadeFilters(tableSchema, filterable);
    List<ResolvedExpression> accepted = new ArrayList<>();
    List<ResolvedExpression> remaining = new ArrayList<>();
    for (ResolvedExpression candidate : filters) {
      Optional<Expression> exact = converter.convert(candidate);
      if (exact.isPresent()) {
        filter = Expressions.and(filter, exact.get());
        accepted.add(candidate);
      } else {
        remaining.add(candidate);
      }
    }
    // Flink 2.1 leaves a source's pushed filters out of a LookupJoin's digest, so its sub-plan
    // reuse merges two lookup joins of one table with different conditions into one. Accepted
    // filters therefore stay in the plan as well (as Iceberg's own source keeps them all), and
    // skade applies them too, where they prune files and keep rows out of the caches. In
    // key-only mode the plan keeps only the others: a filter over an upsert stream would make
    // the planner add a ChangelogNormalize.
    return Result.of(accepted, scan.upsert() ? remaining : filters);
  }

  @Override
  public Map<String, DataType> listReadableMetadata() {
    Map<String, DataType> metadata = new LinkedHashMap<>();
    metadata.put(MetadataColumn.CHANGE_TYPE.key, DataTypes.STRING().notNull());
    metadata.put(MetadataColumn.COMMIT_SEQ.key, DataTypes.BIGINT().notNull());
    metadata.put(MetadataColumn.SNAPSHOT_ID.key, DataTypes.BIGINT().notNull());
    metadata.put(MetadataColumn.COMMIT_TIME.key, DataTypes.TIMESTAMP_LTZ(3).notNull());
    metadata.put(AS_OF, DataTypes.TIMESTAMP_LTZ(3));
    return metadata;
  }

  @Override
  public void applyReadableMetadata(List<String> metadataKeys, DataType producedDataType) {
    this.metadataKeys = List.copyOf(metadataKeys);
    this.producedDataType = producedDataType;
  }

  /**
   * With the hint {@code LOOKUP('table'='...', 'shuffle'='true')}, the join's input goes to the
   * lookup task of its key's bucket ({@link BucketShuffle}), when the table is bucketed by one of
   * the lookup keys; otherwise it stays as it is.
   */
  @Override
  public Optional<InputDataPartitioner> getPartitioner() {
    return Optional.ofNullable(shuffle);
  }

  /**
   * Reads at most {@code limit} rows per reader where the read is one snapshot's rows (a batch
   * query, or a bounded read from {@code full}): readers stop there, and read only the files those
   * rows need. A changelog's changes are not rows, so other reads take no limit; the planner's own
   * limit applies over the readers either way.
   */
  @Override
  public void applyLimit(long limit) {
    this.limit = limit;
  }

  /**
   * Takes a query's {@code COUNT(*)}s, and its {@code MIN}s and {@code MAX}es of columns whose
   * bounds the manifests keep exactly (integers, decimals, dates, times, timestamps, booleans) — no
   * grouping, no filter, no {@code DISTINCT} — where the read is one snapshot's rows and no delete
   * file applies to that snapshot's data files. They are then answered from the manifests of the
   * snapshot read when the job runs (read with its deletes if one has come since, or where a file
   * lacks a column's bounds). Anything else is left to Flink over a scan, which reads a
   * merge-on-read table in parallel.
   */
  @Override
  public boolean applyAggregates(
      List<int[]> groupingSets, List<AggregateExpression> aggregates, DataType producedDataType) {
    if (groupingSets.size() != 1
        || groupingSets.get(0).length != 0
        || aggregates.isEmpty()
        || !readsRowsOfOneSnapshot()
        || filter.op() != Expression.Operation.TRUE) {
      return false;
    }
    List<Aggregate> pushed = new ArrayList<>();
    for (AggregateExpression aggregate : aggregates) {
      Aggregate taken = taken(aggregate);
      if (taken == null) {
        return false;
      }
      pushed.add(taken);
    }
    if (!answeredByManifests()) {
      return false;
    }
    this.aggregates = pushed;
    this.aggregateTypes = producedDataType.getLogicalType().getChildren();
    return true;
  }

  /**
   * {@code aggregate} as skade computes it, or null. The planner hands its own functions (its
   * classes are hidden from connectors): {@code Count1AggFunction} for {@code COUNT(*)}, and for
   * {@code MIN}/{@code MAX} one per type, nested in {@code MinAggFunction}/{@code MaxAggFunction}.
   */
  private Aggregate taken(AggregateExpression aggregate) {
    if (aggregate.isDistinct() || aggregate.getFilterExpression().isPresent()) {
      return null;
    }
    Class<?> function = aggregate.getFunctionDefinition().getClass();
    if (function.getSimpleName().equals("Count1AggFunction") && aggregate.getArgs().isEmpty()) {
      return new Aggregate(SnapshotAggregates.Function.COUNT_STAR, null);
    }
    String family =
        function.getEnclosingClass() == null ? "" : function.getEnclosingClass().getSimpleName();
    if (aggregate.getArgs().size() != 1
        || !(family.equals("MinAggFunction") || family.equals("MaxAggFunction"))) {
      return null;
    }
    String column = icebergName(aggregate.getArgs().get(0).getName());
    Types.NestedField field = tableSchema.findField(column);
    if (field == null || !SnapshotAggregates.exactBounds(field.type())) {
      return null;
    }
    return new Aggregate(
        family.equals("MinAggFunction")
            ? SnapshotAggregates.Function.MIN
            : SnapshotAggregates.Function.MAX,
        column);
  }

  /**
   * Whether no delete file applies to the snapshot the query reads, as the table is now (its
   * summary says, so planning reads no manifest): then its manifests answer the aggregates.
   */
  private boolean answeredByManifests() {
    try (CatalogConnection connection = CatalogConnection.open(scan.catalogProperties())) {
      Table table = connection.catalog().loadTable(scan.table());
      Long at = SnapshotAggregateFormat.snapshotRead(table, scan.endSnapshotId());
      return at == null || SnapshotAggregates.withoutDeletes(table, at);
    }
  }

  private boolean readsRowsOfOneSnapshot() {
    return scan.startupMode() == StartupMode.FULL
        && (scan.batch() || scan.bounded() || scan.endSnapshotId() != null);
  }

  @Override
  public DynamicTableSource copy() {
    return new SkadeTableSource(this);
  }

  @Override
  public String asSummaryString() {
    return "skade table source";
  }
}
