package io.skade.catalog;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Function;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A skade catalog as a component uses it, wherever the catalog lives: its tables ({@link
 * #catalog()}), its commit feed, its consumer cursors. Embedded, all three are the {@link
 * SkadeCatalog} this JVM opened (or follows); with the property {@code uri}, they are Iceberg's
 * {@link RESTCatalog}, a {@link RemoteCommitFeed} and a {@link SkadeServerClient} of the skade
 * server that owns the catalog. Components depend on this, not on where the catalog is.
 */
public interface CatalogConnection extends AutoCloseable {
  /** The property naming a skade server; without it the catalog is opened in this JVM. */
  String URI = CatalogProperties.URI;

  /** The bearer token sent to the server. */
  String TOKEN = "token";

  /** How long a call to the server is retried through transient failures (default 10 min). */
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
   * feed took ({@link RemoteCommitFeed#newestCommitOf}), which the feed notes before any subscriber
   * hears of it.
   */
  default long commitsSeen(TableIdentifier table) {
    return feed().commitSeq();
  }

  /**
   * Returns once this process knows of every commit that was durable when the call began, so that
   * {@link #commitsSeen} shows them: at once embedded (the owner knows each commit the moment it is
   * durable; a follower reads the log in {@link #commitsSeen}); through a server, after a round
   * trip to it, which concurrent callers share ({@link RemoteCommitFeed#catchUp}).
   */
  default void catchUp() {}

  /** Whether the catalog is reached over the network (a skade server), not in this JVM. */
  default boolean isRemote() {
    return false;
  }

  /**
   * Whether {@code failure} is one to ride through by trying again: for a server, one that says it
   * could not be reached or answered 5xx (it restarts); never for an embedded catalog.
   */
  default boolean isTransient(Throwable failure) {
    return false;
  }

  /**
   * What {@code call} returns, calling it again through failures that can heal ({@link
   * #isTransient}: the server restarting) with a backoff from 100 ms to 5 s, for up to the retry
   * timeout ({@link #RETRY_TIMEOUT}); for an embedded catalog, just the call. Interrupting the
   * thread ends the retries (an {@link UncheckedIOException} of an {@link InterruptedIOException},
   * the interrupt kept); a checked failure of the call comes wrapped.
   */
  default <T> T riding(Callable<T> call) {
    return unchecked(call);
  }

  private static <T> T unchecked(Callable<T> call) {
    try {
      return call.call();
    } catch (RuntimeException e) {
      throw e;
    } catch (InterruptedException | InterruptedIOException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(
          new InterruptedIOException("interrupted waiting for the skade catalog"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
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
    return Remote.open(uri, properties);
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
    try (Remote remote = Remote.open(uri, properties)) {
      return remote.location();
    }
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
    public void close() {
      try {
        hold.close();
      } catch (Exception e) {
        throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
      }
    }
  }

  /** A catalog a skade server owns. */
  final class Remote implements CatalogConnection {
    private static final Logger LOG = LoggerFactory.getLogger(Remote.class);
    private final RESTCatalog catalog;
    private final SkadeServerClient client;
    private final RemoteCommitFeed feed;
    private final Duration retryFor;

    private Remote(RESTCatalog catalog, SkadeServerClient client, Duration retryFor) {
      this.catalog = catalog;
      this.client = client;
      this.feed = new RemoteCommitFeed(client);
      this.retryFor = retryFor;
    }

    static Remote open(String uri, Map<String, String> properties) {
      URI server;
      try {
        server = java.net.URI.create(uri.trim());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "catalog property 'uri' = '"
                + uri
                + "' is not a URI;"
                + " give the skade server's address, e.g. uri=http://catalog-host:8181",
            e);
      }
      if (!"http".equals(server.getScheme()) && !"https".equals(server.getScheme())) {
        throw new IllegalArgumentException(
            "catalog property 'uri' = '"
                + uri
                + "' must be an"
                + " http:// or https:// address of a skade server, e.g. http://catalog-host:8181");
      }
      Duration retryFor = retryTimeout(properties);
      Map<String, String> rest = new HashMap<>(properties);
      rest.keySet().removeIf(key -> key.startsWith("catalog.") || key.equals(RETRY_TIMEOUT));
      // A task that starts while the server restarts waits for it (the client asks for the
      // server's configuration first).
      RESTCatalog catalog =
          unchecked(
              () ->
                  ride(
                      server,
                      retryFor,
                      () -> {
                        RESTCatalog client = new RESTCatalog();
                        // Files it writes go through skade's local file system too, as an embedded
                        // catalog's
                        // do (Hadoop's own starts a chmod process per file).
                        client.setConf(CatalogConfig.defaultHadoopConf());
                        client.initialize("skade", rest);
                        return client;
                      }));
      return new Remote(
          catalog, new SkadeServerClient(server, properties.get(TOKEN), retryFor), retryFor);
    }

    /** {@link #RETRY_TIMEOUT} as {@code properties} set it; 10 min by default. */
    private static Duration retryTimeout(Map<String, String> properties) {
      String value = properties.get(RETRY_TIMEOUT);
      if (value == null) {
        return Duration.ofMinutes(10);
      }
      Duration retry = CatalogConfig.duration(value);
      if (retry == null) {
        throw new IllegalArgumentException(
            "catalog property '"
                + RETRY_TIMEOUT
                + "' = '"
                + value
                + "' is not a positive duration; give one such as '30 s' or '10 min'");
      }
      return retry;
    }

    /** {@code call} ridden through transient failures, for up to {@code retryFor}. */
    private static <T> T ride(URI server, Duration retryFor, Callable<T> call) throws Exception {
      long deadline = System.nanoTime() + retryFor.toNanos();
      long backoff = 100;
      while (true) {
        try {
          return call.call();
        } catch (Exception e) {
          if (!transientFailure(e) || System.nanoTime() + backoff * 1_000_000 > deadline) {
            throw e;
          }
          LOG.warn(
              "skade server at {} did not answer ({}); trying again in {} ms",
              server,
              e.toString(),
              backoff);
          Thread.sleep(backoff);
          backoff = Math.min(5_000, backoff * 2);
        }
      }
    }

    @Override
    public RESTCatalog catalog() {
      return catalog;
    }

    /** The warehouse the server announces; its {@code uri} if it announces none. */
    @Override
    public String location() {
      String warehouse = catalog.properties().get(SERVER_WAREHOUSE);
      return warehouse != null ? warehouse : client.uri().toString();
    }

    @Override
    public CommitFeed feed() {
      return feed;
    }

    @Override
    public ConsumerStore consumers() {
      return client;
    }

    @Override
    public MaintenanceLocks locks() {
      return client;
    }

    @Override
    public boolean pushesCommits() {
      return true;
    }

    @Override
    public boolean storesConsumers() {
      return true;
    }

    @Override
    public Optional<CommitEvent> commitOf(TableIdentifier table, long snapshotId) {
      return client.commitOf(table, snapshotId);
    }

    @Override
    public void catchUp() {
      feed.catchUp();
    }

    @Override
    public long commitsSeen(TableIdentifier table) {
      feed.follow();
      return feed.newestCommitOf(table);
    }

    @Override
    public boolean isRemote() {
      return true;
    }

    @Override
    public boolean isTransient(Throwable failure) {
      return transientFailure(failure);
    }

    @Override
    public <T> T riding(Callable<T> call) {
      return unchecked(() -> ride(client.uri(), retryFor, call));
    }

    /**
     * An I/O failure anywhere in the chain (Iceberg's client and skade's wrap theirs), or a 500 /
     * 503 answer. Not any {@code RESTException}: 400, 401 and 403 are ones too, and no retry mends
     * them.
     */
    static boolean transientFailure(Throwable failure) {
      for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
        if (cause instanceof IOException
            || cause instanceof org.apache.iceberg.exceptions.ServiceFailureException
            || cause instanceof org.apache.iceberg.exceptions.ServiceUnavailableException) {
          return true;
        }
      }
      return false;
    }

    @Override
    public void close() {
      feed.close();
      try {
        catalog.close();
      } catch (IOException e) {
        throw new UncheckedIOException("closing the REST catalog of " + client.uri(), e);
      }
    }
  }
}
