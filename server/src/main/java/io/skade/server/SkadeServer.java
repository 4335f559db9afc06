package io.skade.server;

import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The skade server: the one process that owns a skade catalog (its RocksDB store, its commit path,
 * unchanged) and serves it to every other process over HTTP, on Jetty: the Iceberg REST catalog
 * protocol ({@link IcebergRoutes}), the commit feed as a long-poll ({@link CommitFeedRoutes}),
 * consumer cursors ({@link ConsumerRoutes}), table locks ({@link LockRoutes}), metadata files
 * ({@link MetadataRoutes}), Flink job runs for the lineage ({@link LineageRoutes}), {@code
 * /healthz} and Prometheus {@code /metrics}. Every route needs a bearer token unless the server was
 * started without authentication on purpose.
 *
 * <p>Closing it shuts down gracefully: parked long-polls are answered at once, no new connection is
 * accepted, requests in flight (commits among them) finish, then the catalog closes.
 */
public final class SkadeServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeServer.class);

  /** Longer than any long-poll waits, so that an idle connection is not cut under one. */
  private static final long IDLE_TIMEOUT_MS = 2 * io.skade.catalog.remote.SkadeProtocol.MAX_WAIT_MS;

  private static final long STOP_TIMEOUT_MS = 30_000;

  /**
   * How to run a server.
   *
   * @param warehouse the root of table data (a local directory, or a URI with {@code catalogPath}
   *     given)
   * @param catalogPath the RocksDB directory, or null for {@code <warehouse>/_catalog}
   * @param bind the address to listen on
   * @param port the port, 0 for any free one
   * @param tokenFile the bearer tokens allowed, or null with {@code insecureNoAuth}
   * @param insecureNoAuth serve anyone, without a token
   * @param tlsKeystore a keystore (PKCS12 or JKS) to serve HTTPS with, or null for HTTP
   * @param tlsKeystorePassword the keystore's password
   * @param catalogProperties more properties of the catalog (e.g. {@code consumer.expiry-timeout});
   *     {@code warehouse} and {@code catalog.path} come from above
   */
  public record Settings(
      String warehouse,
      Path catalogPath,
      String bind,
      int port,
      Path tokenFile,
      boolean insecureNoAuth,
      Path tlsKeystore,
      String tlsKeystorePassword,
      Map<String, String> catalogProperties) {
    public Settings {
      Objects.requireNonNull(warehouse, "warehouse");
      Objects.requireNonNull(bind, "bind");
      catalogProperties = Map.copyOf(catalogProperties);
    }

    /** Plain HTTP with bearer tokens from {@code tokenFile} (or none, when it is null). */
    public static Settings of(String warehouse, String bind, int port, Path tokenFile) {
      return new Settings(
          warehouse, null, bind, port, tokenFile, tokenFile == null, null, null, Map.of());
    }
  }

  private final Server jetty;
  private final SkadeCatalog catalog;
  private final CommitFeedRoutes feed;
  private final URI uri;

  /** Forgets idempotency keys older than their lifetime, every few minutes. */
  private final ScheduledExecutorService maintenance =
      Executors.newSingleThreadScheduledExecutor(
          runnable -> {
            Thread thread = new Thread(runnable, "skade-server-maintenance");
            thread.setDaemon(true);
            return thread;
          });

  private SkadeServer(Server jetty, SkadeCatalog catalog, CommitFeedRoutes feed, URI uri) {
    this.jetty = jetty;
    this.catalog = catalog;
    this.feed = feed;
    this.uri = uri;
    maintenance.scheduleWithFixedDelay(this::expireIdempotencyKeys, 0, 5, TimeUnit.MINUTES);
  }

  private void expireIdempotencyKeys() {
    try {
      catalog.expireIdempotencyKeys(Instant.now().minus(IcebergRoutes.IDEMPOTENCY_LIFETIME));
    } catch (RuntimeException e) {
      LOG.warn("skade server: forgetting expired idempotency keys failed; trying again later", e);
    }
  }

  /**
   * Opens the catalog as its owner and serves it.
   *
   * @throws IllegalArgumentException for bad settings, before the catalog is opened
   * @throws io.skade.catalog.CatalogLockedException when another process owns the catalog
   */
  public static SkadeServer start(Settings settings) throws Exception {
    BearerTokens tokens = authentication(settings); // bad settings fail before any catalog I/O
    if (settings.tlsKeystore() != null && !Files.isReadable(settings.tlsKeystore())) {
      throw new IllegalArgumentException(
          "--tls-keystore "
              + settings.tlsKeystore()
              + " is not a readable file; give a PKCS12 or JKS keystore holding the server's"
              + " certificate and key");
    }
    Map<String, String> properties = new HashMap<>(settings.catalogProperties());
    properties.put("warehouse", settings.warehouse());
    if (settings.catalogPath() != null) {
      properties.put(SkadeCatalog.CATALOG_PATH, settings.catalogPath().toString());
    }
    properties.remove(SkadeCatalog.CATALOG_ACCESS); // the server is the owner, nothing else
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("skade", properties);
    CommitFeedRoutes feed = null;
    Server jetty = null;
    try {
      ServerMetrics metrics = new ServerMetrics();
      feed = new CommitFeedRoutes(catalog, metrics);
      QueuedThreadPool threads = new QueuedThreadPool(200, 8);
      threads.setName("skade-server");
      threads.setDaemon(true);
      jetty = new Server(threads);
      ServerConnector connector = connector(jetty, settings);
      jetty.addConnector(connector);
      GracefulHandler graceful = new GracefulHandler();
      graceful.setHandler(
          new Routes(
              tokens,
              metrics,
              feed,
              new ConsumerRoutes(catalog),
              new LockRoutes(catalog),
              new MetadataRoutes(catalog),
              new LineageRoutes(catalog),
              new IcebergRoutes(catalog, metrics, settings.catalogProperties()),
              catalog));
      jetty.setHandler(graceful);
      jetty.setStopTimeout(STOP_TIMEOUT_MS);
      jetty.start();
      String scheme = settings.tlsKeystore() == null ? "http" : "https";
      String host = settings.bind().contains(":") ? "[" + settings.bind() + "]" : settings.bind();
      URI uri = URI.create(scheme + "://" + host + ":" + connector.getLocalPort());
      LOG.info("skade server: catalog at {} served on {}", catalog.catalogPath(), uri);
      return new SkadeServer(jetty, catalog, feed, uri);
    } catch (Exception | Error e) {
      if (jetty != null) {
        try {
          jetty.stop();
        } catch (Exception suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      if (feed != null) {
        feed.close();
      }
      catalog.close();
      throw e;
    }
  }

  private static BearerTokens authentication(Settings settings) {
    if (settings.tokenFile() != null && settings.insecureNoAuth()) {
      throw new IllegalArgumentException(
          "--token-file and --insecure-no-auth exclude each"
              + " other; give the token file to require tokens, or only --insecure-no-auth to"
              + " serve anyone");
    }
    if (settings.tokenFile() == null && !settings.insecureNoAuth()) {
      throw new IllegalArgumentException(
          "the server needs --token-file FILE (bearer tokens,"
              + " one per line) or, to serve anyone without a token, --insecure-no-auth");
    }
    return settings.tokenFile() == null ? null : BearerTokens.read(settings.tokenFile());
  }

  private static ServerConnector connector(Server jetty, Settings settings) {
    HttpConfiguration http = new HttpConfiguration();
    http.setSendServerVersion(false);
    // Table names may hold an encoded '/' (%2F): the routes split the raw path themselves.
    http.setUriCompliance(
        UriCompliance.DEFAULT.with(
            "skade",
            UriCompliance.Violation.AMBIGUOUS_PATH_SEPARATOR,
            UriCompliance.Violation.AMBIGUOUS_PATH_ENCODING,
            UriCompliance.Violation.AMBIGUOUS_PATH_SEGMENT,
            UriCompliance.Violation.SUSPICIOUS_PATH_CHARACTERS));
    ServerConnector connector;
    if (settings.tlsKeystore() == null) {
      connector = new ServerConnector(jetty, new HttpConnectionFactory(http));
    } else {
      SslContextFactory.Server tls = new SslContextFactory.Server();
      tls.setKeyStorePath(settings.tlsKeystore().toString());
      tls.setKeyStorePassword(settings.tlsKeystorePassword());
      http.addCustomizer(new SecureRequestCustomizer());
      connector =
          new ServerConnector(
              jetty, new SslConnectionFactory(tls, "http/1.1"), new HttpConnectionFactory(http));
    }
    connector.setHost(settings.bind());
    connector.setPort(settings.port());
    connector.setIdleTimeout(IDLE_TIMEOUT_MS);
    return connector;
  }

  /** Where the server listens, e.g. {@code http://127.0.0.1:8181}. */
  public URI uri() {
    return uri;
  }

  /** The catalog the server owns. */
  public SkadeCatalog catalog() {
    return catalog;
  }

  /** Blocks until the server has stopped. */
  public void join() throws InterruptedException {
    jetty.join();
  }

  @Override
  public void close() {
    maintenance.shutdownNow();
    feed.release(); // parked long-polls answer now, so the graceful stop need not wait for them
    try {
      jetty.stop(); // stops accepting, lets requests in flight finish
    } catch (Exception e) {
      LOG.warn("skade server: stopping the HTTP server failed", e);
    }
    feed.close();
    try {
      catalog.close();
    } catch (IOException e) {
      throw new UncheckedIOException("closing the catalog at " + catalog.catalogPath(), e);
    }
  }

  /** Authentication, then the route. */
  private static final class Routes extends Handler.Abstract {
    private final BearerTokens tokens;
    private final ServerMetrics metrics;
    private final CommitFeedRoutes feed;
    private final ConsumerRoutes consumers;
    private final LockRoutes locks;
    private final MetadataRoutes metadata;
    private final LineageRoutes lineage;
    private final IcebergRoutes iceberg;
    private final SkadeCatalog catalog;

    Routes(
        BearerTokens tokens,
        ServerMetrics metrics,
        CommitFeedRoutes feed,
        ConsumerRoutes consumers,
        LockRoutes locks,
        MetadataRoutes metadata,
        LineageRoutes lineage,
        IcebergRoutes iceberg,
        SkadeCatalog catalog) {
      this.tokens = tokens;
      this.metrics = metrics;
      this.feed = feed;
      this.consumers = consumers;
      this.locks = locks;
      this.metadata = metadata;
      this.lineage = lineage;
      this.iceberg = iceberg;
      this.catalog = catalog;
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      long started = System.nanoTime();
      Exchange exchange = new Exchange(request, response, callback);
      Request.addCompletionListener(
          request,
          failure ->
              metrics.request(
                  exchange.route(),
                  exchange.method(),
                  exchange.status(),
                  System.nanoTime() - started));
      try {
        Caller caller =
            tokens == null ? Caller.ANYONE : tokens.caller(exchange.header("Authorization"));
        if (caller == null) {
          exchange.route("unauthorized");
          exchange.header("WWW-Authenticate", "Bearer realm=\"skade\"");
          exchange.error(
              401,
              "NotAuthorizedException",
              "a bearer token is required"
                  + " (Authorization: Bearer <token>; Iceberg clients: the catalog property"
                  + " 'token'), and the one given, if any, is not one of the server's");
        } else {
          exchange.caller(caller);
          route(exchange, request);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        RestErrors.answer(exchange, e);
      } catch (Exception | Error e) {
        RestErrors.answer(exchange, e);
      }
      return true;
    }

    private void route(Exchange exchange, Request request) throws Exception {
      if (exchange.pathIs("healthz")) {
        exchange.route("GET /healthz");
        CommitFeedRoutes.requireGet(exchange);
        exchange.json(200, "{\"status\":\"ok\",\"commit-seq\":" + catalog.commitSeq() + "}");
      } else if (exchange.pathIs("metrics")) {
        exchange.route("GET /metrics");
        CommitFeedRoutes.requireGet(exchange);
        exchange.require(Caller.Role.READ);
        exchange.text(200, "text/plain; version=0.0.4", metrics.scrape());
      } else if (!feed.handle(exchange)
          && !consumers.handle(exchange)
          && !locks.handle(exchange)
          && !metadata.handle(exchange)
          && !lineage.handle(exchange)
          && !iceberg.handle(exchange)) {
        exchange.error(
            400,
            "BadRequestException",
            "no route for "
                + exchange.method()
                + " "
                + request.getHttpURI().getPath()
                + "; the server serves the Iceberg REST catalog"
                + " protocol under /v1 and skade's commit feed, consumers, locks, metadata and lineage under /skade/v1");
      }
    }
  }
}
