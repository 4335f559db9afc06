package io.skade.catalog;

import io.skade.catalog.remote.RemoteConnection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;

/**
 * A skade catalog as a component uses it, wherever the catalog lives: its tables ({@link
 * #catalog()}), its commit feed, its consumer cursors. Embedded, all three are the {@link
 * SkadeCatalog} this JVM opened (or follows); with the property {@code uri}, they are Iceberg's
 * {@code RESTCatalog}, a {@link io.skade.catalog.remote.RemoteCommitFeed} and a {@link
 * io.skade.catalog.remote.SkadeServerClient} of the skade server that owns the catalog ({@link
 * RemoteConnection}). Components depend on this, not on where the catalog is.
 *
 * <p>Through a server, every object a connection hands out (the catalog and the tables it loads,
 * the feed, consumers and locks) already rides the connection's retry policy ({@link
 * io.skade.catalog.remote.RemoteRetry}) through the server's restarts: components call them as they
 * would an embedded catalog, and never retry remote calls themselves.
 */
public interface CatalogConnection extends AutoCloseable {
  /** The property naming a skade server; without it the catalog is opened in this JVM. */
  String URI = CatalogProperties.URI;

  /** The bearer token sent to the server. */
  String TOKEN = "token";

  /**
   * How long a call to the server is retried through transient failures (default 10 min); see
   * {@link io.skade.catalog.remote.RemoteRetry}, the one policy every remote call rides.
   */
  String RETRY_TIMEOUT = "server.retry-timeout";

  /**
   * The property in which a skade server's {@code /v1/config} names its warehouse, so that its
   * clients name its tables as it does (in lineage).
   */
  String SERVER_WAREHOUSE = "skade.warehouse";

  /** The catalog's tables and namespaces. */
  Catalog catalog();

  /** The catalog's namespaces (both kinds of catalog support them). */
  default SupportsNamespaces namespaces() {
    return (SupportsNamespaces) catalog();
  }

  /**
   * Where the catalog is, to name its tables by in lineage: its warehouse (a server announces its
   * own), so a table has one name whichever process names it.
   */
  String location();

  /** The catalog's commit feed. */
  CommitFeed feed();

  /** Where consumers store their cursors. */
  ConsumerStore consumers();

  /** The catalog's table locks, which table maintenance takes. */
  MaintenanceLocks locks();

  /**
   * Whether commits are pushed to {@link CommitFeed#subscribeCommits subscribers}; false for a
   * read-only follower, which learns of commits only by polling {@link CommitFeed#commitSeq}.
   */
  boolean pushesCommits();

  /** Whether consumers can store cursors (not in a read-only follower). */
  boolean storesConsumers();

  /** The commit that added {@code snapshotId} to {@code table}, if the catalog recorded it. */
  Optional<CommitEvent> commitOf(TableIdentifier table, long snapshotId);

  /**
   * Commits changes to several tables atomically ({@link SkadeCatalog#commitTransaction}; through a
   * server, its {@code POST /v1/transactions/commit}): every table advances, with consecutive
   * {@code commitSeq}s, or none does.
   *
   * @throws org.apache.iceberg.exceptions.CommitFailedException when a table moved since its
   *     changes were prepared, or a requirement failed; nothing changed
   */
  void commitTransaction(List<TableCommit> commits);

  /**
   * The cursor's table, when the cursor can be resumed there; otherwise a {@link
   * CursorExpiredException} naming the table, the snapshot and the startup options that recover.
   */
  default Table requireCursorUsable(ConsumerCursor cursor) {
    return ExpiryGuard.requireUsable(catalog(), cursor);
  }

  /**
   * A number that changes when this process learns of a commit of {@code table}, cheap to read:
   * embedded, the catalog's commit sequence (an owner knows a commit the moment it is durable; a
   * follower when it reads the log); through a server, the newest commit of the table its commit
   * feed took ({@link io.skade.catalog.remote.RemoteCommitFeed#newestCommitOf}), which the feed
   * notes before any subscriber hears of it.
   */
  default long commitsSeen(TableIdentifier table) {
    return feed().commitSeq();
  }

  /**
   * Through a server, the newest commit of {@code table} this process learnt of ({@link
   * #commitsSeen}), when that commit left the table in place: a follower that holds the version it
   * was committed onto builds it from the updates the feed carried ({@link #metadataUpdates})
   * rather than load the whole table again. Empty embedded, where loading the table reads its
   * pointer and metadata from memory.
   */
  default Optional<CommitEvent> newestCommitSeen(TableIdentifier table) {
    return Optional.empty();
  }

  /**
   * Returns once this process knows of every commit that was durable when the call began, so that
   * {@link #commitsSeen} shows them: at once embedded (the owner knows each commit the moment it is
   * durable; a follower reads the log in {@link #commitsSeen}); through a server, after a round
   * trip to it, which concurrent callers share ({@link
   * io.skade.catalog.remote.RemoteCommitFeed#catchUp}).
   */
  default void catchUp() {}

  /**
   * As {@link #catchUp}, without holding the calling thread: completes once this process knows of
   * every commit that was durable when the call began (at once embedded), or fails as {@link
   * #catchUp} would throw.
   */
  default CompletableFuture<Void> caughtUp() {
    return CompletableFuture.completedFuture(null);
  }

