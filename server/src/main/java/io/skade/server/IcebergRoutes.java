package io.skade.server;

import io.micrometer.core.instrument.Timer;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.IdempotencyKeyUsedException;
import io.skade.catalog.IdempotencyRecord;
import io.skade.catalog.SkadeCatalog;
import io.skade.server.Caller.Role;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.Endpoint;
import org.apache.iceberg.rest.RESTCatalogProperties;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.ResourcePaths;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.ReportMetricsRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.CreateNamespaceResponse;
import org.apache.iceberg.rest.responses.ListNamespacesResponse;
import org.apache.iceberg.rest.responses.LoadTableResponse;
import org.apache.iceberg.rest.responses.UpdateNamespacePropertiesResponse;

/**
 * The Iceberg REST catalog protocol over one {@link SkadeCatalog}: each route of the spec that
 * skade serves, handed to Iceberg's own {@link CatalogHandlers} (which check requests and build
 * responses as the reference implementation does) or, for a multi-table commit, to {@link
 * SkadeCatalog#commitTransaction}, so every commit goes through skade's one commit path.
 *
 * <p>Paths carry no prefix. Table loads carry an {@code ETag} (of the metadata location and the
 * snapshot mode) and are answered {@code 304} when {@code If-None-Match} names the current one.
 */
final class IcebergRoutes {
  /**
   * A route: its method, its path template ({@code {name}} matches one segment), the role it needs
   * (on the path's namespace, when it has one), its handler.
   */
  private record Route(
      String method, String template, String specPath, Role role, Handler handler) {
    Map<String, String> match(Exchange exchange) {
      if (!method.equals(exchange.method())) {
        return null;
      }
      String[] parts = template.substring(1).split("/");
      List<String> segments = exchange.segments();
      if (segments.size() != parts.length) {
        return null;
      }
      Map<String, String> vars = new HashMap<>();
      for (int i = 0; i < parts.length; i++) {
        if (parts[i].startsWith("{")) {
          vars.put(parts[i].substring(1, parts[i].length() - 1), segments.get(i));
        } else if (!parts[i].equals(segments.get(i))) {
          return null;
        }
      }
      return vars;
    }
  }

  @FunctionalInterface
  private interface Handler {
    void handle(Exchange exchange, Map<String, String> vars) throws Exception;
  }

  /** A table's changes of a multi-table commit, as {@link SkadeCatalog} takes them. */
  private record Change(
      TableIdentifier identifier,
      List<UpdateRequirement> requirements,
      List<MetadataUpdate> updates)
      implements TableCommit {}

  /** Set on an answer rebuilt for a retry of a request already committed under its key. */
  static final String REPLAY_HEADER = "X-Skade-Idempotent-Replay";

  /** How long a key is honoured at least, as {@code /v1/config} advertises it. */
  static final Duration IDEMPOTENCY_LIFETIME = Duration.ofMinutes(30);

  private final SkadeCatalog catalog;
  private final ServerMetrics metrics;
  private final Map<String, String> fileIoDefaults;
  private final List<Route> routes = new ArrayList<>();

