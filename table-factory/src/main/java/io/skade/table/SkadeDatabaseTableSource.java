package io.skade.table;

import static io.skade.table.SkadeConnectorOptions.SCAN_CONSISTENCY;
import static io.skade.table.SkadeConnectorOptions.SCAN_POLL_INTERVAL;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_COMMIT_SEQ;
import static io.skade.table.SkadeConnectorOptions.SCAN_STARTUP_MODE;
import static io.skade.table.SkadeConnectorOptions.SCAN_TABLES;

import io.skade.source.StartupMode;
import io.skade.source.database.Consistency;
import io.skade.source.database.DatabaseChange;
import io.skade.source.database.DatabaseChangeDeserializer;
import io.skade.source.database.RowJson;
import io.skade.source.database.SkadeDatabaseSource;
import io.skade.source.database.SkadeDatabaseSourceBuilder;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;

/**
 * A database changelog table: {@code CREATE TABLE t (table_name STRING, data STRING) WITH
 * ('connector' = 'skade', 'scan.tables' = 'shop\..*', ...)} reads the changes of every table of the
 * catalog whose name matches, in commit order ({@link SkadeDatabaseSource}), each as its table's
 * name and its row as a JSON object ({@link RowJson}) with the change's row kind; {@code
 * commit_seq}, {@code snapshot_id}, {@code commit_time} and {@code transaction_start} are metadata
 * columns.
 */
final class SkadeDatabaseTableSource implements ScanTableSource, SupportsReadingMetadata {
  /** The physical columns such a table declares, in order. */
  private static final List<String> COLUMNS = List.of("table_name", "data");

  /** Single-table options that mean nothing here: set, they are refused. */
  private static final List<ConfigOption<?>> NOT_APPLICABLE =
      List.of(
          SkadeConnectorOptions.TABLE,
          SkadeConnectorOptions.DATABASE,
          SkadeConnectorOptions.SCAN_BOUNDED,
          SkadeConnectorOptions.SCAN_APPEND_ONLY,
          SkadeConnectorOptions.SCAN_STARTUP_SNAPSHOT_ID,
          SkadeConnectorOptions.SCAN_STARTUP_TIMESTAMP_MILLIS,
          SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID,
          SkadeConnectorOptions.SCAN_TAG,
          SkadeConnectorOptions.SCAN_BRANCH,
          SkadeConnectorOptions.CHANGELOG_MODE,
          SkadeConnectorOptions.CHANGELOG_BEFORE_IMAGE);

  /** The metadata columns it offers, by key. */
  private static final Map<String, DataType> METADATA = metadata();

  private final Settings settings;
  private List<String> metadataKeys;

  /** The row the planner asks for: the physical columns, then the metadata; null until told. */
  private DataType producedType;

  /** What the declaration asks: the catalog, the tables, the consistency and where to start. */
  record Settings(
      Map<String, String> catalogProperties,
      String tables,
      Consistency consistency,
      Long startAfter,
      Duration pollInterval) {}

  private SkadeDatabaseTableSource(
      Settings settings, List<String> metadataKeys, DataType producedType) {
    this.settings = settings;
    this.metadataKeys = metadataKeys;
    this.producedType = producedType;
  }

  /** The source {@code context} declares, its options {@code declared}; a clear error otherwise. */
  static SkadeDatabaseTableSource of(
      CheckedOptions.Declared declared, DynamicTableFactory.Context context) {
    String name = context.getObjectIdentifier().asSummaryString();
    ReadableConfig config = declared.config();
    for (ConfigOption<?> option : NOT_APPLICABLE) {
      if (config.getOptional(option).isPresent()) {
        throw new ValidationException(
            "option '"
                + option.key()
                + "' of table "
                + name
                + " does not apply to a database changelog table ('"
                + SCAN_TABLES.key()
                + "' is set); remove it");
      }
    }
    ResolvedSchema schema = context.getCatalogTable().getResolvedSchema();
    List<Column> physical = schema.getColumns().stream().filter(Column::isPhysical).toList();
    if (!physical.stream().map(Column::getName).toList().equals(COLUMNS)
        || !physical.stream()
            .allMatch(
                column ->
                    column.getDataType().getLogicalType().getTypeRoot()
                        == LogicalTypeRoot.VARCHAR)) {
      throw new ValidationException(
          "table "
              + name
              + " reads a database changelog ('"
              + SCAN_TABLES.key()
              + "' is set), whose columns are (table_name STRING, data STRING) and metadata"
              + " columns; it declares "
              + physical.stream()
                  .map(column -> column.getName() + " " + column.getDataType())
                  .collect(Collectors.joining(", ", "(", ")")));
    }
    String tables = config.get(SCAN_TABLES);
    Consistency consistency;
    try {
      io.skade.changelog.TableSelection.matching(tables);
      consistency = Consistency.of(config.get(SCAN_CONSISTENCY));
    } catch (IllegalArgumentException e) {
      throw new ValidationException("table " + name + ": " + e.getMessage(), e);
    }
    return new SkadeDatabaseTableSource(
        new Settings(
            declared.catalogProperties(),
            tables,
            consistency,
            startAfter(config, name),
            config.get(SCAN_POLL_INTERVAL)),
        List.of(),
        null);
  }

