package io.skade.table;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.CatalogDatabaseImpl;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.catalog.exceptions.DatabaseAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotExistException;
import org.apache.flink.table.catalog.exceptions.ProcedureNotExistException;
import org.apache.flink.table.catalog.exceptions.TableAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.TableNotExistException;
import org.apache.flink.table.factories.Factory;
import org.apache.flink.table.procedures.Procedure;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.ReplaceSortOrder;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.flink.FlinkCatalog;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The {@code skade} Flink catalog: the databases of a warehouse's skade catalog are its Iceberg
 * namespaces, its tables are Iceberg tables read and written by skade's source and sink. Iceberg's
 * {@link FlinkCatalog} maps databases, tables, keys and schema changes on a skade catalog that
 * shares the JVM's open store of the directory (with the user's own catalogs, sources, sinks and
 * lookups) or, with {@code uri}, on the catalog of a skade server through Iceberg's REST client;
 * this class serves tables with skade's connector.
 */
final class SkadeFlinkCatalog extends FlinkCatalog {
  private final ConnectionCatalogLoader loader;
  private final Map<String, String> catalogProperties;

  SkadeFlinkCatalog(String name, String defaultDatabase, Map<String, String> catalogProperties) {
    this(name, defaultDatabase, catalogProperties, new ConnectionCatalogLoader(catalogProperties));
  }

  private SkadeFlinkCatalog(
      String name,
      String defaultDatabase,
      Map<String, String> catalogProperties,
      ConnectionCatalogLoader loader) {
    super(name, defaultDatabase, Namespace.empty(), loader, catalogProperties, false, -1);
    this.loader = loader;
    this.catalogProperties = Map.copyOf(catalogProperties);
  }

  @Override
  public void open() throws CatalogException {
    if (!databaseExists(getDefaultDatabase())) {
      try {
        createDatabase(getDefaultDatabase(), new CatalogDatabaseImpl(Map.of(), null), true);
      } catch (DatabaseAlreadyExistException e) {
        // created meanwhile: fine
      }
    }
  }

  /** Closes this catalog's skade catalog (and the store, if no other catalog holds it). */
  @Override
  public void close() throws CatalogException {
    loader.release();
  }

  @Override
  public Optional<Factory> getFactory() {
    return Optional.of(new SkadeDynamicTableFactory(catalogProperties));
  }

  /** skade's procedures, in the database {@code sys} ({@link SkadeProcedures}). */
  @Override
  public List<String> listProcedures(String database) throws DatabaseNotExistException {
    if (!SkadeProcedures.DATABASE.equals(database)) {
      if (!databaseExists(database)) {
        throw new DatabaseNotExistException(getName(), database);
      }
      return List.of();
    }
    return SkadeProcedures.NAMES;
  }

  @Override
  public Procedure getProcedure(ObjectPath path) throws ProcedureNotExistException {
    Procedure procedure =
        SkadeProcedures.DATABASE.equals(path.getDatabaseName())
            ? SkadeProcedures.named(path.getObjectName(), getName(), catalogProperties)
            : null;
    if (procedure == null) {
      throw new ProcedureNotExistException(getName(), path);
    }
    return procedure;
  }

  /**
   * The table, with its Iceberg properties as options (skade's factory serves it) and its
   * {@linkplain #indexes indexes}; {@code t$commits} and {@code t$consumers} are skade's metadata
   * tables ({@link SkadeMetadataTables}), {@code t$snapshots} and the other {@code $} names
   * Iceberg's.
   */
  @Override
  public CatalogTable getTable(ObjectPath tablePath)
      throws TableNotExistException, CatalogException {
    Optional<SkadeMetadataTables.Kind> skade =
        SkadeMetadataTables.Kind.of(tablePath.getObjectName());
    if (skade.isPresent()) {
      if (!catalog().tableExists(SkadeMetadataTables.baseTable(tablePath))) {
        throw new TableNotExistException(getName(), tablePath);
      }
      return SkadeMetadataTables.table(skade.get());
    }
    CatalogTable table = super.getTable(tablePath);
    Map<String, String> options = new HashMap<>(table.getOptions());
    options.remove("connector");
    options.remove("src-catalog");
    List<List<String>> indexes =
        tablePath.getObjectName().contains("$")
            ? List.of() // Iceberg's
            : indexes(
                catalog()
                    .loadTable(
                        TableIdentifier.of(
                            Namespace.of(tablePath.getDatabaseName()), tablePath.getObjectName())));
    if (indexes.isEmpty()) {
      return table.copy(options);
    }
    org.apache.flink.table.api.Schema.Builder schema =
        org.apache.flink.table.api.Schema.newBuilder().fromSchema(table.getUnresolvedSchema());
    indexes.forEach(schema::index);
    return CatalogTable.newBuilder()
        .schema(schema.build())
        .comment(table.getComment())
        .partitionKeys(table.getPartitionKeys())
        .options(options)
        .build();
  }