  /**
   * @param catalogProperties the properties the server was started with ({@code -P}); those that
   *     configure file IO are handed to every client in {@code /v1/config}
   */
  IcebergRoutes(
      SkadeCatalog catalog, ServerMetrics metrics, Map<String, String> catalogProperties) {
    this.catalog = catalog;
    this.metrics = metrics;
    this.fileIoDefaults = fileIoProperties(catalogProperties);
    route("GET", "/v1/config", Role.READ, this::config);
    route("GET", ResourcePaths.V1_NAMESPACES, Role.READ, this::listNamespaces);
    route(
        "POST",
        ResourcePaths.V1_NAMESPACES,
        Role.WRITE,
        (ex, vars) ->
            ex.json(
                200,
                IcebergJson.write(
                    CatalogHandlers.createNamespace(
                        catalog, body(ex, CreateNamespaceRequest.class)))));
    route(
        "HEAD",
        ResourcePaths.V1_NAMESPACE,
        Role.READ,
        (ex, vars) -> {
          CatalogHandlers.namespaceExists(catalog, namespace(vars));
          ex.empty(204);
        });
    route(
        "GET",
        ResourcePaths.V1_NAMESPACE,
        Role.READ,
        (ex, vars) ->
            ex.json(
                200, IcebergJson.write(CatalogHandlers.loadNamespace(catalog, namespace(vars)))));
    route(
        "DELETE",
        ResourcePaths.V1_NAMESPACE,
        Role.ADMIN,
        (ex, vars) -> {
          CatalogHandlers.dropNamespace(catalog, namespace(vars));
          ex.empty(204);
        });
    route(
        "POST",
        ResourcePaths.V1_NAMESPACE_PROPERTIES,
        Role.WRITE,
        (ex, vars) ->
            ex.json(
                200,
                IcebergJson.write(
                    CatalogHandlers.updateNamespaceProperties(
                        catalog,
                        namespace(vars),
                        body(ex, UpdateNamespacePropertiesRequest.class)))));
    route("GET", ResourcePaths.V1_TABLES, Role.READ, this::listTables);
    route("POST", ResourcePaths.V1_TABLES, Role.WRITE, this::createTable);
    route(
        "POST",
        ResourcePaths.V1_TABLE_REGISTER,
        Role.WRITE,
        (ex, vars) ->
            answerTable(
                ex,
                200,
                CatalogHandlers.registerTable(
                    catalog, namespace(vars), body(ex, RegisterTableRequest.class)),
                RESTCatalogProperties.SnapshotMode.ALL));
    route(
        "HEAD",
        ResourcePaths.V1_TABLE,
        Role.READ,
        (ex, vars) -> {
          CatalogHandlers.tableExists(catalog, table(vars));
          ex.empty(204);
        });
    route("GET", ResourcePaths.V1_TABLE, Role.READ, this::loadTable);
    route("POST", ResourcePaths.V1_TABLE, Role.WRITE, this::updateTable);
    route(
        "DELETE",
        ResourcePaths.V1_TABLE,
        Role.ADMIN,
        (ex, vars) -> {
          if (Boolean.parseBoolean(ex.query("purgeRequested"))) {
            CatalogHandlers.purgeTable(catalog, table(vars));
          } else {
            CatalogHandlers.dropTable(catalog, table(vars));
          }
          ex.empty(204);
        });
    route(
        "POST",
        ResourcePaths.V1_TABLE_RENAME,
        Role.ADMIN,
        (ex, vars) -> {
          CatalogHandlers.renameTable(catalog, body(ex, RenameTableRequest.class));
          ex.empty(204);
        });
    route(
        "POST",
        ResourcePaths.V1_TABLE_METRICS,
        Role.READ,
        (ex, vars) -> {
          body(ex, ReportMetricsRequest.class); // accepted (checked) and dropped
          ex.empty(204);
        });
    route("POST", ResourcePaths.V1_TRANSACTIONS_COMMIT, Role.WRITE, this::commitTransaction);
  }

  private void route(String method, String template, Role role, Handler handler) {
    routes.add(new Route(method, template.replace("/{prefix}", ""), template, role, handler));
  }

  /**
   * Handles {@code exchange} when it is a route of the protocol; false when no route matches. The
   * handler's failures reach the caller, which answers them with {@link RestErrors}.
   */
  boolean handle(Exchange exchange) throws Exception {
    for (Route route : routes) {
      Map<String, String> vars = route.match(exchange);
      if (vars != null) {
        exchange.route(route.method() + " " + route.template());
        authorize(exchange, route, vars); // before a replay too: it answers what was committed
        String key = exchange.header(RESTUtil.IDEMPOTENCY_KEY_HEADER);
        if (key == null || route.method().equals("GET") || route.method().equals("HEAD")) {
          route.handler().handle(exchange, vars);
        } else {
          idempotently(exchange, route, vars, key);
        }
        return true;
      }
    }
    return false;
  }

