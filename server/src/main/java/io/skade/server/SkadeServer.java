package io.skade.server;

import io.skade.catalog.SkadeCatalog;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
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
   * @param group the server group this server is a member of, or null for a single server
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
      Map<String, String> catalogProperties,
      GroupSettings group) {
    public Settings {
      Objects.requireNonNull(warehouse, "warehouse");
      Objects.requireNonNull(bind, "bind");
      catalogProperties = Map.copyOf(catalogProperties);
    }

    /** A single server, in no group. */
    public Settings(
        String warehouse,
        Path catalogPath,
        String bind,
        int port,
        Path tokenFile,
        boolean insecureNoAuth,
        Path tlsKeystore,
        String tlsKeystorePassword,
        Map<String, String> catalogProperties) {
      this(
          warehouse,
          catalogPath,
          bind,
          port,
          tokenFile,
          insecureNoAuth,
          tlsKeystore,
          tlsKeystorePassword,
          catalogProperties,
          null);
    }

    /** These settings for a member of a server group. */
    public Settings inGroup(GroupSettings group) {
      return new Settings(
          warehouse,
          catalogPath,
          bind,
          port,
          tokenFile,
          insecureNoAuth,
          tlsKeystore,
          tlsKeystorePassword,
          catalogProperties,
          group);
    }

    /** Plain HTTP with bearer tokens from {@code tokenFile} (or none, when it is null). */
    public static Settings of(String warehouse, String bind, int port, Path tokenFile) {
      return new Settings(
          warehouse, null, bind, port, tokenFile, tokenFile == null, null, null, Map.of());
    }
  }

  private final Server jetty;
  private final Routes routes;
  private final URI uri;
  private final ServerGroup group;

  private SkadeServer(Server jetty, Routes routes, URI uri, ServerGroup group) {
    this.jetty = jetty;
    this.routes = routes;
    this.uri = uri;
    this.group = group;
  }

  /**
   * Opens the catalog as its owner and serves it; or, with {@link Settings#group()}, joins the
   * server group and serves the catalog while it leads.
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
    ServerMetrics metrics = new ServerMetrics();
    Routes routes = new Routes(tokens, metrics);
    Server jetty = null;
    ServerGroup group = null;
    try {
      if (settings.group() == null) {
        routes.serve(CatalogRoutes.open(settings, metrics, true, null));
      }
      QueuedThreadPool threads = new QueuedThreadPool(200, 8);
      threads.setName("skade-server");
      threads.setDaemon(true);
      jetty = new Server(threads);
      ServerConnector connector = connector(jetty, settings);
      jetty.addConnector(connector);
      GracefulHandler graceful = new GracefulHandler();
      graceful.setHandler(routes);
      jetty.setHandler(graceful);
      jetty.setStopTimeout(STOP_TIMEOUT_MS);
      jetty.start();
      String scheme = settings.tlsKeystore() == null ? "http" : "https";
      String host = settings.bind().contains(":") ? "[" + settings.bind() + "]" : settings.bind();
      URI uri = URI.create(scheme + "://" + host + ":" + connector.getLocalPort());
      if (settings.group() != null) {
        group = ServerGroup.join(settings, uri, routes, metrics);
        routes.group(group);
        LOG.info(
            "skade server: member {} of group {} on {}",
            settings.group().memberId(),
            settings.group().name(),
            uri);
      } else {
        LOG.info("skade server: catalog at {} served on {}", routes.catalog().catalogPath(), uri);
      }
      return new SkadeServer(jetty, routes, uri, group);
    } catch (Exception | Error e) {
      if (group != null) {
        group.close();
      }
      if (jetty != null) {
        try {
          jetty.stop();
        } catch (Exception suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      CatalogRoutes serving = routes.serve(null);
      if (serving != null) {
        serving.close();
      }
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

  /**
   * The catalog the server owns (a group member's, while it leads).
   *
   * @throws IllegalStateException when this member of a group does not lead it
   */
  public SkadeCatalog catalog() {
    return routes.catalog();
  }

  /** Blocks until the server has stopped. */
  public void join() throws InterruptedException {
    jetty.join();
  }

  @Override
  public void close() {
    if (group != null) {
      group.close(); // stops following and leading; the catalog's routes close below
    }
    CatalogRoutes serving = routes.serving();
    if (serving != null) {
      serving.release(); // parked long-polls answer now, so the graceful stop need not wait
    }
    try {
      jetty.stop(); // stops accepting, lets requests in flight finish
    } catch (Exception e) {
      LOG.warn("skade server: stopping the HTTP server failed", e);
    }
    serving = routes.serve(null);
    if (serving != null) {
      serving.close();
    }
  }

  /**
   * Authentication, then the route: health and metrics, the group's replication routes, then the
   * catalog's routes while this server serves its catalog; a group's standby answers those with
   * {@code 421} naming the leader, or {@code 503} while the group has none.
   */
  static final class Routes extends Handler.Abstract {
    private final BearerTokens tokens;
    private final ServerMetrics metrics;
    private volatile CatalogRoutes serving;
    private volatile ServerGroup group;

    Routes(BearerTokens tokens, ServerMetrics metrics) {
      this.tokens = tokens;
      this.metrics = metrics;
    }

    /** Serves {@code routes} from now on (null: none); returns those served before. */
    synchronized CatalogRoutes serve(CatalogRoutes routes) {
      CatalogRoutes before = serving;
      serving = routes;
      return before;
    }

    CatalogRoutes serving() {
      return serving;
    }

    void group(ServerGroup group) {
      this.group = group;
    }

    SkadeCatalog catalog() {
      CatalogRoutes current = serving;
      if (current == null) {
        throw new IllegalStateException(
            "this skade server is a standby of its group and holds no open catalog");
      }
      return current.catalog();
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
      CatalogRoutes current = serving;
      ServerGroup member = group;
      if (exchange.pathIs("healthz")) {
        exchange.route("GET /healthz");
        CommitFeedRoutes.requireGet(exchange);
        if (current == null && member == null) {
          exchange.header("Retry-After", "1");
          exchange.error(503, "StartingException", "the skade server is starting");
          return;
        }
        health(exchange, current, member);
      } else if (exchange.pathIs("metrics")) {
        exchange.route("GET /metrics");
        CommitFeedRoutes.requireGet(exchange);
        exchange.require(Caller.Role.READ);
        exchange.text(200, "text/plain; version=0.0.4", metrics.scrape());
      } else if (member != null && member.replicationRoutes().handle(exchange)) {
        return;
      } else if (current == null && member != null) {
        notLeading(exchange, member);
      } else if (current == null || !current.handle(exchange)) {
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

    /**
     * {@code {"status", "commit-seq", "role"[, "leader", "epoch"]}}; with {@code ?role=leader},
     * {@code 503} unless this server serves its catalog (a load balancer's check).
     */
    private static void health(Exchange exchange, CatalogRoutes current, ServerGroup member) {
      String role = member == null ? "single" : current != null ? "leader" : "standby";
      long commitSeq = current != null ? current.catalog().commitSeq() : member.replicaCommitSeq();
      StringBuilder json =
          new StringBuilder("{\"status\":\"ok\",\"commit-seq\":")
              .append(commitSeq)
              .append(",\"role\":\"")
              .append(role)
              .append('"');
      if (member != null) {
        member.leaderUri().ifPresent(uri -> json.append(",\"leader\":\"").append(uri).append('"'));
        json.append(",\"epoch\":").append(member.epoch());
      }
      json.append('}');
      boolean wanted = !"leader".equals(exchange.query("role")) || current != null;
      exchange.json(wanted ? 200 : 503, json.toString());
    }

    /** A standby's answer to a catalog route: where the leader is, or to try again soon. */
    private static void notLeading(Exchange exchange, ServerGroup member) {
      exchange.route("standby");
      java.util.Optional<URI> leader = member.leaderUri();
      if (leader.isPresent()) {
        exchange.header(ServerGroup.LEADER_HEADER, leader.get().toString());
        exchange.error(
            421,
            "NotLeaderException",
            "this skade server is a standby of group '"
                + member.name()
                + "'; send the request to its leader at "
                + leader.get()
                + " (skade's clients follow the leader when 'uri' lists the group's servers)");
      } else {
        exchange.header("Retry-After", "1");
        exchange.error(
            503,
            "NoLeaderException",
            "skade server group '"
                + member.name()
                + "' has no leader at the moment (one is being elected); try again shortly");
      }
    }
  }
}
