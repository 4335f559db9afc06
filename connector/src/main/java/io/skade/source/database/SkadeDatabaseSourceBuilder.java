package io.skade.source.database;

import io.skade.catalog.CatalogConnection;
import io.skade.changelog.TableSelection;
import io.skade.sink.TableRow;
import io.skade.source.database.enumerator.DatabaseEnumerator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.FlinkSchemaUtil;

/**
 * Builds a {@link SkadeDatabaseSource}:
 *
 * <pre>{@code
 * SkadeDatabaseSource<TableRow> source =
 *     SkadeDatabaseSource.builder()
 *         .catalogProperties(Map.of("warehouse", "/data/warehouse"))
 *         .namespace("shop")
 *         .consistency(Consistency.COMMIT)
 *         .build();
 * }</pre>
 *
 * <p>Unless {@link #deserializer} says otherwise it emits {@link TableRow}s, each table's rows in
 * the columns it had when the source was built ({@link DatabaseChangeDeserializer#tableRows}).
 *
 * @param <T> the emitted type
 */
public final class SkadeDatabaseSourceBuilder<T> {
  /** How often the log is polled when no commit is pushed (a catalog another process owns). */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

  private Map<String, String> catalogProperties;
  private TableSelection tables;
  private List<TableIdentifier> named;
  private Consistency consistency = Consistency.TABLE;
  private Long startAfter;
  private Duration pollInterval = DEFAULT_POLL_INTERVAL;
  private DatabaseChangeDeserializer<T> deserializer;

  SkadeDatabaseSourceBuilder() {}

  /** The catalog: a {@code warehouse} in this JVM, or a skade server's {@code uri}. */
  public SkadeDatabaseSourceBuilder<T> catalogProperties(Map<String, String> properties) {
    this.catalogProperties = new HashMap<>(properties);
    return this;
  }

  /** Reads these tables ({@code namespace.name}). */
  public SkadeDatabaseSourceBuilder<T> tables(String... names) {
    return tables(Arrays.stream(names).map(TableIdentifier::parse).toList());
  }

  /** Reads these tables. */
  public SkadeDatabaseSourceBuilder<T> tables(List<TableIdentifier> identifiers) {
    select(TableSelection.tables(identifiers));
    this.named = List.copyOf(identifiers);
    return this;
  }

  /** Reads the tables of {@code namespace}, those created later included. */
  public SkadeDatabaseSourceBuilder<T> namespace(String namespace) {
    return select(TableSelection.namespace(Namespace.of(namespace.split("\\."))));
  }

  /**
   * Reads the tables whose whole name ({@code namespace.name}) matches the regular expression
   * {@code regex}, those created later included.
   */
  public SkadeDatabaseSourceBuilder<T> tablesMatching(String regex) {
    return select(TableSelection.matching(regex));
  }

  private SkadeDatabaseSourceBuilder<T> select(TableSelection selection) {
    if (tables != null) {
      throw new IllegalArgumentException(
          "skade database source: its tables are already given ("
              + tables
              + "); give tables, a namespace or a pattern once");
    }
    this.tables = selection;
    return this;
  }

  /** How changes of several tables are ordered; {@link Consistency#TABLE} by default. */
  public SkadeDatabaseSourceBuilder<T> consistency(Consistency mode) {
    this.consistency = Objects.requireNonNull(mode, "consistency");
    return this;
  }

  /** Starts with the commits after the log's last one when the job starts (the default). */
  public SkadeDatabaseSourceBuilder<T> startFromLatest() {
    this.startAfter = null;
    return this;
  }

  /** Starts with the log's first commit: the tables' whole history must still exist. */
  public SkadeDatabaseSourceBuilder<T> startFromEarliest() {
    return startAfterCommitSeq(0);
  }

  /** Starts with the commits after {@code commitSeq}. */
  public SkadeDatabaseSourceBuilder<T> startAfterCommitSeq(long commitSeq) {
    if (commitSeq < 0) {
      throw new IllegalArgumentException(
          "skade database source: a commit_seq to start after is never negative, got " + commitSeq);
    }
    this.startAfter = commitSeq;
    return this;
  }

  /** How often the log is polled for commits not pushed to the source. */
  public SkadeDatabaseSourceBuilder<T> pollInterval(Duration interval) {
    if (interval == null || interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException(
          "skade database source: the poll interval must be positive, got " + interval);
    }
    this.pollInterval = interval;
    return this;
  }

  /** Maps each change to records of type {@code R}. */
  @SuppressWarnings("unchecked")
  public <R> SkadeDatabaseSourceBuilder<R> deserializer(DatabaseChangeDeserializer<R> mapping) {
    SkadeDatabaseSourceBuilder<R> self = (SkadeDatabaseSourceBuilder<R>) this;
    self.deserializer = Objects.requireNonNull(mapping, "deserializer");
    return self;
  }

  /** Checks everything against the catalog and builds the source. */
  @SuppressWarnings("unchecked")
  public SkadeDatabaseSource<T> build() {
    if (catalogProperties == null
        || !catalogProperties.containsKey("warehouse")
            && !catalogProperties.containsKey(CatalogConnection.URI)) {
      throw new IllegalArgumentException(
          "skade database source: the catalog properties must name a 'warehouse' (a catalog in"
              + " this JVM) or a skade server's 'uri'; call"
              + " catalogProperties(Map.of(\"warehouse\", \"/path\", ...))");
    }
    if (tables == null) {
      throw new IllegalArgumentException(
          "skade database source: no tables given; call tables(\"db.a\", \"db.b\"),"
              + " namespace(\"db\") or tablesMatching(\"db\\\\..*\")");
    }
    String location;
    Map<String, RowType> types = new LinkedHashMap<>();
    try (CatalogConnection connection = CatalogConnection.open(catalogProperties)) {
      location = connection.location();
      long last = connection.feed().commitSeq();
      if (startAfter != null && startAfter > last) {
        throw new IllegalArgumentException(
            "skade database source: cannot start after commit_seq "
                + startAfter
                + ", beyond the log's last commit "
                + last);
      }
      for (TableIdentifier table : selected(connection)) {
        types.put(
            table.toString(),
            FlinkSchemaUtil.convert(connection.catalog().loadTable(table).schema()));
      }
    }
    DatabaseChangeDeserializer<T> mapping = deserializer;
    if (mapping == null) {
      if (types.isEmpty()) {
        throw new IllegalArgumentException(
            "skade database source: no table of "
                + tables
                + " exists yet, so there is no row type to emit; create one first, or give a"
                + " deserializer(...) of your own");
      }
      mapping = (DatabaseChangeDeserializer<T>) DatabaseChangeDeserializer.tableRows(types);
    }
    return new SkadeDatabaseSource<>(
        catalogProperties,
        location,
        new DatabaseEnumerator.Settings(tables, consistency, startAfter, pollInterval),
        mapping,
        List.copyOf(types.keySet()));
  }

  /** The tables the selection holds now; a named one that does not exist is an error. */
  private List<TableIdentifier> selected(CatalogConnection connection) {
    if (named != null) {
      for (TableIdentifier table : named) {
        if (!connection.catalog().tableExists(table)) {
          throw new IllegalArgumentException(
              "skade database source: table " + table + " does not exist; create it first");
        }
      }
      return named;
    }
    List<TableIdentifier> found = new ArrayList<>();
    for (Namespace namespace : connection.namespaces().listNamespaces()) {
      for (TableIdentifier table : connection.catalog().listTables(namespace)) {
        if (tables.matches(table)) {
          found.add(table);
        }
      }
    }
    return found;
  }
}