  /** The commit after which the changes start: null for the log's end when the job starts. */
  private static Long startAfter(ReadableConfig config, String name) {
    String mode = config.getOptional(SCAN_STARTUP_MODE).orElse(StartupMode.LATEST.value());
    StartupMode startup;
    try {
      startup = StartupMode.of(mode);
    } catch (IllegalArgumentException e) {
      startup = null;
    }
    if (startup == StartupMode.LATEST) {
      return null;
    }
    if (startup == StartupMode.EARLIEST) {
      return 0L;
    }
    if (startup == StartupMode.FROM_COMMIT_SEQ) {
      return config
          .getOptional(SCAN_STARTUP_COMMIT_SEQ)
          .orElseThrow(
              () ->
                  new ValidationException(
                      "table "
                          + name
                          + ": '"
                          + SCAN_STARTUP_MODE.key()
                          + "' = 'from-commit-seq' needs '"
                          + SCAN_STARTUP_COMMIT_SEQ.key()
                          + "'"));
    }
    throw new ValidationException(
        "table "
            + name
            + " reads a database changelog, which starts 'latest' (the default), 'earliest' or"
            + " 'from-commit-seq'; '"
            + SCAN_STARTUP_MODE.key()
            + "' is '"
            + mode
            + "'");
  }

  @Override
  public ChangelogMode getChangelogMode() {
    return ChangelogMode.all();
  }

  @Override
  public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
    RowType produced =
        (RowType)
            (producedType != null
                    ? producedType
                    : DataTypes.ROW(
                        DataTypes.FIELD(COLUMNS.get(0), DataTypes.STRING()),
                        DataTypes.FIELD(COLUMNS.get(1), DataTypes.STRING())))
                .getLogicalType();
    SkadeDatabaseSourceBuilder<RowData> builder =
        SkadeDatabaseSource.builder()
            .catalogProperties(settings.catalogProperties())
            .tablesMatching(settings.tables())
            .consistency(settings.consistency())
            .pollInterval(settings.pollInterval())
            .deserializer(new Rows(InternalTypeInfo.of(produced), metadataKeys));
    if (settings.startAfter() != null) {
      builder.startAfterCommitSeq(settings.startAfter());
    }
    return SourceProvider.of(builder.build());
  }

  @Override
  public Map<String, DataType> listReadableMetadata() {
    return METADATA;
  }

  @Override
  public void applyReadableMetadata(List<String> keys, DataType produced) {
    this.metadataKeys = List.copyOf(keys);
    this.producedType = produced;
  }

  @Override
  public DynamicTableSource copy() {
    return new SkadeDatabaseTableSource(settings, metadataKeys, producedType);
  }

  @Override
  public String asSummaryString() {
    return "skade database changelog of tables matching " + settings.tables();
  }

  private static Map<String, DataType> metadata() {
    Map<String, DataType> metadata = new LinkedHashMap<>();
    metadata.put("commit_seq", DataTypes.BIGINT().notNull());
    metadata.put("snapshot_id", DataTypes.BIGINT().notNull());
    metadata.put("commit_time", DataTypes.TIMESTAMP_LTZ(3).notNull());
    metadata.put("transaction_start", DataTypes.BIGINT().notNull());
    return metadata;
  }

  /** A change as the table's row: its table, its row as JSON, the metadata asked for. */
  private static final class Rows implements DatabaseChangeDeserializer<RowData> {
    private static final long serialVersionUID = 1L;

    private final InternalTypeInfo<RowData> type;
    private final List<String> metadata;
    private transient RowJson json;

    Rows(InternalTypeInfo<RowData> type, List<String> metadata) {
      this.type = type;
      this.metadata = List.copyOf(metadata);
    }

    @Override
    public void deserialize(DatabaseChange change, Collector<RowData> out) {
      if (json == null) {
        json = new RowJson();
      }
      GenericRowData row = new GenericRowData(change.row().getRowKind(), 2 + metadata.size());
      row.setField(0, StringData.fromString(change.table().toString()));
      row.setField(1, StringData.fromString(json.of(change.rowType(), change.row())));
      for (int i = 0; i < metadata.size(); i++) {
        row.setField(
            2 + i,
            switch (metadata.get(i)) {
              case "commit_seq" -> change.commitSeq();
              case "snapshot_id" -> change.snapshotId();
              case "commit_time" -> TimestampData.fromEpochMillis(change.commitMillis());
              default -> change.transactionStart();
            });
      }
      out.collect(row);
    }

    @Override
    public InternalTypeInfo<RowData> getProducedType() {
      return type;
    }
  }
}
