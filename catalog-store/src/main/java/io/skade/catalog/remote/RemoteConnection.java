package io.skade.catalog.remote;

import io.skade.catalog.CatalogConfig;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.catalog.ConsumerStore;
import io.skade.catalog.MaintenanceLocks;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A catalog a skade server owns, as a {@link CatalogConnection}: its tables through Iceberg's
 * {@link RESTCatalog}, its commits through a {@link RemoteCommitFeed}, its consumer cursors and
 * locks through a {@link SkadeServerClient}. Every call a component makes through {@link #riding}
 * is retried through transient failures (the server restarting) for up to {@link
 * CatalogConnection#RETRY_TIMEOUT}.
 *
 * <p>Made by {@link CatalogConnection#open} when the properties set {@code uri}; components name
 * {@link CatalogConnection}, not this class.
 */
public final class RemoteConnection implements CatalogConnection {
  private static final Logger LOG = LoggerFactory.getLogger(RemoteConnection.class);
  private final RESTCatalog catalog;
  private final SkadeServerClient client;
  private final RemoteCommitFeed feed;
  private final Duration retryFor;

  private RemoteConnection(URI server, Map<String, String> rest, String token, Duration retryFor) {
    this.retryFor = retryFor;
    // A task that starts while the server restarts waits for it (the client asks for the
    // server's configuration first).
    this.catalog =
        ridingAt(
            server,
            () -> {
              RESTCatalog client = new RESTCatalog();
              // Files it writes go through skade's local file system too, as an embedded
              // catalog's do (Hadoop's own starts a chmod process per file).
              client.setConf(CatalogConfig.defaultHadoopConf());
              client.initialize("skade", rest);
              return client;
            });
    this.client = new SkadeServerClient(server, token, retryFor);
    this.feed = new RemoteCommitFeed(client);
  }

  /**
   * A connection to the skade server at {@code uri}, configured by the catalog {@code properties}
   * ({@link CatalogConnection#TOKEN}, {@link CatalogConnection#RETRY_TIMEOUT}, and Iceberg's REST
   * client properties); waits for the server while it does not answer, up to the retry timeout.
   * Components open connections with {@link CatalogConnection#open}, which calls this.
   *
   * @throws IllegalArgumentException when {@code uri} is not an http or https URI, or the retry
   *     timeout is not a positive duration
   */
  public static RemoteConnection open(String uri, Map<String, String> properties) {
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
    return new RemoteConnection(server, rest, properties.get(TOKEN), retryFor);
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

  /**
   * {@code call} ridden through the failures of {@code server}; a failure that remains is thrown
   * unchecked, as {@link CatalogConnection#riding}'s own default throws the call's.
   */
  private <T> T ridingAt(URI server, Callable<T> call) {
    return CatalogConnection.super.riding(() -> ride(server, retryFor, call));
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
    return ridingAt(client.uri(), call);
  }

  /**
   * An I/O failure anywhere in the chain (Iceberg's client and skade's wrap theirs), or a 500 / 503
   * answer. Not any {@code RESTException}: 400, 401 and 403 are ones too, and no retry mends them.
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
