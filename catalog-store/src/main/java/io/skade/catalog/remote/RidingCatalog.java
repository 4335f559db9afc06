package io.skade.catalog.remote;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * The tables and namespaces of a skade server, as a {@link RemoteConnection} hands them out: its
 * {@link RESTCatalog}, each call riding the connection's {@link RemoteRetry}. A read (a load, a
 * listing, an existence check) is tried again through any transient failure; a change (a create,
 * drop, rename, a namespace's properties) only through a refused connection, which proves the
 * server never saw it, so that a change whose answer was lost is never made twice. A table it loads
 * rides the policy for its refreshes and commits ({@link RidingTableOperations}).
 *
 * <p>Transactions that create or replace a table ({@link #newCreateTableTransaction}, {@link
 * TableBuilder#createTransaction}) are Iceberg's own: they are begun and committed without retries,
 * as their commit cannot be settled from a table that may not exist.
 */
final class RidingCatalog implements Catalog, SupportsNamespaces {
  private final RESTCatalog rest;
  private final RemoteRetry retry;

  RidingCatalog(RESTCatalog rest, RemoteRetry retry) {
    this.rest = rest;
    this.retry = retry;
  }

  /** The properties the server's configuration gave the REST client. */
  Map<String, String> properties() {
    return rest.properties();
  }

  private <T> T read(String what, Callable<T> call) {
    return retry.call(what + " at " + retry.server(), call);
  }

  private <T> T change(String what, Callable<T> call) {
    return retry.call(
        what + " at " + retry.server(), RidingCatalog::refused, retry.deadline(), call);
  }

  private static boolean refused(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof java.net.ConnectException) {
        return true;
      }
    }
    return false;
  }

  /** {@code table} with operations that ride the policy, when it is a plain table. */
  private Table riding(Table table) {
    if (table.getClass() != BaseTable.class) {
      return table; // a metadata table: its reads go through the table it was loaded from
    }
    BaseTable base = (BaseTable) table;
    return new BaseTable(
        new RidingTableOperations(base.operations(), retry, base.name()),
        base.name(),
        base.reporter());
  }

  @Override
  public String name() {
    return rest.name();
  }

  @Override
  public List<TableIdentifier> listTables(Namespace namespace) {
    return read("listing the tables of " + namespace, () -> rest.listTables(namespace));
  }

  @Override
  public Table createTable(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      String location,
      Map<String, String> properties) {
    return riding(
        change(
            "creating " + identifier,
            () -> rest.createTable(identifier, schema, spec, location, properties)));
  }

  @Override
  public Table createTable(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      Map<String, String> properties) {
    return riding(
        change(
            "creating " + identifier,
            () -> rest.createTable(identifier, schema, spec, properties)));
  }

  @Override
  public Table createTable(TableIdentifier identifier, Schema schema, PartitionSpec spec) {
    return riding(
        change("creating " + identifier, () -> rest.createTable(identifier, schema, spec)));
  }

  @Override
  public Table createTable(TableIdentifier identifier, Schema schema) {
    return riding(change("creating " + identifier, () -> rest.createTable(identifier, schema)));
  }

  @Override
  public Transaction newCreateTableTransaction(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      String location,
      Map<String, String> properties) {
    return rest.newCreateTableTransaction(identifier, schema, spec, location, properties);
  }

  @Override
  public Transaction newCreateTableTransaction(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      Map<String, String> properties) {
    return rest.newCreateTableTransaction(identifier, schema, spec, properties);
  }

  @Override
  public Transaction newCreateTableTransaction(
      TableIdentifier identifier, Schema schema, PartitionSpec spec) {
    return rest.newCreateTableTransaction(identifier, schema, spec);
  }

  @Override
  public Transaction newCreateTableTransaction(TableIdentifier identifier, Schema schema) {
    return rest.newCreateTableTransaction(identifier, schema);
  }

  @Override
  public Transaction newReplaceTableTransaction(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      String location,
      Map<String, String> properties,
      boolean orCreate) {
    return rest.newReplaceTableTransaction(
        identifier, schema, spec, location, properties, orCreate);
  }

  @Override
  public Transaction newReplaceTableTransaction(
      TableIdentifier identifier,
      Schema schema,
      PartitionSpec spec,
      Map<String, String> properties,
      boolean orCreate) {
    return rest.newReplaceTableTransaction(identifier, schema, spec, properties, orCreate);
  }

  @Override
  public Transaction newReplaceTableTransaction(
      TableIdentifier identifier, Schema schema, PartitionSpec spec, boolean orCreate) {
    return rest.newReplaceTableTransaction(identifier, schema, spec, orCreate);
  }

  @Override
  public Transaction newReplaceTableTransaction(
      TableIdentifier identifier, Schema schema, boolean orCreate) {
    return rest.newReplaceTableTransaction(identifier, schema, orCreate);
  }

  @Override
  public boolean tableExists(TableIdentifier identifier) {
    return read("looking for " + identifier, () -> rest.tableExists(identifier));
  }

  @Override
  public boolean dropTable(TableIdentifier identifier) {
    return change("dropping " + identifier, () -> rest.dropTable(identifier));
  }

  @Override
  public boolean dropTable(TableIdentifier identifier, boolean purge) {
    return change("dropping " + identifier, () -> rest.dropTable(identifier, purge));
  }

  @Override
  public void renameTable(TableIdentifier from, TableIdentifier to) {
    change(
        "renaming " + from + " to " + to,
        () -> {
          rest.renameTable(from, to);
          return null;
        });
  }

  /**
   * Commits several tables at once. Retried only when the request was never sent: a retry of one
   * whose answer was lost would find its tables moved, or be refused by the catalog's checkpoint
   * guard.
   */
  void commitTransaction(List<TableCommit> commits) {
    change(
        "committing " + commits.size() + " tables",
        () -> {
          rest.commitTransaction(commits);
          return null;
        });
  }

  @Override
  public Table loadTable(TableIdentifier identifier) {
    return riding(read("loading " + identifier, () -> rest.loadTable(identifier)));
  }

  @Override
  public void invalidateTable(TableIdentifier identifier) {
    rest.invalidateTable(identifier);
  }

  @Override
  public Table registerTable(TableIdentifier identifier, String metadataFileLocation) {
    return riding(
        change(
            "registering " + identifier,
            () -> rest.registerTable(identifier, metadataFileLocation)));
  }

  @Override
  public Table registerTable(
      TableIdentifier identifier, String metadataFileLocation, boolean overwrite) {
    return riding(
        change(
            "registering " + identifier,
            () -> rest.registerTable(identifier, metadataFileLocation, overwrite)));
  }

  @Override
  public TableBuilder buildTable(TableIdentifier identifier, Schema schema) {
    return new Builder(identifier, rest.buildTable(identifier, schema));
  }

  @Override
  public void initialize(String name, Map<String, String> properties) {
    throw new UnsupportedOperationException(
        "the catalog of a skade server is initialized by its connection; open one with"
            + " CatalogConnection.open");
  }

  @Override
  public void createNamespace(Namespace namespace) {
    change(
        "creating namespace " + namespace,
        () -> {
          rest.createNamespace(namespace);
          return null;
        });
  }

  @Override
  public void createNamespace(Namespace namespace, Map<String, String> metadata) {
    change(
        "creating namespace " + namespace,
        () -> {
          rest.createNamespace(namespace, metadata);
          return null;
        });
  }

  @Override
  public List<Namespace> listNamespaces() {
    return read("listing the namespaces", rest::listNamespaces);
  }

  @Override
  public List<Namespace> listNamespaces(Namespace namespace) {
    return read("listing the namespaces of " + namespace, () -> rest.listNamespaces(namespace));
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(Namespace namespace) {
    return read("loading namespace " + namespace, () -> rest.loadNamespaceMetadata(namespace));
  }

  @Override
  public boolean dropNamespace(Namespace namespace) {
    return change("dropping namespace " + namespace, () -> rest.dropNamespace(namespace));
  }

  @Override
  public boolean setProperties(Namespace namespace, Map<String, String> properties) {
    return change(
        "setting properties of namespace " + namespace,
        () -> rest.setProperties(namespace, properties));
  }

  @Override
  public boolean removeProperties(Namespace namespace, Set<String> properties) {
    return change(
        "removing properties of namespace " + namespace,
        () -> rest.removeProperties(namespace, properties));
  }

  @Override
  public boolean namespaceExists(Namespace namespace) {
    return read("looking for namespace " + namespace, () -> rest.namespaceExists(namespace));
  }

  @Override
  public String toString() {
    return rest.toString();
  }

  /** Iceberg's builder, whose {@link #create} rides the policy as the catalog's creates do. */
  private final class Builder implements TableBuilder {
    private final TableIdentifier identifier;
    private final TableBuilder delegate;

    Builder(TableIdentifier identifier, TableBuilder delegate) {
      this.identifier = identifier;
      this.delegate = delegate;
    }

    @Override
    public TableBuilder withPartitionSpec(PartitionSpec spec) {
      delegate.withPartitionSpec(spec);
      return this;
    }

    @Override
    public TableBuilder withSortOrder(SortOrder sortOrder) {
      delegate.withSortOrder(sortOrder);
      return this;
    }

    @Override
    public TableBuilder withLocation(String location) {
      delegate.withLocation(location);
      return this;
    }

    @Override
    public TableBuilder withProperties(Map<String, String> properties) {
      delegate.withProperties(properties);
      return this;
    }

    @Override
    public TableBuilder withProperty(String key, String value) {
      delegate.withProperty(key, value);
      return this;
    }

    @Override
    public Table create() {
      return riding(change("creating " + identifier, delegate::create));
    }

    @Override
    public Transaction createTransaction() {
      return delegate.createTransaction();
    }

    @Override
    public Transaction replaceTransaction() {
      return delegate.replaceTransaction();
    }

    @Override
    public Transaction createOrReplaceTransaction() {
      return delegate.createOrReplaceTransaction();
    }
  }
}
