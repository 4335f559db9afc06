package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.sink.SinkMaintenance;
import io.skade.sink.SkadeSink;
import io.skade.sink.SkadeSinkBuilder;
import io.skade.write.TableWriter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.RowLevelModificationScanContext;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsDeletePushDown;
import org.apache.flink.table.connector.sink.abilities.SupportsOverwrite;
import org.apache.flink.table.connector.sink.abilities.SupportsPartitioning;
import org.apache.flink.table.connector.sink.abilities.SupportsRowLevelDelete;
import org.apache.flink.table.connector.sink.abilities.SupportsRowLevelUpdate;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;

/**
 * A skade table written by SQL, through {@link SkadeSink}: Iceberg's Flink sink operators
 * committing via the skade catalog. A table with a primary key takes upserts and deletes (equality
 * deletes on the key); one without takes inserts. {@code INSERT OVERWRITE} (batch) replaces the
 * partitions written. {@code DELETE FROM} runs without a job when its WHERE converts exactly to an
 * Iceberg filter (whole files dropped, the rest deleted by position); otherwise, and for {@code
 * UPDATE}, the matching rows are written as deletes or upserts by key, which needs a primary key.
 */
final class SkadeTableSink
    implements DynamicTableSink,
        SupportsPartitioning,
        SupportsOverwrite,
        SupportsDeletePushDown,
        SupportsRowLevelDelete,
        SupportsRowLevelUpdate {

  private final Map<String, String> catalogProperties;
  private final TableIdentifier table;

  /** The table's schema when the job was planned. */
  private final Schema tableSchema;

  /** The DDL's physical columns and primary key. */
  private final ResolvedSchema physical;

  private final ReadableConfig config;
  private final Integer parallelism;

  /** Who lineage names as the writer of this sink's commits; null: the Flink job. */
  private final String lineageActor;

  private final SinkMaintenance maintenance;

  /** The branch committed to; null: main. */
  private final String branch;

  private boolean overwrite;
  private Expression deleteFilter;

  SkadeTableSink(
      Map<String, String> catalogProperties,
      TableIdentifier table,
      Schema tableSchema,
      ResolvedSchema physical,
      ReadableConfig config,
      Integer parallelism,
      String lineageActor,
      SinkMaintenance maintenance,
      String branch) {
    this.catalogProperties = Map.copyOf(catalogProperties);
    this.table = table;
    this.tableSchema = tableSchema;
    this.physical = physical;
    this.config = config;
    this.parallelism = parallelism;
    this.lineageActor = lineageActor;
    this.maintenance = maintenance;
    this.branch = branch;
  }

  private List<String> primaryKey() {
    return physical
        .getPrimaryKey()
        .map(
            key ->
                key.getColumns().stream()
                    .map(name -> tableSchema.caseInsensitiveFindField(name).name())
                    .toList())
        .orElse(List.of());
  }

  @Override
  public ChangelogMode getChangelogMode(ChangelogMode requested) {
    if (primaryKey().isEmpty() || overwrite) {
      return ChangelogMode.insertOnly();
    }
    // Deletes and updates by key: the old row (-U) is not needed, nor more than the key of -D.
    return ChangelogMode.upsert(true);
  }

  @Override
  public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
    if (overwrite && !context.isBounded()) {
      throw new TableException(
          "INSERT OVERWRITE into skade table "
              + table
              + " needs a bounded"
              + " input: run it in batch mode (SET 'execution.runtime-mode' = 'batch')");
    }
    SkadeSinkBuilder sink =
        SkadeSink.builder()
            .catalogProperties(catalogProperties)
            .table(table)
            .tableSchema(tableSchema) // loaded by the factory: no second catalog open
            .schema(physical)
            .flinkConf(config)
            .overwrite(overwrite)
            .lineageActor(lineageActor)
            .maintenance(maintenance);
    if (branch != null) {
      sink.toBranch(branch);
    }
    // An overwrite replaces whole partitions and may not carry deletes: plain inserts.
    if (!overwrite) {
      sink.upsertKey(primaryKey());
    }
    return SinkV2Provider.of(sink.build(), parallelism);
  }

  @Override
  public void applyStaticPartition(Map<String, String> partition) {
    // The static values are already in the rows; the writer places them in their partition.
  }

  @Override
  public void applyOverwrite(boolean overwrite) {
    this.overwrite = overwrite;
  }

  @Override
  public boolean applyDeleteFilters(List<ResolvedExpression> filters) {
    requireMain("DELETE");
    SkadeFilters converter =
        new SkadeFilters(
            tableSchema,
            physical.getColumnNames().stream()
                .map(name -> name.toLowerCase(Locale.ROOT))
                .collect(Collectors.toSet()));
    Expression all = Expressions.alwaysTrue();
    for (ResolvedExpression filter : filters) {
      Optional<Expression> exact = converter.convert(filter);
      if (exact.isEmpty()) {
        return false;
      }
      all = Expressions.and(all, exact.get());
    }
    deleteFilter = all;
    return true;
  }

  @Override
  public Optional<Long> executeDeletion() {
    try (CatalogConnection connection = CatalogConnection.forWriting(catalogProperties)) {
      Table loaded = connection.catalog().loadTable(table);
      Snapshot before = loaded.currentSnapshot();
      Snapshot after = new TableWriter(loaded).overwrite(deleteFilter, List.of());
      if (after == null || after == before) {
        return Optional.of(0L);
      }
      Map<String, String> summary = after.summary();
      return Optional.of(
          count(summary, SnapshotSummary.DELETED_RECORDS_PROP)
              + count(summary, SnapshotSummary.ADDED_POS_DELETES_PROP));
    }
  }

  private static long count(Map<String, String> summary, String key) {
    return Long.parseLong(summary.getOrDefault(key, "0"));
  }

  @Override
  public RowLevelDeleteInfo applyRowLevelDelete(RowLevelModificationScanContext context) {
    requireMain("DELETE");
    requireKey("DELETE");
    return new RowLevelDeleteInfo() {}; // the deleted rows arrive as -D: deleted by key
  }

  @Override
  public RowLevelUpdateInfo applyRowLevelUpdate(
      List<Column> updatedColumns, RowLevelModificationScanContext context) {
    requireMain("UPDATE");
    requireKey("UPDATE");
    List<String> key = primaryKey().stream().map(name -> name.toLowerCase(Locale.ROOT)).toList();
    List<String> updatedKey =
        updatedColumns.stream()
            .map(Column::getName)
            .filter(name -> key.contains(name.toLowerCase(Locale.ROOT)))
            .toList();
    if (!updatedKey.isEmpty()) {
      throw new TableException(
          "UPDATE of skade table "
              + table
              + " sets primary key column(s) "
              + updatedKey
              + "; a key cannot be updated in place. DELETE the row and INSERT it with"
              + " the new key instead");
    }
    return new RowLevelUpdateInfo() {}; // the updated rows arrive as +U: upserted by key
  }

  /** DELETE and UPDATE find their rows by reading main, so they cannot change another branch. */
  private void requireMain(String statement) {
    if (branch != null) {
      throw new TableException(
          statement
              + " on skade table "
              + table
              + " with 'sink.branch' = '"
              + branch
              + "': the rows it changes are found by reading main, not the branch. Write the"
              + " branch's changes as rows (INSERT of upserts), or run the "
              + statement
              + " on main");
    }
  }

  private void requireKey(String statement) {
    if (!primaryKey().isEmpty()) {
      return;
    }
    if (statement.equals("DELETE")) {
      throw new TableException(
          "DELETE on skade table "
              + table
              + ", which has no primary key,"
              + " works only with a WHERE clause skade can apply exactly to the files: comparisons"
              + " of columns with literals (=, <>, <, <=, >, >=, LIKE 'prefix%'), IS [NOT] NULL,"
              + " AND, OR and NOT. Simplify the condition, or declare a PRIMARY KEY (NOT ENFORCED)"
              + " so rows can be deleted by key");
    }
    throw new TableException(
        "UPDATE on skade table "
            + table
            + " needs a primary key: rows"
            + " are updated by key. Declare a PRIMARY KEY (NOT ENFORCED) on the table");
  }

  @Override
  public DynamicTableSink copy() {
    SkadeTableSink copy =
        new SkadeTableSink(
            catalogProperties,
            table,
            tableSchema,
            physical,
            config,
            parallelism,
            lineageActor,
            maintenance,
            branch);
    copy.overwrite = overwrite;
    copy.deleteFilter = deleteFilter;
    return copy;
  }

  @Override
  public String asSummaryString() {
    return "skade table sink";
  }
}
