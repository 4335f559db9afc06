package io.skade.table;

import io.skade.catalog.CatalogConnection;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * Matches a Flink table declaration with its Iceberg table: finds it (or, for a sink, creates it
 * from the declaration) and checks that the declared columns and key fit the table, naming every
 * column that does not.
 */
final class TableResolution {
  private TableResolution() {}

  /** Only the physical columns and the primary key of {@code schema}. */
  static ResolvedSchema physical(ResolvedSchema schema) {
    List<Column> columns = schema.getColumns().stream().filter(Column::isPhysical).toList();
    return new ResolvedSchema(columns, List.of(), schema.getPrimaryKey().orElse(null));
  }

  /** The table {@code id}; an error listing the namespace's tables when it does not exist. */
  static Table load(CatalogConnection connection, TableIdentifier id) {
    try {
      return connection.catalog().loadTable(id);
    } catch (NoSuchTableException e) {
      String existing;
      if (connection.namespaces().namespaceExists(id.namespace())) {
        List<String> names =
            connection.catalog().listTables(id.namespace()).stream()
                .map(TableIdentifier::name)
                .sorted()
                .toList();
        existing =
            "tables in namespace '"
                + id.namespace()
                + "': "
                + (names.isEmpty() ? "none" : String.join(", ", names));
      } else {
        existing =
            "namespace '"
                + id.namespace()
                + "' does not exist either; namespaces: "
                + connection.namespaces().listNamespaces().stream()
                    .map(Namespace::toString)
                    .sorted()
                    .toList();
      }
      throw new ValidationException(
          "skade table "
              + id
              + " does not exist in the catalog of "
              + connection.location()
              + "; "
              + existing
              + ". Check the options 'database' and"
              + " 'table' (they default to the Flink database and table name), or write to the"
              + " table first: a skade sink creates it from its DDL",
          e);
    }
  }

  /**
   * The table {@code id}, created from {@code schema} (physical columns, primary key), the
   * partition keys and the buckets when missing: see {@link #create}.
   */
  static Table loadOrCreate(
      CatalogConnection connection,
      TableIdentifier id,
      ResolvedSchema schema,
      List<String> partitionKeys,
      Optional<TableBuckets> buckets) {
    Catalog catalog = connection.catalog();
    if (catalog.tableExists(id)) {
      return catalog.loadTable(id);
    }
    if (!connection.namespaces().namespaceExists(id.namespace())) {
      try {
        connection.namespaces().createNamespace(id.namespace());
      } catch (AlreadyExistsException e) {
        // created meanwhile: fine
      }
    }
    try {
      return create(catalog, id, FlinkSchemaUtil.convert(schema), partitionKeys, buckets, Map.of());
    } catch (AlreadyExistsException e) {
      return catalog.loadTable(id);
    }
  }

  /**
   * Creates {@code id}: format v2, the key as identifier fields and sort order, Parquet bloom
   * filters on the key columns, partitioned by identity of {@code partitionKeys} and by the
   * buckets, with {@code properties} besides.
   */
  static Table create(
      Catalog catalog,
      TableIdentifier id,
      Schema icebergSchema,
      List<String> partitionKeys,
      Optional<TableBuckets> buckets,
      Map<String, String> properties) {
    PartitionSpec.Builder spec = PartitionSpec.builderFor(icebergSchema);
    partitionKeys.forEach(spec::identity);
    // A log table bucketed by a column is looked up by it (the catalog declares it an index, a
    // delta join probes it): laid out for that as a keyed table is for its key.
    Set<String> lookupKey =
        icebergSchema.identifierFieldNames().isEmpty() && buckets.isPresent()
            ? Set.of(buckets.get().column())
            : icebergSchema.identifierFieldNames();
    Map<String, String> all = new HashMap<>(newTableProperties(lookupKey));
    buckets.ifPresent(
        bucketing -> {
          bucketing.addTo(spec);
          all.putAll(bucketing.properties());
        });
    all.putAll(properties);
    return catalog
        .buildTable(id, icebergSchema)
        .withPartitionSpec(spec.build())
        .withSortOrder(keyOrder(icebergSchema, lookupKey))
        .withProperties(all)
        .create();
  }

  /** Ascending by {@code keyColumns} (unsorted without them): files sorted by key. */
  static SortOrder keyOrder(Schema schema, Set<String> keyColumns) {
    SortOrder.Builder order = SortOrder.builderFor(schema);
    keyColumns.stream().sorted().forEach(order::asc);
    return order.build();
  }

  /**
   * The properties skade gives a new table: format v2; with a key (or a log table's bucket key),
   * bloom filters on its columns and Parquet pages small enough for a point lookup to read only
   * what it needs.
   */
  static Map<String, String> newTableProperties(Set<String> keyColumns) {
    Map<String, String> properties = new HashMap<>();
    properties.put(TableProperties.FORMAT_VERSION, "2");
    for (String key : keyColumns) {
      properties.put(TableProperties.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX + key, "true");
    }
    if (!keyColumns.isEmpty()) {
      properties.putAll(io.skade.lookup.PointLookup.LOOKUP_FILE_PROPERTIES);
    }
    return properties;
  }