  /**
   * Refuses the request unless its caller has the route's role on every namespace it touches: the
   * path's, and for the routes that name tables or namespaces in their body, theirs. A table commit
   * that expires snapshots or rewrites files is maintenance, which needs {@link Role#ADMIN}.
   */
  private static void authorize(Exchange exchange, Route route, Map<String, String> vars)
      throws InterruptedException {
    Caller caller = exchange.caller();
    exchange.require(route.role());
    if (vars.containsKey("namespace")) {
      exchange.require(route.role(), namespace(vars));
    }
    if (caller.role() == Role.ADMIN && caller.namespaces().isEmpty()) {
      return; // may do anything: the body need not be read twice
    }
    String path = route.method().equals("POST") ? route.specPath() : "";
    if (path.equals(ResourcePaths.V1_NAMESPACES)) {
      exchange.require(route.role(), body(exchange, CreateNamespaceRequest.class).namespace());
    } else if (path.equals(ResourcePaths.V1_TABLE_RENAME)) {
      RenameTableRequest rename = body(exchange, RenameTableRequest.class);
      exchange.require(route.role(), rename.source().namespace());
      exchange.require(route.role(), rename.destination().namespace());
    } else if (path.equals(ResourcePaths.V1_TABLE)) {
      if (maintenance(body(exchange, UpdateTableRequest.class).updates())) {
        exchange.require(Role.ADMIN, namespace(vars));
      }
    } else if (path.equals(ResourcePaths.V1_TRANSACTIONS_COMMIT)) {
      for (UpdateTableRequest change :
          body(exchange, CommitTransactionRequest.class).tableChanges()) {
        Namespace namespace = change.identifier().namespace();
        exchange.require(maintenance(change.updates()) ? Role.ADMIN : route.role(), namespace);
      }
    }
  }

  /** Whether {@code updates} expire snapshots or add a rewrite (a {@code replace} snapshot). */
  private static boolean maintenance(List<MetadataUpdate> updates) {
    return updates.stream()
        .anyMatch(
            update ->
                update instanceof MetadataUpdate.RemoveSnapshots
                    || (update instanceof MetadataUpdate.AddSnapshot add
                        && DataOperations.REPLACE.equals(add.snapshot().operation())));
  }

  /**
   * Runs a mutation under the client's idempotency key, or, when a commit was already made under it
   * (before a lost answer, a restart, or by a racing retry), answers from that commit.
   */
  private void idempotently(Exchange exchange, Route route, Map<String, String> vars, String key)
      throws Exception {
    Optional<IdempotencyRecord> done = catalog.idempotencyRecord(key);
    if (done.isPresent()) {
      replay(exchange, route, vars, done.get());
      return;
    }
    try {
      catalog.withIdempotencyKey(
          key,
          () -> {
            route.handler().handle(exchange, vars);
            return null;
          });
    } catch (IdempotencyKeyUsedException e) {
      replay(exchange, route, vars, e.record());
    }
  }

  /** The answer a mutation gave, rebuilt from what it committed. */
  private void replay(
      Exchange exchange, Route route, Map<String, String> vars, IdempotencyRecord record)
      throws Exception {
    // Read the body as the first try did: answering while the client still sends it resets the
    // connection under the answer, and Jetty closes a connection whose body is left unread.
    exchange.body();
    exchange.header(REPLAY_HEADER, "true");
    String path = route.method().equals("POST") ? route.specPath() : "";
    if (path.equals(ResourcePaths.V1_TABLES)
        || path.equals(ResourcePaths.V1_TABLE_REGISTER)
        || path.equals(ResourcePaths.V1_TABLE)) {
      List<String> locations = record.metadataLocations();
      if (locations.isEmpty()) { // committed nothing of a table: the table as it is
        answerTable(
            exchange,
            200,
            CatalogHandlers.loadTable(catalog, replayedTable(exchange, route, vars)),
            RESTCatalogProperties.SnapshotMode.ALL);
        return;
      }
      String location = locations.get(locations.size() - 1);
      answerTable(
          exchange,
          200,
          LoadTableResponse.builder()
              .withTableMetadata(TableMetadataParser.read(catalog.io(), location))
              .build(),
          RESTCatalogProperties.SnapshotMode.ALL);
    } else if (path.equals(ResourcePaths.V1_NAMESPACES)) {
      Namespace namespace = body(exchange, CreateNamespaceRequest.class).namespace();
      exchange.json(
          200,
          IcebergJson.write(
              CreateNamespaceResponse.builder()
                  .withNamespace(namespace)
                  .setProperties(catalog.loadNamespaceMetadata(namespace))
                  .build()));
    } else if (path.equals(ResourcePaths.V1_NAMESPACE_PROPERTIES)) {
      UpdateNamespacePropertiesRequest request =
          body(exchange, UpdateNamespacePropertiesRequest.class);
      exchange.json(
          200,
          IcebergJson.write(
              UpdateNamespacePropertiesResponse.builder()
                  .addUpdated(request.updates().keySet())
                  .addRemoved(request.removals())
                  .build()));
    } else {
      exchange.empty(204);
    }
  }

