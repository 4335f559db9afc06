package io.skade.catalog;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.BaseMetastoreCatalog;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.hadoop.Configurable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.LocationUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An Iceberg catalog whose table pointers and commit log live in an embedded RocksDB store.
 *
 * <p>Load it the Iceberg way: {@code CatalogUtil.loadCatalog("io.skade.catalog.SkadeCatalog", name,
 * properties, hadoopConf)}. Properties:
 *
 * <ul>
 *   <li>{@code warehouse} (required): root of table data; a table lives at {@code
 *       <warehouse>/<namespace levels>/<table>}. A path, or a URI written as Iceberg and Hadoop
 *       write locations ({@code file:/data/a b}, not percent-encoded).
 *   <li>{@code catalog.path}: the RocksDB directory; default {@code <warehouse>/_catalog} when the
 *       warehouse is local, required otherwise.
 *   <li>{@code catalog.access}: {@code owner} (default; the one process that writes) or {@code
 *       follower} (read-only, follows the owner's commit log through a RocksDB secondary instance).
 *   <li>{@code catalog.follower-path}: a follower's own scratch directory (default: a temporary
 *       directory removed on close).
 *   <li>{@code commit-feed.buffer-size}: default buffer of a commit subscription (1024).
 *   <li>{@code commit.max-batch-size}: most commits written by one batch and fsync (4096; 1 turns
 *       group commit off).
 *   <li>{@code consumer.expiry-timeout}: how long a consumer's stored cursor holds snapshot expiry
 *       back after it was last stored (7d); a whole number with a unit {@code ms}, {@code s},
 *       {@code m}, {@code h} or {@code d}, a bare number being milliseconds.
 *   <li>{@code table-default.commit.retry.*}: a new table's commit retries ({@link
 *       #TABLE_DEFAULTS}: 30 retries, waits from 50 ms doubling up to 2 s), which a table's own
 *       properties override.
 *   <li>{@code io-impl}: the {@link FileIO} (default Hadoop's, which covers local files; without a
 *       Hadoop configuration given, local files go through {@link SkadeLocalFileSystem}), with its
 *       own properties as Iceberg names them ({@code s3.*}, {@code client.*}, ...).
 * </ul>
 *
 * <p><b>One store per directory in a JVM.</b> Every {@code SkadeCatalog} opened on one catalog
 * directory in one JVM, however it was opened ({@code CatalogUtil.loadCatalog}, {@code new
 * SkadeCatalog()} and {@link #initialize}, {@link SharedCatalogs}, skade's Flink catalog, source,
 * sink and lookups), shares one open store: one RocksDB instance, one {@link Committer}, one commit
 * feed and one run of each {@link CatalogService} (lineage). Directories are told apart by their
 * real path. The first instance opens the store, closing an instance releases only its hold, and
 * the last to close closes the store; services run until then, whichever instance opened it. Each
 * instance is otherwise a catalog of its own: its name, its Hadoop configuration and {@link FileIO}
 * ({@code io-impl}), {@code commit-feed.buffer-size}, {@code unique-table-location}, {@code
 * table-default.*} and {@code table-override.*}. A closed instance fails every further call (and
 * ends the commit subscriptions it made) while the others go on.
 *
 * <p>The properties that define the store must agree between the instances sharing it, defaults
 * filled in: {@code warehouse} (a local one compared as a directory, by real path), {@code
 * catalog.access}, for an owner {@code commit.max-batch-size} and {@code consumer.expiry-timeout}
 * (compared as durations), for a follower {@code catalog.follower-path}, and the settings of each
 * {@link CatalogService} (lineage: {@code lineage.sink}, and when it is on {@code lineage.actor}
 * and {@code lineage.openlineage.url}). Opening an instance whose settings differ fails with an
 * {@link IllegalArgumentException} naming both values of each. Another process gets {@link
 * CatalogLockedException}, as one process owns a directory; it may follow it read-only instead.
 *
 * <p>Every change goes through the one {@link Committer}; see there for what happens on commit. The
 * catalog is also the {@link CommitFeed} of its commits, and keeps consumers' cursors ({@link
 * #storeConsumer}), refusing to expire snapshots a live consumer still needs ({@link ExpiryGuard}).
 */
public class SkadeCatalog extends BaseMetastoreCatalog
    implements SupportsNamespaces,
        CommitFeed,
        ConsumerStore,
        MaintenanceLocks,
        Configurable<Object> {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeCatalog.class);

  public static final String CATALOG_PATH = "catalog.path";
  public static final String CATALOG_ACCESS = "catalog.access";
  public static final String FOLLOWER_PATH = "catalog.follower-path";
  public static final String FEED_BUFFER_SIZE = "commit-feed.buffer-size";
  public static final String MAX_BATCH_SIZE = "commit.max-batch-size";
  public static final String CONSUMER_EXPIRY_TIMEOUT = "consumer.expiry-timeout";

  /**
   * Whether opening a directory that holds no catalog creates one (default {@code true}, for the
   * entry points that own a catalog: an application, a SQL session, the server). Flink tasks open
   * with {@code false} ({@link #inTask}), so that a task on a machine without the catalog fails
   * instead of starting a second, empty one.
   */
  public static final String CREATE_IF_MISSING = "catalog.create-if-missing";

  /**
   * The table properties every table this catalog creates gets unless the table or the catalog's
   * {@code table-default.*} properties set them: commit retries for several writers on one table.
   * Only one attempt per table wins in the time an attempt takes from its refresh to its swap (15
   * ms for an append of this JVM, tens of ms for a REST client's), so Iceberg's default of 4
   * retries 100 ms to 800 ms apart fails writers that merely lost a few races in a row; these waits
   * start shorter, stop growing at 2 s, and last up to 30 retries.
   */
  public static final Map<String, String> TABLE_DEFAULTS =
      Map.of(
          TableProperties.COMMIT_NUM_RETRIES, "30",
          TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "50",
          TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "2000");

  private static final String DEFAULT_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO";

  private String name = "skade";
  private Map<String, String> properties = Map.of();
  private Object hadoopConf;
  private FileIO io;

  /** The catalog's properties, read and checked once; set by {@link #initialize}. */
  private CatalogConfig config;

  /** The open store this instance uses; set by {@link #initialize}. */
  private SharedStore shared;

  /** False for the store's own instance (its services'), which closes only with the store. */
  private boolean holdsStore;

  private final AtomicBoolean closed = new AtomicBoolean();

  /** The live subscriptions made through this instance, ended when it closes. */
  private final Set<CommitSubscription> subscriptions = ConcurrentHashMap.newKeySet();

  private ExpiryGuard expiryGuard;

  private final CatalogConsumers consumers = new CatalogConsumers(this);
  private final CatalogLocks locks = new CatalogLocks(this);
  private final IdempotencyKeys idempotencyKeys = new IdempotencyKeys(this);

  /** For {@link CatalogUtil#loadCatalog}; call {@link #initialize} next. */
  public SkadeCatalog() {}

  @Override
  public void setConf(Object conf) {
    this.hadoopConf = conf;
  }

  /**
   * Opens the catalog: shares the store open on its directory in this JVM, or opens it, once a
   * warehouse that is not local was listed through the file IO ({@link WarehouseAccess}).
   *
   * @throws IllegalArgumentException for bad properties, properties that define the store otherwise
   *     than the sharing instances' (both named), or storage refusing the credentials or the bucket
   * @throws CatalogLockedException when another process owns the directory
   */
  @Override
  public void initialize(String catalogName, Map<String, String> props) {
    if (shared != null) {
      throw new IllegalStateException("skade catalog '" + name + "' is already initialized");
    }
    // Everything that can fail on bad properties runs before the store is opened (and locked).
    configure(catalogName, props);
    try {
      if (!config.localWarehouse()) {
        WarehouseAccess.check(name, config.warehouse(), io, props);
      }
      this.shared = SharedStore.acquire(name, config.spec(), properties, hadoopConf);
    } catch (RuntimeException | Error e) {
      io.close();
      throw e;
    }
    this.holdsStore = true;
    LOG.debug("skade catalog '{}' opened on the store at {}", name, shared.store().path());
  }

  /**
   * The store's own instance, on which its {@link CatalogService}s run: it holds no hold and closes
   * with the store ({@link #closeAttached}), never before.
   */
  static SkadeCatalog attached(
      SharedStore store, String name, Map<String, String> props, Object hadoopConf) {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.setConf(hadoopConf);
    catalog.configure(name, props);
    catalog.shared = store;
    return catalog;
  }

  /** Reads and checks the properties and makes the file IO; opens nothing else. */
  private void configure(String catalogName, Map<String, String> props) {
    this.name = catalogName == null ? "skade" : catalogName;
    this.properties = CatalogConfig.withTableDefaults(props);
    this.config = CatalogConfig.parse(name, props);
    this.expiryGuard =
        new ExpiryGuard(config.consumerExpiryTimeout(), config.consumerExpiryTimeoutText());
    this.io = fileIO(props, hadoopConf);
  }

  /**
   * The file IO the catalog's tables use, as these catalog properties configure it: what a process
   * that reads table files without opening the catalog (a source reader) needs.
   *
   * @param hadoopConf a Hadoop {@code Configuration}, or null for the default one
   */
  public static FileIO fileIO(Map<String, String> props, Object hadoopConf) {
    return CatalogUtil.loadFileIO(
        props.getOrDefault(CatalogProperties.FILE_IO_IMPL, DEFAULT_FILE_IO),
        props,
        hadoopConf != null ? hadoopConf : CatalogConfig.defaultHadoopConf());
  }

  /** The {@code warehouse} property, required, without trailing slashes. */
  public static String warehouse(String name, Map<String, String> props) {
    return CatalogConfig.warehouse(name, props);
  }

  /**
   * {@code properties} as a Flink task opens the catalog with them: it never creates one ({@link
   * #CREATE_IF_MISSING} false), since only an owner entry point may.
   */
  public static Map<String, String> inTask(Map<String, String> properties) {
    Map<String, String> task = new HashMap<>(properties);
    task.put(CREATE_IF_MISSING, "false");
    return Map.copyOf(task);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  protected Map<String, String> properties() {
    return properties;
  }

  /** The file IO of the catalog's tables. */
  public FileIO io() {
    return io;
  }

  /** The root of the catalog's table data (its {@code warehouse} property). */
  public String warehouse() {
    return config == null ? null : config.warehouse();
  }

  /** The open store, or a clear error when this instance is not open (any more). */
  private SharedStore shared() {
    requireInitialized();
    if (closed.get()) {
      throw new IllegalStateException(
          "skade catalog '"
              + name
              + "' at "
              + shared.store().path()
              + " is closed; open a new SkadeCatalog to go on (the store stays open while other"
              + " catalogs of this JVM use it)");
    }
    return shared;
  }

  /** The open store; for the catalog's parts ({@link CatalogConsumers} and the others). */
  CatalogStore store() {
    return shared().store();
  }

  /** The replication log of this catalog's store, as a server group serves it to its standbys. */
  public CatalogReplication replication() {
    return new CatalogReplication(store());
  }

  /**
   * Makes this catalog the leader of a server group: from now on every group commit is also written
   * into the replication log (in the same synced batch), stamped with {@code gate}'s epoch, and
   * acknowledged only once {@link ReplicationGate#awaitReplicated} returns for it. Set it before
   * the first commit the group may see.
   *
   * @throws UnsupportedOperationException in a read-only follower
   */
  public void replicateTo(ReplicationGate gate) {
    committer(); // a follower has none, and refuses
    store().replicationLog().gate(gate);
  }

  /** The committer; absent in a follower, which never writes. */
  Committer committer() {
    Committer committer = shared().committer();
    if (committer == null) {
      throw new UnsupportedOperationException(
          "skade catalog '"
              + name
              + "' at "
              + shared.store().path()
              + " is a read-only"
              + " follower (catalog.access=follower): write through the process that owns it");
    }
    return committer;
  }

  ExpiryGuard expiryGuard() {
    return expiryGuard;
  }

  TablePointer readPointer(String tableKey) {
    CatalogStore store = store();
    store.catchUp();
    return store.pointer(tableKey);
  }

  /** Where the catalog's RocksDB store lives (its real path). */
  public String catalogPath() {
    requireInitialized();
    return shared.store().path();
  }

  /** Whether this catalog is a read-only follower of another process's catalog. */
  public boolean isFollower() {
    requireInitialized();
    return shared.committer() == null;
  }

  /**
   * Whether {@code other} shares this catalog's open store: both were opened on one directory in
   * this JVM while the store stayed open (they commit through one committer, share one feed).
   */
  public boolean sharesStoreWith(SkadeCatalog other) {
    return shared != null && other != null && shared == other.shared;
  }

  private void requireInitialized() {
    if (shared == null) {
      throw new IllegalStateException(
          "skade catalog '"
              + name
              + "' is not initialized; call"
              + " initialize(name, properties) first");
    }
  }

  // ---- tables ------------------------------------------------------------------------------

  @Override
  protected TableOperations newTableOps(TableIdentifier identifier) {
    return new SkadeTableOperations(this, identifier);
  }

  /** Validates the name first, so a bad one is rejected with the reason, not just "invalid". */
  @Override
  public TableBuilder buildTable(TableIdentifier identifier, Schema schema) {
    TableKeys.validate(identifier);
    return new SkadeTable.Builder(super.buildTable(identifier, schema));
  }

  @Override
  public Table registerTable(TableIdentifier identifier, String metadataFileLocation) {
    TableKeys.validate(identifier);
    return SkadeTable.of(super.registerTable(identifier, metadataFileLocation));
  }

  /** The table, as a {@link SkadeTable} (a metadata table as Iceberg makes it). */
  @Override
  public Table loadTable(TableIdentifier identifier) {
    return SkadeTable.of(super.loadTable(identifier));
  }

  @Override
  protected boolean isValidIdentifier(TableIdentifier identifier) {
    try {
      TableKeys.validate(identifier);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  @Override
  protected String defaultWarehouseLocation(TableIdentifier identifier) {
    TableKeys.validate(identifier);
    return config.warehouse()
        + "/"
        + String.join("/", identifier.namespace().levels())
        + "/"
        + LocationUtil.tableLocation(identifier, config.uniqueTableLocation());
  }

  @Override
  public List<TableIdentifier> listTables(Namespace namespace) {
    requireNamespace(namespace);
    int depth = namespace.length() + 1;
    return store().tableKeys(TableKeys.tablePrefix(namespace)).stream()
        .map(TableKeys::identifier)
        .filter(id -> id.namespace().length() + 1 == depth)
        .toList();
  }

  @Override
  public boolean dropTable(TableIdentifier identifier, boolean purge) {
    if (!isValidIdentifier(identifier)) {
      return false;
    }
    String key = TableKeys.tableKey(identifier);
    Committer committer = committer();
    while (true) {
      TableOperations ops = newTableOps(identifier);
      // Purging deletes the files of the metadata read here, so the drop must remove exactly it.
      TableMetadata last = purge ? ops.current() : null;
      String expected = last == null ? null : last.metadataFileLocation();
      Boolean dropped =
          committer.submit(
              stage -> {
                TablePointer pointer = stage.pointer(key);
                if (pointer == null) {
                  return false;
                }
                if (expected != null && !expected.equals(pointer.metadataLocation())) {
                  return null; // it moved since it was read: read it again
                }
                stage.commit(
                    key,
                    CommitOperation.DROP,
                    List.of(),
                    pointer.metadataLocation(),
                    TablePointer.NO_SNAPSHOT);
                return true;
              });
      if (dropped == null) {
        continue;
      }
      if (dropped && last != null) {
        CatalogUtil.dropTableData(ops.io(), last);
      }
      return dropped;
    }
  }

  @Override
  public void renameTable(TableIdentifier from, TableIdentifier to) {
    String fromKey = TableKeys.tableKey(from);
    String toKey = TableKeys.tableKey(to);
    if (fromKey.equals(toKey)) {
      return;
    }
    String toNamespace = TableKeys.namespaceKey(to.namespace());
    committer()
        .submit(
            stage -> {
              if (stage.namespace(toNamespace) == null) {
                throw new NoSuchNamespaceException(
                    "Cannot rename %s to %s. Namespace does not exist: %s",
                    from, to, to.namespace());
              }
              if (stage.pointer(fromKey) == null) {
                throw new NoSuchTableException(
                    "Cannot rename %s to %s. Table does not exist", from, to);
              }
              if (stage.pointer(toKey) != null) {
                throw new AlreadyExistsException(
                    "Cannot rename %s to %s. Table already exists", from, to);
              }
              stage.rename(fromKey, toKey);
              return null;
            });
  }

  /**
   * Commits changes to several tables atomically: every table advances, in one batch with
   * consecutive {@code commitSeq}s, or none does. Each {@link TableCommit} is validated against its
   * table's current metadata; a failed requirement, or a table that moved while its new metadata
   * was written, throws {@link CommitFailedException} and changes nothing.
   */
  public void commitTransaction(List<TableCommit> commits) {
    MultiTableCommit.commit(this, commits);
  }

  /**
   * The commit that added {@code snapshotId} to the table, from the {@code (table, snapshot)}
   * index; empty when this catalog did not record it (e.g. a snapshot of a registered table).
   */
  public Optional<CommitEvent> commitOf(TableIdentifier identifier, long snapshotId) {
    store().catchUp();
    long seq = store().commitSeqOfSnapshot(TableKeys.tableKey(identifier), snapshotId);
    if (seq < 0) {
      return Optional.empty();
    }
    return store().commitsSince(seq - 1, 1).stream().findFirst();
  }

  // ---- consumers, locks, idempotency keys: objects of their own, delegated to -------------

  /**
   * Stores (or replaces) the cursor of consumer {@code consumerId}, stamped with the current time
   * as its last-seen time. It is written durably through the one commit path, but it is not a
   * commit: it takes no {@code commitSeq} and publishes no event. While the consumer is live, the
   * catalog refuses commits that remove the cursor's snapshot or any newer one of its table.
   *
   * @throws IllegalArgumentException for an empty id or one with control characters
   * @throws UnsupportedOperationException in a read-only follower
   */
  @Override
  public StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor) {
    return consumers.storeConsumer(consumerId, cursor);
  }

  /**
   * Stores the cursor of consumer {@code consumerId} on behalf of {@code owner} (a server token's
   * name), as {@link #storeConsumer(String, ConsumerCursor)} does. A consumer belongs to the owner
   * that stored it; another owner is refused. A consumer with no owner is taken by the first owner
   * that stores it. A null {@code owner} stores on anyone's behalf and keeps the stored owner.
   *
   * @throws org.apache.iceberg.exceptions.ForbiddenException when another owner holds the consumer;
   *     nothing is stored
   */
  public StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor, String owner) {
    return consumers.storeConsumer(consumerId, cursor, owner);
  }

  /**
   * Drops consumer {@code consumerId} on behalf of {@code owner}, as {@link #dropConsumer(String)}
   * does, refusing a consumer another owner holds (a null {@code owner} may drop any).
   *
   * @throws org.apache.iceberg.exceptions.ForbiddenException when another owner holds the consumer;
   *     nothing is dropped
   */
  public boolean dropConsumer(String consumerId, String owner) {
    return consumers.dropConsumer(consumerId, owner);
  }

  /** The consumer stored under {@code consumerId}, if any. */
  @Override
  public Optional<StoredConsumer> consumer(String consumerId) {
    return consumers.consumer(consumerId);
  }

  /** Every stored consumer, live or not, in id order. */
  @Override
  public List<StoredConsumer> consumers() {
    return consumers.consumers();
  }

  /** The stored consumers of {@code table}, in id order. */
  @Override
  public List<StoredConsumer> consumers(TableIdentifier table) {
    return consumers.consumers(table);
  }

  /** Removes a consumer, so it no longer holds expiry back; returns whether it was stored. */
  @Override
  public boolean dropConsumer(String consumerId) {
    return consumers.dropConsumer(consumerId);
  }

  /**
   * {@inheritDoc} Written durably through the one commit path, as a consumer's cursor is: no {@code
   * commitSeq}, no event.
   *
   * @throws UnsupportedOperationException in a read-only follower
   */
  @Override
  public boolean tryLock(TableIdentifier table, String name, String holder, Duration lease) {
    return locks.tryLock(table, name, holder, lease);
  }

  @Override
  public Optional<MaintenanceLock> lock(TableIdentifier table, String name) {
    return locks.lock(table, name);
  }

  @Override
  public boolean unlock(TableIdentifier table, String name, String holder) {
    return locks.unlock(table, name, holder);
  }

  /**
   * The cursor's table, when the cursor can be resumed there; otherwise a {@link
   * CursorExpiredException} naming the table, the snapshot and the startup options that recover
   * (the snapshot was expired, or the table was dropped or created again).
   */
  public Table requireCursorUsable(ConsumerCursor cursor) {
    return ExpiryGuard.requireUsable(this, cursor);
  }

  /**
   * Runs {@code action} so that the first commit it makes is made under the client's {@code key}:
   * the key and what the commit made ({@link IdempotencyRecord}) are written in the commit's own
   * synced batch. A commit under a key already used is refused with {@link
   * IdempotencyKeyUsedException}, writing nothing: a retry of a request whose answer was lost
   * commits once, even after a restart.
   *
   * @throws IllegalArgumentException for an empty key, one over 256 characters, or one with control
   *     characters
   */
  public <T> T withIdempotencyKey(String key, Callable<T> action) throws Exception {
    return idempotencyKeys.withKey(key, action);
  }

  /** What was committed under {@code key}, if anything. */
  public Optional<IdempotencyRecord> idempotencyRecord(String key) {
    return idempotencyKeys.record(key);
  }

  /** Forgets the keys of commits made before {@code before}; how many it forgot. */
  public int expireIdempotencyKeys(Instant before) {
    return idempotencyKeys.expire(before);
  }

  // ---- namespaces --------------------------------------------------------------------------

  @Override
  public void createNamespace(Namespace namespace, Map<String, String> metadata) {
    String key = TableKeys.namespaceKey(namespace);
    committer()
        .submit(
            stage -> {
              if (stage.namespace(key) != null) {
                throw new AlreadyExistsException(
                    "Cannot create namespace %s. Namespace already exists", namespace);
              }
              stage.putNamespace(key, metadata);
              return null;
            });
  }

  @Override
  public List<Namespace> listNamespaces(Namespace namespace) {
    store().catchUp();
    String prefix =
        namespace.isEmpty() ? "" : TableKeys.namespaceKey(namespace) + TableKeys.SEPARATOR;
    List<Namespace> descendants =
        store().namespaceKeys(prefix).stream().map(TableKeys::namespace).toList();
    if (!namespace.isEmpty() && descendants.isEmpty() && !namespaceExists(namespace)) {
      throw new NoSuchNamespaceException("Namespace does not exist: %s", namespace);
    }
    int depth = namespace.length() + 1;
    return descendants.stream()
        .map(n -> Namespace.of(Arrays.copyOf(n.levels(), depth)))
        .distinct()
        .sorted(Comparator.comparing(Namespace::toString))
        .toList();
  }

  @Override
  public Map<String, String> loadNamespaceMetadata(Namespace namespace) {
    if (namespace.isEmpty() || !isValidNamespace(namespace)) {
      throw new NoSuchNamespaceException("Namespace does not exist: %s", namespace);
    }
    store().catchUp();
    Map<String, String> properties = store().namespace(TableKeys.namespaceKey(namespace));
    if (properties == null) {
      throw new NoSuchNamespaceException("Namespace does not exist: %s", namespace);
    }
    return properties;
  }

  @Override
  public boolean dropNamespace(Namespace namespace) {
    if (namespace.isEmpty() || !isValidNamespace(namespace)) {
      return false;
    }
    String key = TableKeys.namespaceKey(namespace);
    String children = key + TableKeys.SEPARATOR;
    return committer()
        .submit(
            stage -> {
              if (stage.namespace(key) == null) {
                return false;
              }
              int namespaces = stage.namespaceKeys(children).size();
              int tables = stage.tableKeys(children).size();
              if (namespaces > 0 || tables > 0) {
                throw new NamespaceNotEmptyException(
                    "Namespace %s is not empty: it contains %d table(s) and %d namespace(s); drop them"
                        + " first",
                    namespace, tables, namespaces);
              }
              stage.removeNamespace(key);
              return true;
            });
  }

  @Override
  public boolean setProperties(Namespace namespace, Map<String, String> updates) {
    return updateNamespace(namespace, properties -> properties.putAll(updates));
  }

  @Override
  public boolean removeProperties(Namespace namespace, Set<String> keys) {
    return updateNamespace(namespace, properties -> properties.keySet().removeAll(keys));
  }

  private boolean updateNamespace(
      Namespace namespace, java.util.function.Consumer<Map<String, String>> change) {
    String key = TableKeys.namespaceKey(namespace);
    return committer()
        .submit(
            stage -> {
              Map<String, String> current = stage.namespace(key);
              if (current == null) {
                throw new NoSuchNamespaceException("Namespace does not exist: %s", namespace);
              }
              Map<String, String> updated = new HashMap<>(current);
              change.accept(updated);
              stage.putNamespace(key, updated);
              return true;
            });
  }

  private void requireNamespace(Namespace namespace) {
    if (!namespaceExists(namespace)) {
      throw new NoSuchNamespaceException("Namespace does not exist: %s", namespace);
    }
  }

  private static boolean isValidNamespace(Namespace namespace) {
    try {
      TableKeys.validate(namespace);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  // ---- commit feed -------------------------------------------------------------------------

  @Override
  public CommitSubscription subscribeCommits() {
    requireInitialized(); // before the configured buffer size is read
    return subscribeCommits(config.feedBufferSize());
  }

  /**
   * A live subscription to the store's commits, whichever catalog sharing the store made them; it
   * ends when this catalog closes (or the store does).
   */
  @Override
  public CommitSubscription subscribeCommits(int bufferSize) {
    Committer committer = shared().committer();
    if (committer == null) {
      throw new UnsupportedOperationException(
          "the live commit feed exists only in the process that owns the catalog at "
              + shared.store().path()
              + "; a follower polls commitsSince(cursor) instead");
    }
    synchronized (subscriptions) { // against close: a subscription is ended by it or refused
      shared();
      CommitSubscription subscription = committer.subscribe(bufferSize, subscriptions::remove);
      subscriptions.add(subscription);
      return subscription;
    }
  }

  @Override
  public List<CommitEvent> commitsSince(long after, int limit) {
    CatalogStore store = store();
    store.catchUp();
    return store.commitsSince(after, limit);
  }

  @Override
  public long commitSeq() {
    SharedStore open = shared();
    if (open.committer() != null) {
      return open.committer().durableSeq();
    }
    open.store().catchUp();
    return open.store().commitSeq();
  }

  @Override
  public String commitTableKey(TableIdentifier identifier) {
    return TableKeys.tableKey(identifier);
  }

  @Override
  public TableIdentifier commitTableIdentifier(String tableKey) {
    return TableKeys.identifier(tableKey);
  }

  /** Counters of the store since it was opened, for tests and benchmarks. */
  public record StoreStatistics(long walSyncs, long batchesWritten) {}

  /** The counters of the store since it was opened (by this or another catalog sharing it). */
  public StoreStatistics statistics() {
    SharedStore open = shared();
    return new StoreStatistics(
        open.store().walSyncs(), open.committer() == null ? 0 : open.committer().groupsWritten());
  }

  /**
   * Closes this catalog: it fails every further call, the commit subscriptions it made end, and its
   * hold on the shared store is released; the store (with its committer and services) closes with
   * the last catalog of this JVM that holds it. Idempotent.
   */
  @Override
  public void close() throws IOException {
    if (shared == null || !holdsStore || !closed.compareAndSet(false, true)) {
      return; // never opened, the store's own instance (closed with the store), or closed
    }
    try {
      endSubscriptions();
      io.close();
      super.close();
    } finally {
      shared.release();
    }
  }

  /** Closes the store's own instance, when the store closes. */
  void closeAttached() {
    closed.set(true);
    endSubscriptions();
    io.close();
    try {
      super.close();
    } catch (IOException e) {
      LOG.warn("skade catalog '{}': closing its metrics reporter failed", name, e);
    }
  }

  private void endSubscriptions() {
    synchronized (subscriptions) {
      Committer committer = shared.committer();
      for (CommitSubscription subscription : List.copyOf(subscriptions)) {
        committer.end(subscription);
      }
      subscriptions.clear();
    }
  }
}
