package io.skade.catalog.remote;

import io.skade.catalog.CatalogConfig;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.catalog.ConsumerStore;
import io.skade.catalog.MaintenanceLocks;
import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.rest.ResourcePaths;
import org.apache.iceberg.rest.auth.AuthProperties;
import org.apache.iceberg.rest.auth.OAuth2Properties;

/**
 * A catalog a skade server owns, as a {@link CatalogConnection}: its tables through Iceberg's
 * {@link RESTCatalog}, its commits through a {@link RemoteCommitFeed}, its consumer cursors and
 * locks through a {@link SkadeServerClient}. The connection owns one {@link RemoteRetry} and every
 * object it hands out rides it, so each call to the server is retried through transient failures
 * (the server restarting) for up to {@link CatalogConnection#RETRY_TIMEOUT}, and no caller wraps
 * calls in retries of its own.
 *
 * <p>Made by {@link CatalogConnection#open} when the properties set {@code uri}; components name
 * {@link CatalogConnection}, not this class.
 */
public final class RemoteConnection implements CatalogConnection {
  /**
   * Iceberg's REST client retries by itself, and cannot be told not to (the property must be at
   * least 1): one retry at most, so that {@link RemoteRetry}'s deadline is the one that counts.
   */
  static final String REST_MAX_RETRIES = "rest.client.max-retries";

  /**
   * The sessions of this JVM, by the server and properties they were opened with: every connection
   * with equal ones shares one, and so one long-poll and one catch-up with the server.
   */
  private static final Map<Map<String, String>, Session> SESSIONS = new HashMap<>();

  private final Session session;
  private final RidingCatalog catalog;
  private final SkadeServerClient client;
  private final RemoteCommitFeed feed;
  private final AtomicBoolean closed = new AtomicBoolean();

  private RemoteConnection(Session session) {
    this.session = session;
    this.catalog = session.catalog;
    this.client = session.client;
    this.feed = session.feed;
  }

  /**
   * What the connections of one JVM to one server with equal properties share: the REST client, the
   * server client and the commit feed (its long-poll thread and its catch-up checks), closed with
   * the last of them.
   */
  private static final class Session {
    final Map<String, String> key;
    final RESTCatalog rest;
    final RidingCatalog catalog;
    final SkadeServerClient client;
    final RemoteCommitFeed feed;
    int holders; // guarded by SESSIONS

    Session(
        Map<String, String> key,
        ServerAddress server,
        Map<String, String> rest,
        String token,
        RemoteRetry retry) {
      this.key = key;
      // A task that starts while the server restarts waits for it (the client asks for the
      // server's configuration first).
      this.rest =
          retry.call(
              "opening the catalog of " + server,
              () -> {
                RESTCatalog client = restCatalog(server);
                // Files it writes go through skade's local file system too, as an embedded
                // catalog's do (Hadoop's own starts a chmod process per file).
                client.setConf(CatalogConfig.defaultHadoopConf());
                client.initialize("skade", rest);
                return client;
              });
      this.catalog = new RidingCatalog(this.rest, retry);
      this.client = new SkadeServerClient(server, token, retry);
      this.feed = new RemoteCommitFeed(client);
    }

    void close() {
      feed.close();
      try {
        rest.close();
      } catch (IOException e) {
        throw new UncheckedIOException("closing the REST catalog of " + client.uri(), e);
      }
    }
  }

  /**
   * A connection to the skade server at {@code uri}, configured by the catalog {@code properties}
   * ({@link CatalogConnection#TOKEN}, {@link CatalogConnection#RETRY_TIMEOUT}, and Iceberg's REST
   * client properties); waits for the server while it does not answer, up to the retry timeout.
   * Connections of one JVM opened with equal properties share one session with the server (its
   * long-poll of commits and its catch-up checks), closed with the last of them. Components open
   * connections with {@link CatalogConnection#open}, which calls this.
   *
   * @throws IllegalArgumentException when {@code uri} is not an http or https URI, or the retry
   *     timeout is not a positive duration
   */
  public static RemoteConnection open(String uri, Map<String, String> properties) {
    ServerAddress server = server(uri, properties);
    RemoteRetry retry = RemoteRetry.of(server.toString(), properties);
    Map<String, String> key = new HashMap<>(properties);
    key.put(URI, server.toString());
    synchronized (SESSIONS) {
      Session shared = SESSIONS.get(key);
      if (shared != null) {
        shared.holders++;
        return new RemoteConnection(shared);
      }
    }
    // Opened outside the lock: it waits for a server that does not answer yet.
    Session opened =
        new Session(Map.copyOf(key), server, restProperties(key), properties.get(TOKEN), retry);
    Session shared;
    synchronized (SESSIONS) {
      shared = SESSIONS.putIfAbsent(opened.key, opened);
      (shared == null ? opened : shared).holders++;
    }
    if (shared != null) {
      opened.close(); // another thread opened one meanwhile
      return new RemoteConnection(shared);
    }
    return new RemoteConnection(opened);
  }