  /**
   * The file IO to read {@code table}'s files with while following its commits: the table's own;
   * through a server, one that takes the metadata files the server holds from the server, not from
   * the store.
   */
  default FileIO readIO(Table table) {
    return table.io();
  }

  /**
   * The updates that made metadata file {@code location} from file {@code base}, when the catalog's
   * owner holds them (a server that committed {@code location} onto {@code base} lately): a reader
   * that holds {@code base} applies them ({@link CommittedMetadata#replay}) rather than parse the
   * whole file. Empty otherwise, and always embedded, where what this JVM committed is in memory.
   */
  default Optional<List<MetadataUpdate>> metadataUpdates(String location, String base) {
    return Optional.empty();
  }

  /** Whether the catalog is reached over the network (a skade server), not in this JVM. */
  default boolean isRemote() {
    return false;
  }

  /** Releases the connection (the catalog's hold, or the client's threads). */
  @Override
  void close();

  /**
   * A connection as {@code properties} ask for it: to the server {@code uri} names, or to the
   * catalog of the local directory they name (shared in this JVM, followed read-only when another
   * process owns it; see {@link SharedCatalogs#acquireOrFollow}).
   */
  static CatalogConnection open(Map<String, String> properties) {
    return open(properties, SharedCatalogs::acquireOrFollow);
  }

  /**
   * As {@link #open}, for a component that commits (a sink's committer): an embedded catalog is
   * opened as its owner, never followed, so that another process owning it is an error at once
   * ({@link CatalogLockedException}) rather than a failed commit later.
   */
  static CatalogConnection forWriting(Map<String, String> properties) {
    return open(properties, SharedCatalogs::acquire);
  }

  private static CatalogConnection open(
      Map<String, String> properties,
      Function<Map<String, String>, SharedCatalogs.Handle> embedded) {
    String uri = properties.get(URI);
    if (uri == null || uri.isBlank()) {
      SharedCatalogs.Handle handle = embedded.apply(properties);
      return new Embedded(handle.catalog(), handle);
    }
    return RemoteConnection.open(uri, properties);
  }

  /**
   * The {@link #location()} of the catalog {@code properties} name: the {@code warehouse}, or the
   * one the server at {@code uri} announces (asked of it now).
   *
   * @param what what needs it, for the error when neither is given
   */
  static String location(String what, Map<String, String> properties) {
    String uri = properties.get(URI);
    if (uri == null || uri.isBlank()) {
      return SkadeCatalog.warehouse(what, properties);
    }
    try (RemoteConnection remote = RemoteConnection.open(uri, properties)) {
      return remote.location();
    }
  }

  /**
   * The prefixes of the catalog properties that configure its file IO, as Iceberg names them
   * ({@code s3.endpoint}, {@code client.region}, {@code gcs.project-id}, ...), besides {@code
   * io-impl}: what every entry point passes through as written and what a server hands its clients.
   */
  List<String> FILE_IO_PREFIXES = List.of("s3.", "client.", "gcs.", "adls.", "hadoop.");

  /** Whether {@code key} configures the catalog's file IO: {@code io-impl} or a file-IO prefix. */
  static boolean isFileIoProperty(String key) {
    return key.equals(CatalogProperties.FILE_IO_IMPL)
        || FILE_IO_PREFIXES.stream().anyMatch(key::startsWith);
  }

  /**
   * The file IO of the catalog's tables, for a process that reads their files without loading a
   * table (a source reader): made from {@code properties}, or, through a server, from them merged
   * with the file-IO properties the server hands its clients ({@link
   * RemoteConnection#clientProperties}), so a task given only {@code uri} and {@code token} reads
   * the server's warehouse, and which takes metadata files from the server ({@link #readIO}).
   */
  static FileIO fileIO(Map<String, String> properties) {
    String uri = properties.get(URI);
    return uri == null || uri.isBlank()
        ? SkadeCatalog.fileIO(properties, null)
        : RemoteConnection.fileIO(uri, properties);
  }

  /** A connection to a catalog the caller opened and closes itself. */
  static CatalogConnection of(SkadeCatalog catalog) {
    return new Embedded(catalog, () -> {});
  }

  /** The catalog this JVM opened. */
  final class Embedded implements CatalogConnection {
    private final SkadeCatalog catalog;
    private final AutoCloseable hold;

    private Embedded(SkadeCatalog catalog, AutoCloseable hold) {
      this.catalog = catalog;
      this.hold = hold;
    }

    @Override
    public SkadeCatalog catalog() {
      return catalog;
    }

    @Override
    public String location() {
      return catalog.warehouse();
    }

    @Override
    public CommitFeed feed() {
      return catalog;
    }

    @Override
    public ConsumerStore consumers() {
      return catalog;
    }

    @Override
    public MaintenanceLocks locks() {
      return catalog;
    }

    @Override
    public boolean pushesCommits() {
      return !catalog.isFollower();
    }

    @Override
    public boolean storesConsumers() {
      return !catalog.isFollower();
    }

    @Override
    public Optional<CommitEvent> commitOf(TableIdentifier table, long snapshotId) {
      return catalog.commitOf(table, snapshotId);
    }

    @Override
    public void commitTransaction(List<TableCommit> commits) {
      catalog.commitTransaction(commits);
    }

    @Override
    public void close() {
      try {
        hold.close();
      } catch (Exception e) {
        throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
      }
    }
  }
}
