package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;

/**
 * Builds a {@link SkadeSink}. Only the catalog and the table are required:
 *
 * <pre>{@code
 * rows.sinkTo(SkadeSink.builder()
 *     .catalogProperties(Map.of("warehouse", "/data/warehouse"))
 *     .table("shop.customers")
 *     .upsertKey(List.of("id"))   // +I/+U upsert by id, -D deletes by id; omit for inserts
 *     .build());
 * }</pre>
 *
 * <p>The writers run at the sink's parallelism: {@code rows.sinkTo(sink).setParallelism(4)}.
 *
 * <p>{@link #build()} opens the catalog once to check the table and the key, and fails with an
 * error naming what is wrong.
 */
public final class SkadeSinkBuilder {
  private Map<String, String> catalogProperties;
  private TableIdentifier table;
  private ResolvedSchema schema;
  private Schema tableSchema;
  private ReadableConfig flinkConf;
  private List<String> upsertKey = List.of();
  private boolean overwrite;
  private String actor;
  private String uidSuffix;
  private SinkMaintenance maintenance = SinkMaintenance.NONE;
  private String branch;

  SkadeSinkBuilder() {}

  /**
   * The skade catalog's properties ({@code warehouse}, {@code catalog.path}, ...), handed to the
   * catalog and its file IO as they are: a warehouse on S3 or HDFS takes Iceberg's own {@code
   * io-impl}, {@code s3.*}, {@code client.*} and {@code hadoop.*} keys here.
   */
  public SkadeSinkBuilder catalogProperties(Map<String, String> properties) {
    this.catalogProperties = new HashMap<>(properties);
    return this;
  }

  /** The table, e.g. {@code shop.customers}. */
  public SkadeSinkBuilder table(String name) {
    return table(TableIdentifier.parse(name));
  }

  public SkadeSinkBuilder table(TableIdentifier identifier) {
    this.table = identifier;
    return this;
  }

  /** The columns of the incoming rows, when they are not the table's own (SQL's DDL). */
  public SkadeSinkBuilder schema(ResolvedSchema columns) {
    this.schema = columns;
    return this;
  }

  /** Flink's configuration, for Iceberg's {@code write.*} options set on the job. */
  public SkadeSinkBuilder flinkConf(ReadableConfig config) {
    this.flinkConf = config;
    return this;
  }

  /**
   * Upserts by these columns: a row replaces the table's row with its key, a {@code -D} deletes it
   * (equality deletes). Without a key (the default), rows are inserted.
   */
  public SkadeSinkBuilder upsertKey(List<String> columns) {
    this.upsertKey = List.copyOf(columns);
    return this;
  }

  /** Replaces the partitions written (bounded input only); takes no key. */
  public SkadeSinkBuilder overwrite(boolean replace) {
    this.overwrite = replace;
    return this;
  }

  /** Who lineage names as the writer of the commits; by default the Flink job. */
  public SkadeSinkBuilder lineageActor(String name) {
    this.actor = name;
    return this;
  }

  /**
   * A suffix of the uids of Iceberg's operators around the writers (the pre-commit aggregator, the
   * maintenance operators), for stateful upgrades; the writer and committer take their uids from
   * the sink's ({@code rows.sinkTo(sink).uid(...)}).
   */
  public SkadeSinkBuilder uidSuffix(String suffix) {
    this.uidSuffix = suffix;
    return this;
  }

  /**
   * Maintains the table after the sink's commits: compaction that folds deletes into the data
   * files, snapshot expiry (kept back by live consumers) and orphan cleanup; see {@link
   * SinkMaintenance}. Off by default.
   */
  public SkadeSinkBuilder maintenance(SinkMaintenance settings) {
    this.maintenance = settings;
    return this;
  }

  /**
   * Commits to branch {@code name} of the table instead of {@code main}: the branch must exist
   * (create it with {@code TableRefs.createBranch}, or {@code CALL <catalog>.sys.create_branch} in
   * SQL), and a job's commits then move only that branch; readers of {@code main} see them once it
   * is fast-forwarded. Not with maintenance, which works on {@code main}.
   */
  public SkadeSinkBuilder toBranch(String name) {
    this.branch = name;
    return this;
  }

  /**
   * The table's schema, when the caller has just loaded the table (as SQL planning has): {@link
   * #build()} then checks the key against it instead of opening the catalog again.
   */
  public SkadeSinkBuilder tableSchema(Schema loaded) {
    this.tableSchema = loaded;
    return this;
  }

  /** Checks the table and the key against the catalog and builds the sink. */
  public SkadeSink build() {
    if (catalogProperties == null
        || !catalogProperties.containsKey("warehouse")
            && !catalogProperties.containsKey(CatalogConnection.URI)) {
      throw new IllegalArgumentException(
          "skade sink: the catalog properties must name a"
              + " 'warehouse' (a catalog in this JVM) or a skade server's 'uri'; call"
              + " catalogProperties(Map.of(\"warehouse\", \"/path\", ...)) or"
              + " catalogProperties(Map.of(\"uri\", \"http://host:8181\", \"token\", ...))");
    }
    if (table == null) {
      throw new IllegalArgumentException("skade sink: no table given; call table(\"db.name\")");
    }
    if (overwrite && !upsertKey.isEmpty()) {
      throw new IllegalArgumentException(
          "skade sink for "
              + table
              + ": an overwrite replaces"
              + " whole partitions and cannot upsert by key "
              + upsertKey
              + "; drop upsertKey or"
              + " overwrite");
    }
    if (branch != null && (branch.isBlank() || maintenance.enabled())) {
      throw new IllegalArgumentException(
          "skade sink for "
              + table
              + (branch.isBlank()
                  ? ": the branch to write to is blank; name one, or write to main"
                  : ": maintenance works on the table's main branch, but the sink writes to branch '"
                      + branch
                      + "'; turn maintenance off, or write to main"));
    }
    Schema columns;
    String location;
    if (tableSchema != null) {
      columns = tableSchema;
      location = CatalogConnection.location(table.toString(), catalogProperties);
    } else {
      try (CatalogConnection connection = CatalogConnection.forWriting(catalogProperties)) {
        columns = loadSchema(connection);
        location = connection.location();
      }
    }
    List<String> unknown =
        upsertKey.stream().filter(name -> columns.caseInsensitiveFindField(name) == null).toList();
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(
          "skade sink for "
              + table
              + ": upsert key column(s) "
              + unknown
              + " are not columns of the table; its columns: "
              + columns.columns().stream().map(field -> field.name()).toList());
    }
    return new SkadeSink(
        catalogProperties,
        location,
        table,
        new SkadeSink.Settings(
            schema, flinkConf, upsertKey, overwrite, actor, uidSuffix, maintenance, branch));
  }

  private Schema loadSchema(CatalogConnection connection) {
    try {
      return connection.catalog().loadTable(table).schema();
    } catch (NoSuchTableException e) {
      throw new IllegalArgumentException(
          "skade sink: table "
              + table
              + " does not exist;"
              + " create it first (SkadeCatalog.createTable, or CREATE TABLE in SQL)",
          e);
    }
  }
}
