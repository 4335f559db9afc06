package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.FlinkWriteConf;
import org.apache.iceberg.flink.sink.RowDataTaskWriterFactory;
import org.apache.iceberg.flink.sink.SinkUtil;
import org.apache.iceberg.types.Types;

/**
 * Builds a {@link SkadeMultiTableSink}: the catalog and its tables, each with its key.
 *
 * <p>{@link #build()} opens the catalog once to check every table and key, and fails with an error
 * naming what is wrong.
 */
public final class SkadeMultiTableSinkBuilder {
  private Map<String, String> catalogProperties;
  // Per table, its key as given (empty: inserts only), or none to take the table's primary key.
  private final Map<TableIdentifier, Optional<List<String>>> tables = new LinkedHashMap<>();
  private ReadableConfig flinkConf = new Configuration();
  private String actor;
  private String uidSuffix;

  SkadeMultiTableSinkBuilder() {}

  /**
   * The skade catalog's properties: a {@code warehouse} (a catalog in this JVM) or a skade server's
   * {@code uri}, as for {@link SkadeSinkBuilder#catalogProperties}.
   */
  public SkadeMultiTableSinkBuilder catalogProperties(Map<String, String> properties) {
    this.catalogProperties = new HashMap<>(properties);
    return this;
  }

  /**
   * Writes {@code table} ({@code namespace.name}), upserting and deleting by its primary key (its
   * identifier fields); a table without one takes inserts only.
   */
  public SkadeMultiTableSinkBuilder table(String table) {
    tables.put(TableIdentifier.parse(table), Optional.empty());
    return this;
  }

  /**
   * Writes {@code table}, upserting and deleting by {@code key}'s columns (equality deletes); an
   * empty key takes inserts only.
   */
  public SkadeMultiTableSinkBuilder table(String table, List<String> key) {
    tables.put(TableIdentifier.parse(table), Optional.of(List.copyOf(key)));
    return this;
  }

  /** Flink's configuration, for Iceberg's {@code write.*} options set on the job. */
  public SkadeMultiTableSinkBuilder flinkConf(ReadableConfig config) {
    this.flinkConf = config;
    return this;
  }

  /** Who lineage names as the writer of the commits; by default the Flink job. */
  public SkadeMultiTableSinkBuilder lineageActor(String name) {
    this.actor = name;
    return this;
  }

  /**
   * A suffix of the uids of the operators the sink adds around its writers (the rows' check, the
   * pre-commit step), for stateful upgrades; the writer and committer take their uids from the
   * sink's ({@code rows.sinkTo(sink).uid(...)}).
   */
  public SkadeMultiTableSinkBuilder uidSuffix(String suffix) {
    this.uidSuffix = suffix;
    return this;
  }

  /** Checks the tables and keys against the catalog and builds the sink. */
  public SkadeMultiTableSink build() {
    if (catalogProperties == null
        || !catalogProperties.containsKey("warehouse")
            && !catalogProperties.containsKey(CatalogConnection.URI)) {
      throw new IllegalArgumentException(
          "skade multi-table sink: the catalog properties must name a 'warehouse' (a catalog in"
              + " this JVM) or a skade server's 'uri'; call catalogProperties(Map.of(\"warehouse\","
              + " \"/path\", ...))");
    }
    if (tables.isEmpty()) {
      throw new IllegalArgumentException(
          "skade multi-table sink: no table given; call table(\"db.name\") for each table");
    }
    Map<String, SkadeMultiTableSink.Target> targets = new LinkedHashMap<>();
    String location;
    try (CatalogConnection connection = CatalogConnection.forWriting(catalogProperties)) {
      location = connection.location();
      for (Map.Entry<TableIdentifier, Optional<List<String>>> table : tables.entrySet()) {
        targets.put(
            table.getKey().toString(),
            target(table.getKey(), load(connection, table.getKey()), table.getValue()));
      }
    }
    return new SkadeMultiTableSink(catalogProperties, location, targets, actor, uidSuffix);
  }

  private SkadeMultiTableSink.Target target(
      TableIdentifier identifier, Table table, Optional<List<String>> given) {
    Schema schema = table.schema();
    List<String> key = new ArrayList<>();
    for (String name : given.orElseGet(() -> primaryKey(schema))) {
      Types.NestedField field = schema.caseInsensitiveFindField(name);
      if (field == null) {
        throw new IllegalArgumentException(
            "skade multi-table sink: key column "
                + name
                + " is not a column of table "
                + identifier
                + "; its columns: "
                + schema.columns().stream().map(Types.NestedField::name).toList());
      }
      key.add(field.name());
    }
    List<Integer> keyIds = key.stream().map(name -> schema.findField(name).fieldId()).toList();
    for (PartitionField partition : table.spec().fields()) {
      if (!key.isEmpty() && !keyIds.contains(partition.sourceId())) {
        throw new IllegalArgumentException(
            "skade multi-table sink: table "
                + identifier
                + " is partitioned by column "
                + schema.findColumnName(partition.sourceId())
                + ", which its key "
                + key
                + " does not hold; an upsert must find a key's old row in its partition. Add the"
                + " column to the key");
      }
    }
    RowType type = FlinkSchemaUtil.convert(schema);
    PlannedTableLoader planned = new PlannedTableLoader(table);
    FlinkWriteConf conf = new FlinkWriteConf(table, Map.of(), flinkConf);
    FileFormat format = conf.dataFileFormat();
    RowDataTaskWriterFactory files =
        new RowDataTaskWriterFactory(
            planned::loadTable,
            type,
            conf.targetDataFileSize(),
            format,
            SinkUtil.writeProperties(format, conf, table),
            keyIds,
            !key.isEmpty());
    return new SkadeMultiTableSink.Target(
        type, TableRowRouting.positions(type, key), files, planned);
  }

  /** The table's identifier fields, in the order of its columns. */
  private static List<String> primaryKey(Schema schema) {
    return schema.columns().stream()
        .filter(field -> schema.identifierFieldIds().contains(field.fieldId()))
        .map(Types.NestedField::name)
        .toList();
  }

  private static Table load(CatalogConnection connection, TableIdentifier table) {
    try {
      return connection.catalog().loadTable(table);
    } catch (NoSuchTableException e) {
      throw new IllegalArgumentException(
          "skade multi-table sink: table "
              + table
              + " does not exist; create it first (SkadeCatalog.createTable, or CREATE TABLE in"
              + " SQL)",
          e);
    }
  }
}