  /**
   * Checks that the declared physical columns and primary key of {@code ddl} fit {@code table}: for
   * a read, each declared column exists with the same type; for a write, the declaration lists
   * exactly the table's columns in its order, and the key is the table's.
   */
  static void requireCompatible(
      Table table, TableIdentifier id, ResolvedSchema ddl, boolean write) {
    Schema schema = table.schema();
    List<String> problems = new ArrayList<>();
    for (Column column : ddl.getColumns()) {
      Types.NestedField field = schema.caseInsensitiveFindField(column.getName());
      if (field == null) {
        problems.add("column '" + column.getName() + "': not in the table");
        continue;
      }
      LogicalType declared = column.getDataType().getLogicalType();
      String typeProblem = typeProblem(declared, field.type(), write);
      if (typeProblem != null) {
        problems.add("column '" + column.getName() + "': " + typeProblem);
      }
      if (write && field.isRequired() && declared.isNullable()) {
        problems.add(
            "column '"
                + column.getName()
                + "': the table requires a value but the DDL"
                + " column is nullable; declare it NOT NULL");
      }
      if (!write && !declared.isNullable() && field.isOptional()) {
        problems.add(
            "column '"
                + column.getName()
                + "': declared NOT NULL but the table's"
                + " column is optional; drop NOT NULL");
      }
    }
    if (write) {
      List<String> declared = ddl.getColumnNames().stream().map(TableResolution::lower).toList();
      List<String> actual = schema.columns().stream().map(f -> lower(f.name())).toList();
      for (String name : actual) {
        if (!declared.contains(name)) {
          problems.add(
              "column '"
                  + name
                  + "': in the table but not declared; a write must"
                  + " declare every column");
        }
      }
      if (problems.isEmpty() && !declared.equals(actual)) {
        problems.add(
            "columns: declared in the order "
                + declared
                + ", the table's order is "
                + actual
                + "; declare them in the table's order");
      }
    }
    Set<String> tableKey = lowerSet(schema.identifierFieldNames());
    Set<String> ddlKey = lowerSet(ddl.getPrimaryKey().map(k -> k.getColumns()).orElse(List.of()));
    if (!tableKey.equals(ddlKey) && (write || !ddlKey.isEmpty())) {
      problems.add(
          "primary key: declared " + ddlKey + ", the table's identifier fields are " + tableKey);
    }
    if (write && !tableKey.isEmpty()) {
      for (PartitionField partition : table.spec().fields()) {
        String source = lower(schema.findColumnName(partition.sourceId()));
        if (!tableKey.contains(source)) {
          problems.add(
              "partition column '"
                  + source
                  + "' is not part of the primary key "
                  + tableKey
                  + ", so rows cannot be upserted by key");
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new ValidationException(
          "the declaration of skade table "
              + id
              + " does not fit"
              + " the Iceberg table: "
              + String.join("; ", problems)
              + ". Table schema: "
              + schema.asStruct().fields().stream()
                  .map(Types.NestedField::toString)
                  .collect(Collectors.joining(", ")));
    }
  }

  /** Why values of {@code declared} cannot be read from (or written to) {@code type}, or null. */
  private static String typeProblem(LogicalType declared, Type type, boolean write) {
    Type asIceberg;
    try {
      asIceberg = FlinkSchemaUtil.convert(declared);
    } catch (RuntimeException e) {
      return "DDL type " + declared + " has no Iceberg type (" + e.getMessage() + ")";
    }
    LogicalType tableType = FlinkSchemaUtil.convert(type);
    boolean same =
        type.isPrimitiveType()
            ? asIceberg.equals(type)
            : tableType
                .copy(true)
                .asSerializableString()
                .equals(declared.copy(true).asSerializableString());
    // Rows are read in the table's own types: TINYINT or SMALLINT cannot take an int column.
    if (same
        && !write
        && declared.getTypeRoot() != tableType.getTypeRoot()
        && !(declared.getTypeRoot() == LogicalTypeRoot.CHAR
            && tableType.getTypeRoot() == LogicalTypeRoot.VARCHAR)) {
      same = false;
    }
    return same
        ? null
        : "DDL type "
            + declared.copy(true)
            + ", table type "
            + type
            + " (read as "
            + tableType.copy(true)
            + ")";
  }

  private static String lower(String name) {
    return name.toLowerCase(Locale.ROOT);
  }

  private static Set<String> lowerSet(Collection<String> names) {
    return names.stream()
        .map(TableResolution::lower)
        .collect(Collectors.toCollection(TreeSet::new));
  }
}
