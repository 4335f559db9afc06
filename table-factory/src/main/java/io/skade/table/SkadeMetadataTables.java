package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.catalog.StoredConsumer;
import io.skade.sink.SkadeTableLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.ProviderContext;
import org.apache.flink.table.connector.source.DataStreamScanProvider;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.source.IcebergTableSource;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * skade's own metadata tables of a table {@code t} in a {@code skade} catalog, beside Iceberg's
 * ({@code t$snapshots}, {@code t$files}, {@code t$history}, ..., which Iceberg's Flink source
 * reads): {@code t$commits}, the table's rows of the catalog's commit log, and {@code t$consumers},
 * the consumers stored for it with their lag behind the table. skade's are read as the catalog
 * stands when the query is planned.
 */
final class SkadeMetadataTables {
  /** Which of skade's metadata tables a name like {@code orders$commits} is. */
  enum Kind {
    COMMITS(
        DataTypes.ROW(
            DataTypes.FIELD("commit_seq", DataTypes.BIGINT().notNull()),
            DataTypes.FIELD("operation", DataTypes.STRING().notNull()),
            DataTypes.FIELD(
                "snapshot_ids", DataTypes.ARRAY(DataTypes.BIGINT().notNull()).notNull()),
            DataTypes.FIELD("committed_at", DataTypes.TIMESTAMP_LTZ(6).notNull()),
            DataTypes.FIELD("metadata_location", DataTypes.STRING().notNull()),
            DataTypes.FIELD("transaction_seq", DataTypes.BIGINT().notNull()))),
    CONSUMERS(
        DataTypes.ROW(
            DataTypes.FIELD("consumer_id", DataTypes.STRING().notNull()),
            DataTypes.FIELD("snapshot_id", DataTypes.BIGINT()),
            DataTypes.FIELD("commit_seq", DataTypes.BIGINT().notNull()),
            DataTypes.FIELD("last_seen", DataTypes.TIMESTAMP_LTZ(3).notNull()),
            DataTypes.FIELD("lag_commits", DataTypes.BIGINT().notNull()),
            DataTypes.FIELD("lag_snapshots", DataTypes.BIGINT())));

    final DataType type;

    Kind(DataType type) {
      this.type = type;
    }

    /** The kind {@code objectName} ({@code table$kind}) names, if it is one of skade's. */
    static Optional<Kind> of(String objectName) {
      int dollar = objectName.lastIndexOf('$');
      if (dollar < 0) {
        return Optional.empty();
      }
      String suffix = objectName.substring(dollar + 1);
      for (Kind kind : values()) {
        if (kind.name().equalsIgnoreCase(suffix)) {
          return Optional.of(kind);
        }
      }
      return Optional.empty();
    }
  }

  private SkadeMetadataTables() {}

  /** The base table of a metadata table's path: {@code shop.orders} of {@code orders$commits}. */
  static TableIdentifier baseTable(ObjectPath path) {
    String name = path.getObjectName();
    return TableIdentifier.of(path.getDatabaseName(), name.substring(0, name.lastIndexOf('$')));
  }

  /** The Flink table of {@code kind}. */
  static CatalogTable table(Kind kind) {
    return CatalogTable.newBuilder()
        .schema(Schema.newBuilder().fromRowDataType(kind.type).build())
        .comment("skade " + kind.name().toLowerCase(Locale.ROOT) + " of the table")
        .options(Map.of())
        .build();
  }

  /**
   * The source of the metadata table at {@code path}: skade's ({@link Kind}), or Iceberg's own
   * source of Iceberg's metadata table, loaded through a skade table loader (which opens and
   * releases a connection of its own, not the Flink catalog's).
   */
  static ScanTableSource source(
      Map<String, String> catalogProperties, ObjectPath path, DynamicTableFactory.Context context) {
    TableIdentifier base = baseTable(path);
    Optional<Kind> skade = Kind.of(path.getObjectName());
    if (skade.isPresent()) {
      return source(skade.get(), catalogProperties, base);
    }
    String suffix = path.getObjectName().substring(path.getObjectName().lastIndexOf('$') + 1);
    TableIdentifier metadataTable =
        TableIdentifier.of(Namespace.of(path.getDatabaseName(), base.name()), suffix);
    ResolvedSchema physical =
        TableResolution.physical(context.getCatalogTable().getResolvedSchema());
    return new IcebergTableSource(
        new SkadeTableLoader(catalogProperties, metadataTable),
        physical,
        context.getCatalogTable().getOptions(),
        context.getConfiguration());
  }