  /**
   * The columns a lookup of {@code table} finds rows by cheaply, as Flink indexes (what the
   * planner's delta join probes a table by): the primary key (identifier fields), whose probe finds
   * one row, and the source columns of its identity and bucket partitions, whose probe reads one
   * partition or bucket — on a table with a key only when they are key columns, on a table without
   * one (a log table, whose bucket key is its only key) in any case.
   */
  static List<List<String>> indexes(Table table) {
    Schema schema = table.schema();
    Set<List<String>> indexes = new LinkedHashSet<>();
    List<String> key =
        schema.identifierFieldIds().stream().map(schema::findColumnName).sorted().toList();
    if (!key.isEmpty()) {
      indexes.add(key);
    }
    List<String> partitioning = new ArrayList<>();
    for (PartitionField field : table.spec().fields()) {
      // Iceberg names a bucket transform "bucket[N]" (its spec's form, which it parses too).
      boolean byValue =
          field.transform().isIdentity() || field.transform().toString().startsWith("bucket[");
      String column = schema.findColumnName(field.sourceId());
      if (!byValue || !key.isEmpty() && !key.contains(column)) {
        partitioning.clear();
        break;
      }
      if (!partitioning.contains(column)) {
        partitioning.add(column);
      }
    }
    if (!partitioning.isEmpty()) {
      indexes.add(List.copyOf(partitioning));
    }
    return List.copyOf(indexes);
  }

  /**
   * The table as of {@code timestamp} ({@code FOR SYSTEM_TIME AS OF TIMESTAMP '...'}): read as of
   * the snapshot current then ({@code scan.end.snapshot-id}), bounded.
   */
  @Override
  public CatalogBaseTable getTable(ObjectPath tablePath, long timestamp)
      throws TableNotExistException, CatalogException {
    CatalogTable table = getTable(tablePath);
    if (tablePath.getObjectName().contains("$")) {
      throw new ValidationException(
          "FOR SYSTEM_TIME AS OF on "
              + tablePath
              + ": metadata"
              + " tables have no history; query the table itself as of a time");
    }
    Table loaded =
        catalog()
            .loadTable(
                TableIdentifier.of(
                    Namespace.of(tablePath.getDatabaseName()), tablePath.getObjectName()));
    long snapshotId;
    try {
      snapshotId = SnapshotUtil.snapshotIdAsOfTime(loaded, timestamp);
    } catch (IllegalArgumentException e) {
      Snapshot oldest = SnapshotUtil.oldestAncestor(loaded);
      throw new ValidationException(
          "FOR SYSTEM_TIME AS OF "
              + Instant.ofEpochMilli(timestamp)
              + " on "
              + getName()
              + "."
              + tablePath
              + ": the table had no snapshot then; "
              + (oldest == null
                  ? "it has none yet"
                  : "its oldest is from " + Instant.ofEpochMilli(oldest.timestampMillis()))
              + ". Query a later time");
    }
    Map<String, String> options = new HashMap<>(table.getOptions());
    options.put(SkadeConnectorOptions.SCAN_END_SNAPSHOT_ID.key(), Long.toString(snapshotId));
    return table.copy(options);
  }

  /**
   * Creates the table as a skade sink would: format v2, bloom filters on the key columns, sorted by
   * the key; bucketed by {@code 'bucket'} / {@code 'bucket-key'} ({@link TableBuckets}), which
   * Iceberg's own table creation (identity partitions only) cannot do.
   */
  @Override
  public void createTable(ObjectPath tablePath, CatalogBaseTable table, boolean ignoreIfExists)
      throws CatalogException, TableAlreadyExistException {
    TableIdentifier id =
        TableIdentifier.of(Namespace.of(tablePath.getDatabaseName()), tablePath.getObjectName());
    if (table instanceof ResolvedCatalogTable resolved
        && resolved.getOptions().containsKey(TableBuckets.BUCKET)) {
      Map<String, String> options = TableBuckets.without(resolved.getOptions());
      options.remove("connector"); // the catalog's tables are skade's
      Schema schema = FlinkSchemaUtil.convert(resolved.getResolvedSchema());
      Optional<TableBuckets> buckets =
          TableBuckets.of(id.toString(), resolved.getOptions(), schema);
      try {
        TableResolution.create(
            catalog(), id, schema, resolved.getPartitionKeys(), buckets, options);
      } catch (AlreadyExistsException e) {
        if (!ignoreIfExists) {
          throw new TableAlreadyExistException(getName(), tablePath, e);
        }
      }
      return;
    }
    if (table instanceof ResolvedCatalogTable resolved) {
      Map<String, String> options =
          new HashMap<>(
              TableResolution.newTableProperties(
                  resolved
                      .getResolvedSchema()
                      .getPrimaryKey()
                      .map(key -> Set.copyOf(key.getColumns()))
                      .orElse(Set.of())));
      options.putAll(resolved.getOptions());
      options.remove("connector"); // the catalog's tables are skade's
      table = resolved.copy(options);
    }
    boolean existed = catalog().tableExists(id);
    super.createTable(tablePath, table, ignoreIfExists);
    Table created = catalog().loadTable(id);
    if (!existed && !created.schema().identifierFieldIds().isEmpty()) {
      ReplaceSortOrder replace = created.replaceSortOrder();
      TableResolution.keyOrder(created.schema(), created.schema().identifierFieldNames())
          .fields()
          .forEach(field -> replace.asc(created.schema().findColumnName(field.sourceId())));
      replace.commit();
    }
  }
}
