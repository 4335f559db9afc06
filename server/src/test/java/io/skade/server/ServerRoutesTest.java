package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.catalog.remote.SkadeServerClient;
import io.skade.testing.IdRows;
import io.skade.testing.ParquetFiles;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.MetadataUpdateParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's routes over real HTTP: authentication on every route, the REST error model for bad
 * input on every route (and nothing changed by either), ETags, consumers holding expiry back for
 * remote readers, and multi-table commits (all tables or none).
 */
class ServerRoutesTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Schema SCHEMA = IdRows.log("name");
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");

  @TempDir Path root;
  private ServerFixture fixture;
  private RESTCatalog rest;

  @BeforeEach
  void start() throws Exception {
    fixture = new ServerFixture(root);
    rest = fixture.rest();
    // A HashMap: Iceberg's client asks the map whether it holds a null key, which Map.of refuses.
    rest.createNamespace(Namespace.of("shop"), new java.util.HashMap<>(Map.of("owner", "ops")));
    Table orders = rest.createTable(ORDERS, SCHEMA);
    ParquetFiles.append(orders, ServerFixture.rows(1, 2));
  }

  @AfterEach
  void stop() throws Exception {
    fixture.close();
  }

  /**
   * Every route the server has, with a body each would accept, on {@link #ORDERS} (and consumer
   * {@code c1}) of a server set up as {@link #start} does.
   */
  static List<String[]> everyRoute(ServerFixture fixture, RESTCatalog rest) {
    String ns = "{\"namespace\":[\"x\"]}";
    String create =
        "{\"name\":\"t2\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":"
            + "[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}}";
    return List.of(
        new String[] {"GET", "/v1/config", null},
        new String[] {"GET", "/v1/namespaces", null},
        new String[] {"POST", "/v1/namespaces", ns},
        new String[] {"HEAD", "/v1/namespaces/shop", null},
        new String[] {"GET", "/v1/namespaces/shop", null},
        new String[] {"DELETE", "/v1/namespaces/shop", null},
        new String[] {
          "POST",
          "/v1/namespaces/shop/properties",
          "{\"updates\":{\"a\":\"b\"},\"removals\":[\"owner\"]}"
        },
        new String[] {"GET", "/v1/namespaces/shop/tables", null},
        new String[] {"POST", "/v1/namespaces/shop/tables", create},
        new String[] {
          "POST",
          "/v1/namespaces/shop/register",
          "{\"name\":\"t3\",\"metadata-location\":\"" + metadataLocation(fixture) + "\"}"
        },
        new String[] {"HEAD", "/v1/namespaces/shop/tables/orders", null},
        new String[] {"GET", "/v1/namespaces/shop/tables/orders", null},
        new String[] {
          "POST",
          "/v1/namespaces/shop/tables/orders",
          "{\"requirements\":[],\"updates\":[{\"action\":\"set-properties\",\"updates\":"
              + "{\"k\":\"v\"}}]}"
        },
        new String[] {"DELETE", "/v1/namespaces/shop/tables/orders?purgeRequested=true", null},
        new String[] {
          "POST",
          "/v1/tables/rename",
          "{\"source\":{\"namespace\":[\"shop\"],"
              + "\"name\":\"orders\"},\"destination\":{\"namespace\":[\"shop\"],\"name\":\"o2\"}}"
        },
        new String[] {"POST", "/v1/namespaces/shop/tables/orders/metrics", "{}"},
        new String[] {
          "POST",
          "/v1/transactions/commit",
          "{\"table-changes\":[{\"identifier\":"
              + "{\"namespace\":[\"shop\"],\"name\":\"orders\"},\"requirements\":[],\"updates\":"
              + "[{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]}]}"
        },
        new String[] {"GET", "/skade/v1/commits?after=0&wait-ms=0", null},
        new String[] {
          "GET",
          "/skade/v1/commits/of?namespace=shop&table=orders&snapshot-id="
              + rest.loadTable(ORDERS).currentSnapshot().snapshotId(),
          null
        },
        new String[] {
          "GET", "/skade/v1/metadata?location=" + encode(metadataLocation(fixture)), null
        },
        new String[] {
          "GET",
          "/skade/v1/metadata/updates?location="
              + encode(metadataLocation(fixture))
              + "&base="
              + encode(metadataLocation(fixture)),
          null
        },
        new String[] {"GET", "/skade/v1/consumers", null},
        new String[] {"GET", "/skade/v1/consumers/c1", null},
        new String[] {"PUT", "/skade/v1/consumers/c1", cursorJson(rest)},
        new String[] {"DELETE", "/skade/v1/consumers/c1", null},
        new String[] {"GET", "/healthz", null},
        new String[] {"GET", "/metrics", null},
        new String[] {"GET", "/no/such/route", null});
  }

  /** When table metadata was last updated, in its JSON; a replay sets it anew. */
  private static final String UPDATED = "\"last-updated-ms\"\\s*:\\s*\\d+";

  static String encode(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8);
  }

  private String metadataLocation() {
    return metadataLocation(fixture);
  }

  static String metadataLocation(ServerFixture fixture) {
    return ((HasTableOperations) fixture.server.catalog().loadTable(ORDERS))
        .operations()
        .current()
        .metadataFileLocation();
  }

  static String cursorJson(RESTCatalog rest) {
    Table table = rest.loadTable(ORDERS);
    return SkadeProtocol.cursor(
        new ConsumerCursor(
            ORDERS, table.uuid().toString(), table.currentSnapshot().snapshotId(), 1));
  }

  private String state() {
    return state(fixture);
  }

  /** What a request could change: the log, namespaces, tables and consumers. */
  static String state(ServerFixture fixture) {
    var catalog = fixture.server.catalog();
    StringBuilder state = new StringBuilder("commit_seq " + catalog.commitSeq());
    for (Namespace namespace : catalog.listNamespaces()) {
      state.append("; ").append(namespace).append(catalog.loadNamespaceMetadata(namespace));
      for (TableIdentifier table : catalog.listTables(namespace)) {
        state
            .append(" ")
            .append(table)
            .append("@")
            .append(
                ((HasTableOperations) catalog.loadTable(table))
                    .operations()
                    .current()
                    .metadataFileLocation());
      }
    }
    return state.append("; consumers ").append(catalog.consumers()).toString();
  }

  @Test
  void everyRouteAnswers401WithoutOrWithAWrongTokenAndChangesNothing() {
    String before = state();
    List<String[]> routes = everyRoute(fixture, rest);
    List<String> answered = new ArrayList<>();
    for (String[] route : routes) {
      for (String token : new String[] {null, "wrong-token", ""}) {
        ServerFixture.Answer answer = fixture.call(route[0], route[1], route[2], token, Map.of());
        answered.add(route[0] + " " + route[1] + " token=" + token + " → " + answer.status());
        assertThat(answer.status())
            .as("%s %s with token %s", route[0], route[1], token)
            .isEqualTo(401);
        assertThat(answer.header("WWW-Authenticate")).startsWith("Bearer");
        if (!route[0].equals("HEAD")) {
          assertThat(error(answer).path("code").asInt()).isEqualTo(401);
        }
      }
      // A Basic credential carrying the right token is no bearer token either.
      assertThat(
              fixture
                  .call(
                      route[0],
                      route[1],
                      route[2],
                      null,
                      Map.of("Authorization", "Basic " + ServerFixture.TOKEN))
                  .status())
          .isEqualTo(401);
    }
    assertThat(answered).hasSize(routes.size() * 3);
    assertThat(state()).as("the catalog after every unauthorized request").isEqualTo(before);
  }

  @Test
  void badInputOnEveryRouteIsAnsweredWithTheRestErrorModelAndChangesNothing() throws Exception {
    String before = state();
    List<String[]> routes =
        everyRoute(fixture, rest).stream()
            .filter(route -> route[2] != null)
            .toList(); // every route that takes a body
    for (String[] route : routes) {
      for (String body : new String[] {"{not json", "[1,2]", "", "null", "{\"x\":"}) {
        ServerFixture.Answer answer = fixture.call(route[0], route[1], body);
        assertThat(answer.status())
            .as("%s %s with body %s: %s", route[0], route[1], body, answer.body())
            .isEqualTo(400);
        assertThat(error(answer).path("code").asInt()).isEqualTo(answer.status());
        assertThat(error(answer).path("message").asText()).isNotBlank();
      }
    }
    // Announced larger than the limit: refused before the body is read.
    String tooLarge = fixture.rawPostHeadOnly("/v1/namespaces", 17 * 1024 * 1024);
    assertThat(tooLarge)
        .startsWith("HTTP/1.1 413")
        .contains("larger than")
        .contains("\"code\":413");

    expect(404, "GET", "/v1/namespaces/nope", null, "nope");
    expect(404, "GET", "/v1/namespaces/nope/tables", null, "nope");
    expect(404, "GET", "/v1/namespaces/shop/tables/nope", null, "nope");
    expect(404, "DELETE", "/v1/namespaces/shop/tables/nope", null, "nope");
    expect(
        404,
        "POST",
        "/v1/namespaces/shop/tables/nope",
        "{\"requirements\":[]," + "\"updates\":[]}",
        "nope");
    expect(404, "GET", "/skade/v1/consumers/nobody", null, "nobody");
    expect(404, "DELETE", "/skade/v1/consumers/nobody", null, "nobody");
    expect(
        404, "GET", "/skade/v1/commits/of?namespace=shop&table=orders&snapshot-id=42", null, "42");
    expect(400, "GET", "/skade/v1/commits?after=-1", null, "'after'");
    expect(400, "GET", "/skade/v1/commits?after=abc", null, "'after'");
    expect(400, "GET", "/skade/v1/commits?after=999999", null, "beyond");
    expect(400, "GET", "/skade/v1/commits?limit=100001", null, "'limit'");
    expect(400, "GET", "/skade/v1/commits?wait-ms=600000", null, "'wait-ms'");
    expect(400, "GET", "/skade/v1/commits/of?namespace=shop", null, "required");
    expect(400, "GET", "/skade/v1/consumers?namespace=shop", null, "together");
    expect(400, "PUT", "/skade/v1/consumers/c1", "{\"namespace\":[\"shop\"]}", "'table'");
    expect(400, "GET", "/v1/namespaces/shop/tables/orders?snapshots=some", null, "snapshots");
    expect(400, "GET", "/v1/no-such-route", null, "no route");
    expect(406, "POST", "/skade/v1/commits", "{}", "use GET");
    expect(406, "PATCH", "/skade/v1/consumers/c1", "{}", "use GET, PUT or DELETE");
    assertThat(state()).as("the catalog after every bad request").isEqualTo(before);
  }

  private void expect(int status, String method, String path, String body, String message) {
    ServerFixture.Answer answer = fixture.call(method, path, body);
    assertThat(answer.status()).as("%s %s: %s", method, path, answer.body()).isEqualTo(status);
    assertThat(error(answer).path("code").asInt()).isEqualTo(status);
    assertThat(error(answer).path("message").asText()).contains(message);
  }

  static JsonNode error(ServerFixture.Answer answer) {
    try {
      JsonNode error = JSON.readTree(answer.body()).path("error");
      assertThat(error.path("type").asText())
          .as("the error's type in %s", answer.body())
          .isNotBlank();
      return error;
    } catch (java.io.IOException e) {
      throw new AssertionError("not the REST error model: " + answer.body(), e);
    }
  }

  @Test
  void aClientHoldingACommitsBaseIsServedTheUpdatesThatRebuildIt() throws Exception {
    String base = metadataLocation();
    ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(3));
    String location = metadataLocation();
    String path =
        "/skade/v1/metadata/updates?location=" + encode(location) + "&base=" + encode(base);

    ServerFixture.Answer answer = fixture.call("GET", path, null);
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    List<MetadataUpdate> updates = new ArrayList<>();
    JSON.readTree(answer.body())
        .get("updates")
        .forEach(update -> updates.add(MetadataUpdateParser.fromJson(update)));
    FileIO io = fixture.server.catalog().io();
    TableMetadata rebuilt =
        CommittedMetadata.replay(TableMetadataParser.read(io, base), updates, location);
    TableMetadata parsed = TableMetadataParser.read(io, location);
    assertThat(rebuilt.snapshots()).hasSize(2);
    assertThat(TableMetadataParser.toJson(rebuilt).replaceAll(UPDATED, ""))
        .isEqualTo(TableMetadataParser.toJson(parsed).replaceAll(UPDATED, ""));

    expect(
        404,
        "GET",
        "/skade/v1/metadata/updates?location=" + encode(location) + "&base=" + encode(location),
        null,
        "read the whole metadata file");
    expect(
        404,
        "GET",
        "/skade/v1/metadata/updates?location=" + encode(base) + "&base=" + encode(base),
        null,
        "read the whole");
    expect(400, "GET", "/skade/v1/metadata/updates?location=" + encode(location), null, "'base'");
  }

  @Test
  void tableLoadsCarryAnETagAndAre304WhileTheTableIsUnchanged() throws Exception {
    String path = "/v1/namespaces/shop/tables/orders";
    ServerFixture.Answer first = fixture.call("GET", path, null);
    String etag = first.header("ETag");
    assertThat(first.status()).isEqualTo(200);
    assertThat(etag).startsWith("\"").endsWith("\"");

    ServerFixture.Answer unchanged =
        fixture.call("GET", path, null, ServerFixture.TOKEN, Map.of("If-None-Match", etag));
    assertThat(unchanged.status()).isEqualTo(304);
    assertThat(unchanged.body()).isEmpty();

    ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(3));
    ServerFixture.Answer changed =
        fixture.call("GET", path, null, ServerFixture.TOKEN, Map.of("If-None-Match", etag));
    assertThat(changed.status()).isEqualTo(200);
    assertThat(changed.header("ETag")).isNotEqualTo(etag);
    assertThat(fixture.call("GET", path + "?snapshots=refs", null).header("ETag"))
        .as("another snapshot mode is another version")
        .isNotEqualTo(changed.header("ETag"));
  }

  @Test
  void metricsCountCommitsAndTimeRequestsByRoute() throws Exception {
    ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(3));
    await().atMost(Duration.ofSeconds(10)).until(() -> metric("skade_commits_total") >= 3);
    String metrics = fixture.call("GET", "/metrics", null).body();
    assertThat(metrics)
        .contains("skade_commit_latency_seconds_count")
        .contains("skade_feed_waiters")
        .contains(
            "skade_http_requests_seconds_count{method=\"POST\","
                + "route=\"POST /v1/namespaces/{namespace}/tables/{table}\",status=\"200\"}");
    assertThat(healthz().path("commit-seq").asLong())
        .isEqualTo(fixture.server.catalog().commitSeq());
  }

  private double metric(String name) {
    return fixture
        .call("GET", "/metrics", null)
        .body()
        .lines()
        .filter(line -> line.startsWith(name + " ") || line.startsWith(name + "{"))
        .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
        .sum();
  }

  private JsonNode healthz() throws Exception {
    ServerFixture.Answer answer = fixture.call("GET", "/healthz", null);
    assertThat(answer.status()).isEqualTo(200);
    return JSON.readTree(answer.body());
  }

  @Test
  void configAdvertisesEveryServedEndpoint() throws Exception {
    JsonNode config = JSON.readTree(fixture.call("GET", "/v1/config", null).body());
    List<String> endpoints = new ArrayList<>();
    config.path("endpoints").forEach(endpoint -> endpoints.add(endpoint.asText()));
    assertThat(endpoints)
        .contains(
            "POST /v1/{prefix}/transactions/commit",
            "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
            "POST /v1/{prefix}/namespaces/{namespace}/register",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics");
  }

  @Test
  void aTableLockTakenThroughTheServerIsTheCatalogsOne() {
    SkadeServerClient client =
        new SkadeServerClient(fixture.server.uri(), ServerFixture.TOKEN, Duration.ofSeconds(5));
    SkadeCatalog owner = fixture.server.catalog();
    String lock = MaintenanceLock.MAINTENANCE;
    Duration hour = Duration.ofHours(1);

    assertThat(client.tryLock(ORDERS, lock, "remote job", hour)).isTrue();
    assertThat(client.tryLock(ORDERS, lock, "remote job", hour)).as("a retry").isTrue();
    assertThat(owner.tryLock(ORDERS, lock, "local job", hour)).isFalse();
    assertThat(owner.lock(ORDERS, lock)).map(MaintenanceLock::holder).hasValue("remote job");
    assertThat(client.lock(ORDERS, lock)).isEqualTo(owner.lock(ORDERS, lock));
    assertThat(client.unlock(ORDERS, lock, "local job")).as("not its holder").isFalse();
    assertThat(client.unlock(ORDERS, lock, "remote job")).isTrue();
    assertThat(client.lock(ORDERS, lock)).isEmpty();
    assertThat(owner.tryLock(ORDERS, lock, "local job", hour)).isTrue();
    assertThat(client.tryLock(ORDERS, lock, "remote job", hour)).isFalse();

    ServerFixture.Answer missing =
        fixture.call("GET", SkadeProtocol.LOCKS + "?namespace=shop" + "&table=orders", null);
    assertThat(missing.status()).isEqualTo(400);
    assertThat(missing.body()).contains("query parameter 'name' is missing");
  }

  @Test
  void aConsumerStoredThroughTheServerHoldsExpiryBackUntilDropped() throws Exception {
    Table orders = rest.loadTable(ORDERS);
    long held = orders.currentSnapshot().snapshotId();
    ParquetFiles.append(orders, ServerFixture.rows(3));
    ParquetFiles.append(orders, ServerFixture.rows(4));
    SkadeServerClient client =
        new SkadeServerClient(fixture.server.uri(), ServerFixture.TOKEN, Duration.ofSeconds(5));
    StoredConsumer stored =
        client.storeConsumer(
            "remote-reader", new ConsumerCursor(ORDERS, orders.uuid().toString(), held, 2));
    assertThat(client.consumer("remote-reader")).contains(stored);
    assertThat(client.consumers(ORDERS)).containsExactly(stored);
    assertThat(client.consumers(TableIdentifier.of("shop", "other"))).isEmpty();

    long now = System.currentTimeMillis() + 1;
    assertThatThrownBy(
            () ->
                rest.loadTable(ORDERS)
                    .expireSnapshots()
                    .expireOlderThan(now)
                    .retainLast(1)
                    .commit())
        .as("expiry through REST of a snapshot a remote consumer needs")
        .isInstanceOf(BadRequestException.class)
        .hasMessageContaining("remote-reader");
    assertThat(rest.loadTable(ORDERS).snapshot(held)).isNotNull();

    assertThat(client.dropConsumer("remote-reader")).isTrue();
    assertThat(client.dropConsumer("remote-reader")).isFalse();
    rest.loadTable(ORDERS).expireSnapshots().expireOlderThan(now).retainLast(1).commit();
    assertThat(rest.loadTable(ORDERS).snapshot(held)).isNull();
  }

  @Test
  void aMultiTableCommitWithOneConflictingTableAdvancesNoTable() throws Exception {
    TableIdentifier returns = TableIdentifier.of("shop", "returns");
    rest.createTable(returns, SCHEMA);
    // returns' commit is prepared, then returns moves on by another client: the commit is stale.
    TableCommit returnsCommit =
        appendCommit(returns, rest.loadTable(returns), ServerFixture.rows(6));
    ParquetFiles.append(fixture.rest().loadTable(returns), ServerFixture.rows(9));
    long seq = fixture.server.catalog().commitSeq();
    String ordersBefore = metadataLocation();
    TableCommit ordersCommit = appendCommit(ORDERS, rest.loadTable(ORDERS), ServerFixture.rows(5));
    assertThatThrownBy(() -> rest.commitTransaction(List.of(ordersCommit, returnsCommit)))
        .isInstanceOf(CommitFailedException.class);
    assertThat(fixture.server.catalog().commitSeq())
        .as("commit_seq after the refused commit")
        .isEqualTo(seq);
    assertThat(metadataLocation()).as("orders after the refused commit").isEqualTo(ordersBefore);

    TableCommit both = appendCommit(returns, rest.loadTable(returns), ServerFixture.rows(7));
    rest.commitTransaction(
        List.of(appendCommit(ORDERS, rest.loadTable(ORDERS), ServerFixture.rows(8)), both));
    var commits = fixture.server.catalog().commitsSince(seq, 10);
    assertThat(commits).hasSize(2);
    assertThat(commits.get(1).commitSeq()).isEqualTo(commits.get(0).commitSeq() + 1);
    assertThat(commits).allSatisfy(commit -> assertThat(commit.transactionSize()).isEqualTo(2));
  }

  private static TableCommit appendCommit(TableIdentifier id, Table table, List<Record> rows)
      throws Exception {
    Transaction transaction = table.newTransaction();
    transaction.newAppend().appendFile(ParquetFiles.write(table, rows)).commit();
    TableMetadata base = ((BaseTransaction) transaction).startMetadata();
    TableMetadata updated = ((BaseTransaction) transaction).currentMetadata();
    return TableCommit.create(id, base, updated);
  }
}