  /** A bounded source of {@code kind}'s rows for {@code table}, read when planned. */
  private static ScanTableSource source(
      Kind kind, Map<String, String> catalogProperties, TableIdentifier table) {
    List<RowData> rows;
    try (CatalogConnection connection = CatalogConnection.open(catalogProperties)) {
      Table loaded = TableResolution.load(connection, table);
      rows =
          kind == Kind.COMMITS
              ? commits(connection.feed(), table)
              : consumers(connection, connection.feed(), table, loaded);
    }
    return new Rows(kind, rows);
  }

  private static List<RowData> commits(CommitFeed feed, TableIdentifier table) {
    List<RowData> rows = new ArrayList<>();
    for (CommitEvent commit : commitsOf(feed, table)) {
      rows.add(
          GenericRowData.of(
              commit.commitSeq(),
              StringData.fromString(commit.operation().name().toLowerCase(Locale.ROOT)),
              new GenericArrayData(commit.addedSnapshotIds().toArray()),
              TimestampData.fromEpochMillis(
                  commit.tsMicros() / 1000, (int) (commit.tsMicros() % 1000) * 1000),
              StringData.fromString(commit.metadataLocation()),
              commit.transactionSeq()));
    }
    return rows;
  }

  /** The table's commits, in log order: one pass over the catalog's log. */
  private static List<CommitEvent> commitsOf(CommitFeed feed, TableIdentifier table) {
    String key = feed.commitTableKey(table);
    List<CommitEvent> commits = new ArrayList<>();
    for (CommitEvent commit : feed.commitsSince(0)) {
      if (commit.tableKey().equals(key)) {
        commits.add(commit);
      }
    }
    return commits;
  }

  private static List<RowData> consumers(
      CatalogConnection connection, CommitFeed feed, TableIdentifier table, Table loaded) {
    List<StoredConsumer> stored = connection.consumers().consumers(table);
    List<CommitEvent> commits = stored.isEmpty() ? List.of() : commitsOf(feed, table);
    List<RowData> rows = new ArrayList<>();
    for (StoredConsumer consumer : stored) {
      if (!consumer.cursor().tableUuid().equals(loaded.uuid().toString())) {
        continue; // a cursor of a table dropped and created again under this name
      }
      long seq = consumer.cursor().commitSeq();
      long lagCommits = commits.stream().filter(commit -> commit.commitSeq() > seq).count();
      long snapshot = consumer.cursor().snapshotId();
      rows.add(
          GenericRowData.of(
              StringData.fromString(consumer.consumerId()),
              snapshot < 0 ? null : snapshot,
              seq,
              TimestampData.fromInstant(consumer.lastSeen()),
              lagCommits,
              lagSnapshots(loaded, snapshot)));
    }
    return rows;
  }

  /** Snapshots of the current ancestry after {@code snapshotId}; null if it is gone. */
  private static Long lagSnapshots(Table table, long snapshotId) {
    long lag = 0;
    for (Snapshot snapshot : SnapshotUtil.currentAncestors(table)) {
      if (snapshot.snapshotId() == snapshotId) {
        return lag;
      }
      lag++;
    }
    return snapshotId < 0 ? lag : null;
  }

  /** The rows, as a bounded insert-only source. */
  private record Rows(Kind kind, List<RowData> rows) implements ScanTableSource {
    @Override
    public ChangelogMode getChangelogMode() {
      return ChangelogMode.insertOnly();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
      InternalTypeInfo<RowData> type = InternalTypeInfo.of((RowType) kind.type.getLogicalType());
      return new DataStreamScanProvider() {
        @Override
        public DataStream<RowData> produceDataStream(
            ProviderContext provider, StreamExecutionEnvironment env) {
          return env.fromData(rows, type).name("skade " + kind.name().toLowerCase(Locale.ROOT));
        }

        @Override
        public boolean isBounded() {
          return true;
        }
      };
    }

    @Override
    public DynamicTableSource copy() {
      return new Rows(kind, rows);
    }

    @Override
    public String asSummaryString() {
      return "skade " + kind.name().toLowerCase(Locale.ROOT);
    }
  }
}