  private TableIdentifier replayedTable(Exchange exchange, Route route, Map<String, String> vars)
      throws InterruptedException {
    if (vars.containsKey("table")) {
      return table(vars);
    }
    String name =
        route.template().endsWith("/register")
            ? body(exchange, RegisterTableRequest.class).name()
            : body(exchange, CreateTableRequest.class).name();
    return TableIdentifier.of(namespace(vars), name);
  }

  /** The endpoints served, as {@code /v1/config} advertises them. */
  List<Endpoint> endpoints() {
    return routes.stream()
        .filter(route -> !route.template().equals("/v1/config"))
        .map(route -> Endpoint.create(route.method(), route.specPath())) // as the spec names it
        .toList();
  }

  /**
   * The properties among {@code properties} that configure file IO: those {@link
   * CatalogConnection#isFileIoProperty} names. Nothing else (the token, skade's own {@code
   * catalog.*}, the expiry settings) leaves the server.
   */
  static Map<String, String> fileIoProperties(Map<String, String> properties) {
    Map<String, String> io = new LinkedHashMap<>(); // Iceberg's builder probes it with a null key
    new TreeMap<>(properties)
        .forEach(
            (key, value) -> {
              if (CatalogConnection.isFileIoProperty(key)) {
                io.put(key, value);
              }
            });
    return Collections.unmodifiableMap(io);
  }

  /**
   * The server's configuration, as Iceberg's clients merge it into theirs: the warehouse's file-IO
   * properties as defaults (so a client given only {@code uri} and {@code token} reads and writes
   * the files the server does; a client's own setting wins), skade's warehouse as an override.
   */
  private void config(Exchange exchange, Map<String, String> vars) {
    exchange.json(
        200,
        IcebergJson.write(
            ConfigResponse.builder()
                .withDefaults(fileIoDefaults)
                .withOverride(CatalogConnection.SERVER_WAREHOUSE, catalog.warehouse())
                .withEndpoints(endpoints())
                .withIdempotencyKeyLifetime(IDEMPOTENCY_LIFETIME.toString())
                .build()));
  }

  private void listNamespaces(Exchange exchange, Map<String, String> vars) {
    String parent = exchange.query("parent");
    Namespace namespace =
        parent == null || parent.isEmpty()
            ? Namespace.empty()
            : RESTUtil.namespaceFromQueryParam(parent);
    String pageSize = exchange.query("pageSize");
    ListNamespacesResponse all =
        pageSize == null
            ? CatalogHandlers.listNamespaces(catalog, namespace)
            : CatalogHandlers.listNamespaces(
                catalog, namespace, exchange.query("pageToken"), pageSize);
    Caller caller = exchange.caller();
    exchange.json(
        200,
        IcebergJson.write(
            ListNamespacesResponse.builder()
                .addAll(all.namespaces().stream().filter(caller::sees).toList())
                .nextPageToken(all.nextPageToken())
                .build()));
  }

  private void listTables(Exchange exchange, Map<String, String> vars) {
    Namespace namespace = namespace(vars);
    String pageSize = exchange.query("pageSize");
    exchange.json(
        200,
        IcebergJson.write(
            pageSize == null
                ? CatalogHandlers.listTables(catalog, namespace)
                : CatalogHandlers.listTables(
                    catalog, namespace, exchange.query("pageToken"), pageSize)));
  }