  /**
   * The catalog {@code properties} as the server at {@code uri} completes them for its clients:
   * merged with its {@code /v1/config} (the warehouse's file-IO properties as defaults, which the
   * {@code properties} override), as Iceberg's {@link RESTCatalog} merges them for the tables it
   * loads. What a process that reads table files without loading a table (a source reader) makes
   * its FileIO from; asked of the server now, riding the retry policy.
   */
  public static Map<String, String> clientProperties(String uri, Map<String, String> properties) {
    ServerAddress server = server(uri, properties);
    RemoteRetry retry = RemoteRetry.of(server.toString(), properties);
    Map<String, String> withUri = new HashMap<>(properties);
    withUri.put(URI, server.toString());
    Map<String, String> rest = restProperties(withUri);
    return retry.call(
        "reading the configuration of " + server,
        () -> {
          try (RESTCatalog client = restCatalog(server)) {
            client.setConf(CatalogConfig.defaultHadoopConf());
            client.initialize("skade", rest);
            return Map.copyOf(client.properties());
          }
        });
  }

  /**
   * The file IO of the tables of the server at {@code uri}, for a process that reads their files
   * without loading a table (a source reader): made from the {@link #clientProperties}, and taking
   * metadata files from the server's memory when the warehouse is not on local disk ({@link
   * ServerMetadataIO}).
   */
  public static FileIO fileIO(String uri, Map<String, String> properties) {
    ServerAddress server = server(uri, properties);
    Map<String, String> client = clientProperties(uri, properties);
    return ServerMetadataIO.over(
        SkadeCatalog.fileIO(client, null),
        true,
        new SkadeServerClient(
            server, properties.get(TOKEN), RemoteRetry.of(server.toString(), properties)),
        client.get(SERVER_WAREHOUSE));
  }

  /**
   * Posts a Flink job run's lineage event ({@code json}, as skade's lineage writes it) to the
   * lineage of the skade server the catalog {@code properties} name: it names the job in the
   * descriptions of the job's commits, and reaches the server's lineage sink. Best effort, as all
   * lineage: it rides the retry policy for at most {@code within} (or the retry timeout, when
   * shorter), without opening the catalog.
   *
   * @throws RuntimeException when the server refused the event or did not answer in time
   */
  public static void reportJobRun(Map<String, String> properties, String json, Duration within) {
    ServerAddress server = server(properties.get(URI), properties);
    RemoteRetry retry = RemoteRetry.of(server.toString(), properties).atMost(within);
    new SkadeServerClient(server, properties.get(TOKEN), retry).reportJobRun(json);
  }

  private static ServerAddress server(String uri, Map<String, String> properties) {
    String token = properties.get(TOKEN);
    return ServerAddress.parse(uri, member -> SkadeServerClient.leads(member, token));
  }

  /**
   * Iceberg's REST catalog of {@code server}: its own HTTP client for one server, one that follows
   * the leader for a group.
   */
  private static RESTCatalog restCatalog(ServerAddress server) {
    return server.isGroup()
        ? new RESTCatalog(config -> new LeaderFollowingClient(server, config))
        : new RESTCatalog();
  }

  /**
   * What Iceberg's REST client is given: the catalog properties without skade's own, with its
   * retries cut to one ({@link #REST_MAX_RETRIES}) and, for a bearer token, the authentication that
   * sends it as it is (OAuth2, whose static {@code token} is the bearer token) and its token
   * endpoint named as Iceberg would infer them, without its warnings.
   */
  static Map<String, String> restProperties(Map<String, String> properties) {
    Map<String, String> rest = new HashMap<>(properties);
    rest.keySet().removeIf(key -> key.startsWith("catalog.") || key.equals(RETRY_TIMEOUT));
    rest.put(REST_MAX_RETRIES, "1");
    if (rest.containsKey(TOKEN)) {
      // What Iceberg infers from a token, named, so that it does not warn at each open that it
      // infers it, nor that it falls back to the server's token endpoint (the same as its default).
      rest.putIfAbsent(AuthProperties.AUTH_TYPE, AuthProperties.AUTH_TYPE_OAUTH2);
      rest.putIfAbsent(OAuth2Properties.OAUTH2_SERVER_URI, ResourcePaths.tokens());
    }
    return rest;
  }

  /** The server's tables and namespaces, each call riding the connection's retry policy. */
  @Override
  public Catalog catalog() {
    return catalog;
  }

  @Override
  public SupportsNamespaces namespaces() {
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
  public void commitTransaction(List<TableCommit> commits) {
    catalog.commitTransaction(commits);
  }

  @Override
  public void catchUp() {
    feed.catchUp();
  }

  @Override
  public CompletableFuture<Void> caughtUp() {
    return feed.caughtUp();
  }

  @Override
  public long commitsSeen(TableIdentifier table) {
    feed.follow();
    return feed.newestCommitOf(table);
  }

  @Override
  public Optional<CommitEvent> newestCommitSeen(TableIdentifier table) {
    feed.follow();
    return feed.newestPointerCommitOf(table);
  }

  @Override
  public boolean isRemote() {
    return true;
  }

  /**
   * The table's file IO, taking metadata files from the server when they are not on local disk
   * ({@link ServerMetadataIO}).
   */
  @Override
  public FileIO readIO(Table table) {
    return ServerMetadataIO.over(table.io(), false, client, table.location());
  }

  @Override
  public Optional<List<MetadataUpdate>> metadataUpdates(String location, String base) {
    Optional<List<MetadataUpdate>> delivered = feed.updates(location, base);
    if (delivered.isPresent()) {
      return delivered; // came with the commit on the feed
    }
    try {
      return client.metadataUpdates(location, base, ServerMetadataIO.ASK_TIMEOUT);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  /** Releases this connection; the session with the server closes with the last of its users. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (SESSIONS) {
      if (--session.holders > 0) {
        return;
      }
      SESSIONS.remove(session.key);
    }
    session.close();
  }
}