  private void createTable(Exchange exchange, Map<String, String> vars) throws Exception {
    CreateTableRequest request = body(exchange, CreateTableRequest.class);
    request.validate();
    Namespace namespace = namespace(vars);
    if (request.stageCreate()) {
      answerTable(
          exchange,
          200,
          CatalogHandlers.stageTableCreate(catalog, namespace, request),
          RESTCatalogProperties.SnapshotMode.ALL);
    } else {
      answerTable(
          exchange,
          200,
          timedCommit(() -> CatalogHandlers.createTable(catalog, namespace, request)),
          RESTCatalogProperties.SnapshotMode.ALL);
    }
  }

  private void loadTable(Exchange exchange, Map<String, String> vars) {
    String snapshots = exchange.query(RESTCatalogProperties.SNAPSHOTS_QUERY_PARAMETER);
    RESTCatalogProperties.SnapshotMode mode =
        snapshots == null ? RESTCatalogProperties.SnapshotMode.ALL : snapshotMode(snapshots);
    LoadTableResponse response = CatalogHandlers.loadTable(catalog, table(vars), mode);
    String etag = etag(response, mode);
    String ifNoneMatch = exchange.header("If-None-Match");
    if (ifNoneMatch != null && unquote(ifNoneMatch).equals(etag)) {
      exchange.header("ETag", quote(etag));
      exchange.empty(304);
      return;
    }
    answerTable(exchange, 200, response, mode);
  }

  private static RESTCatalogProperties.SnapshotMode snapshotMode(String value) {
    try {
      return RESTCatalogProperties.SnapshotMode.valueOf(value.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "query parameter 'snapshots' = '" + value + "'; accepted values are 'all' and 'refs'", e);
    }
  }

  private void updateTable(Exchange exchange, Map<String, String> vars) throws Exception {
    UpdateTableRequest request = body(exchange, UpdateTableRequest.class);
    TableIdentifier table = table(vars);
    answerTable(
        exchange,
        200,
        timedCommit(() -> CatalogHandlers.updateTable(catalog, table, request)),
        RESTCatalogProperties.SnapshotMode.ALL);
  }

  private void commitTransaction(Exchange exchange, Map<String, String> vars) throws Exception {
    CommitTransactionRequest request = body(exchange, CommitTransactionRequest.class);
    request.validate();
    List<TableCommit> changes =
        request.tableChanges().stream()
            .<TableCommit>map(
                change -> new Change(change.identifier(), change.requirements(), change.updates()))
            .toList();
    timedCommit(
        () -> {
          catalog.commitTransaction(changes);
          return null;
        });
    exchange.empty(204);
  }

  private <T> T timedCommit(java.util.function.Supplier<T> commit) {
    Timer.Sample sample = Timer.start();
    T result = commit.get();
    sample.stop(metrics.commitLatency());
    return result;
  }

  private static void answerTable(
      Exchange exchange,
      int status,
      LoadTableResponse response,
      RESTCatalogProperties.SnapshotMode mode) {
    if (response.metadataLocation() != null) { // a staged create has none yet
      exchange.header("ETag", quote(etag(response, mode)));
    }
    exchange.json(status, IcebergJson.write(response));
  }

  /** The table's version as a client caches it: its metadata file and the snapshot mode. */
  private static String etag(LoadTableResponse response, RESTCatalogProperties.SnapshotMode mode) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256")
              .digest(
                  (response.metadataLocation()
                          + ",snapshots="
                          + mode.name().toLowerCase(Locale.ROOT))
                      .getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java has SHA-256", e);
    }
  }

  private static String quote(String etag) {
    return "\"" + etag + "\"";
  }

  private static String unquote(String value) {
    String trimmed = value.trim();
    if (trimmed.startsWith("W/")) {
      trimmed = trimmed.substring(2);
    }
    return trimmed.length() >= 2 && trimmed.startsWith("\"") && trimmed.endsWith("\"")
        ? trimmed.substring(1, trimmed.length() - 1)
        : trimmed;
  }

  private static <T> T body(Exchange exchange, Class<T> type) throws InterruptedException {
    return exchange.body(type, text -> IcebergJson.read(text, type));
  }

  private static Namespace namespace(Map<String, String> vars) {
    return RESTUtil.decodeNamespace(vars.get("namespace"));
  }

  private static TableIdentifier table(Map<String, String> vars) {
    return TableIdentifier.of(namespace(vars), RESTUtil.decodeString(vars.get("table")));
  }
}
