package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import io.skade.testing.IdRows;
import io.skade.testing.ParquetFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tokens with roles over real HTTP: every route with a {@code read} token, a {@code write} token
 * and tokens limited to another namespace, allowed or {@code 403} naming what is needed, and
 * nothing changed by a refusal; consumers belong to the token that stores them; a token limited to
 * some namespaces sees only their commits on the feed, and its feed still moves on.
 */
class TokenRolesTest {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final TableIdentifier PARTS = TableIdentifier.of("elsewhere", "parts");

  @TempDir Path root;
  private ServerFixture fixture;
  private RESTCatalog rest;

  @BeforeEach
  void start() throws Exception {
    fixture = new ServerFixture(root);
    rest = fixture.rest();
    rest.createNamespace(Namespace.of("shop"), new HashMap<>(Map.of("owner", "ops")));
    Table orders = rest.createTable(ORDERS, IdRows.log("name"));
    ParquetFiles.append(orders, ServerFixture.rows(1, 2));
    // c1 is stored in process: it has no owner, so any token that may read shop may take it.
    fixture
        .server
        .catalog()
        .storeConsumer(
            "c1",
            new ConsumerCursor(
                ORDERS, orders.uuid().toString(), orders.currentSnapshot().snapshotId(), 1));
  }

  @AfterEach
  void stop() throws Exception {
    fixture.close();
  }

  /** The role a route needs, as the docs' table gives it. */
  private static String roleNeeded(String method, String path) {
    String route = method + " " + path.replaceAll("\\?.*", "");
    if (route.equals("DELETE /v1/namespaces/shop")
        || route.equals("DELETE /v1/namespaces/shop/tables/orders")
        || route.equals("POST /v1/tables/rename")) {
      return "admin";
    }
    if (method.equals("POST") && !path.endsWith("/metrics") || method.equals("DELETE")) {
      return route.startsWith("DELETE /skade/v1/consumers") ? "read" : "write";
    }
    return "read";
  }

  /** Whether a route acts on namespace shop (or, for creating namespace x, on x). */
  private static boolean namespaced(String method, String path) {
    return path.contains("shop")
        || path.startsWith("/v1/tables/")
        || path.startsWith("/v1/transactions/")
        || path.startsWith("/skade/v1/metadata")
        || path.startsWith("/skade/v1/consumers/")
        || method.equals("POST") && path.equals("/v1/namespaces");
  }

  @Test
  void everyRouteRefusesATokenWithoutTheRoleOrTheNamespaceAndChangesNothing() {
    List<String[]> routes = ServerRoutesTest.everyRoute(fixture, rest);
    String before = ServerRoutesTest.state(fixture);
    List<String> refused = new ArrayList<>();
    Map<String, String> roles = Map.of(ServerFixture.READER, "read", ServerFixture.WRITER, "write");
    for (String[] route : routes) {
      String needed = roleNeeded(route[0], route[1]);
      for (String token : List.of(ServerFixture.READER, ServerFixture.WRITER)) {
        if (rank(roles.get(token)) < rank(needed)) {
          ServerFixture.Answer answer = fixture.call(route[0], route[1], route[2], token, Map.of());
          refused.add(route[0] + " " + route[1] + " " + token);
          assertThat(answer.status()).as("%s %s by %s", route[0], route[1], token).isEqualTo(403);
          if (!route[0].equals("HEAD")) {
            assertThat(ServerRoutesTest.error(answer).path("message").asText())
                .contains("has role " + roles.get(token))
                .contains("needs role " + needed);
          }
        }
      }
      if (namespaced(route[0], route[1])) {
        for (String token : ServerFixture.ELSEWHERE) {
          ServerFixture.Answer answer = fixture.call(route[0], route[1], route[2], token, Map.of());
          refused.add(route[0] + " " + route[1] + " " + token);
          assertThat(answer.status())
              .as("%s %s by %s: %s", route[0], route[1], token, answer.body())
              .isEqualTo(403);
          if (!route[0].equals("HEAD")) {
            assertThat(ServerRoutesTest.error(answer).path("message").asText())
                .containsAnyOf("limited to namespaces [elsewhere", "needs role");
          }
        }
      }
    }
    // Each limited token on the 21 routes that touch a namespace, the reader on the 9 routes that
    // write or administer, the writer on the 3 that administer.
    assertThat(refused).hasSize(3 * 21 + 9 + 3);
    assertThat(ServerRoutesTest.state(fixture))
        .as("the catalog after every refused request")
        .isEqualTo(before);
  }

  @Test
  void aTokenWithTheRoleGetsPastTheCheckOnEveryRoute() {
    List<String[]> routes = ServerRoutesTest.everyRoute(fixture, rest);
    Map<String, String> roles = Map.of(ServerFixture.READER, "read", ServerFixture.WRITER, "write");
    int allowed = 0;
    for (String[] route : routes) {
      String needed = roleNeeded(route[0], route[1]);
      for (String token : List.of(ServerFixture.READER, ServerFixture.WRITER)) {
        if (rank(roles.get(token)) >= rank(needed)) {
          // A broken body where there is one: past the role check, it is refused as bad input.
          ServerFixture.Answer answer =
              fixture.call(
                  route[0], route[1], route[2] == null ? null : "{\"x\":", token, Map.of());
          assertThat(answer.status())
              .as("%s %s by %s: %s", route[0], route[1], token, answer.body())
              .isNotIn(401, 403);
          if (route[2] != null) {
            assertThat(answer.status()).as("%s %s by %s", route[0], route[1], token).isEqualTo(400);
          }
          allowed++;
        }
      }
      if (!namespaced(route[0], route[1])) { // the routes of no namespace: any role may call them
        for (String token : ServerFixture.ELSEWHERE) {
          assertThat(fixture.call(route[0], route[1], route[2], token, Map.of()).status())
              .as("%s %s by %s", route[0], route[1], token)
              .isNotIn(401, 403);
        }
      }
    }
    assertThat(allowed).isGreaterThan(routes.size());
  }

  @Test
  void aCommitThatExpiresSnapshotsOrRewritesFilesIsAnAdminsMaintenance() throws Exception {
    long first = rest.loadTable(ORDERS).currentSnapshot().snapshotId();
    fixture.server.catalog().dropConsumer("c1"); // it holds the first snapshot back
    ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(3));
    String before = ServerRoutesTest.state(fixture);
    RESTCatalog writer = fixture.rest(ServerFixture.WRITER);

    assertThatThrownBy(
            () -> writer.loadTable(ORDERS).expireSnapshots().expireSnapshotId(first).commit())
        .isInstanceOf(ForbiddenException.class)
        .hasMessageContaining("needs role admin");
    assertThat(ServerRoutesTest.state(fixture)).isEqualTo(before);

    fixture
        .rest(ServerFixture.TOKEN)
        .loadTable(ORDERS)
        .expireSnapshots()
        .expireSnapshotId(first)
        .commit();
    assertThat(rest.loadTable(ORDERS).snapshot(first)).isNull();
    // An ordinary commit is a writer's.
    ParquetFiles.append(writer.loadTable(ORDERS), ServerFixture.rows(4));
    assertThat(rest.loadTable(ORDERS).currentSnapshot().summary())
        .containsEntry("added-records", "1");
  }

  @Test
  void aConsumerBelongsToTheTokenThatStoresIt() {
    String cursor = ServerRoutesTest.cursorJson(rest);
    assertThat(
            fixture
                .call("PUT", "/skade/v1/consumers/job-a", cursor, ServerFixture.READER, Map.of())
                .status())
        .isEqualTo(200);
    assertThat(fixture.server.catalog().consumer("job-a").orElseThrow().owner())
        .isEqualTo("reader");

    ServerFixture.Answer taken =
        fixture.call("PUT", "/skade/v1/consumers/job-a", cursor, ServerFixture.WRITER, Map.of());
    assertThat(taken.status()).isEqualTo(403);
    assertThat(ServerRoutesTest.error(taken).path("message").asText())
        .contains("belongs to 'reader'");
    ServerFixture.Answer dropped =
        fixture.call("DELETE", "/skade/v1/consumers/job-a", null, ServerFixture.WRITER, Map.of());
    assertThat(dropped.status()).isEqualTo(403);
    assertThat(fixture.server.catalog().consumer("job-a")).isPresent();

    // Its owner stores it again and drops it; an admin may drop anyone's and keeps the owner.
    assertThat(
            fixture
                .call("PUT", "/skade/v1/consumers/job-a", cursor, ServerFixture.READER, Map.of())
                .status())
        .isEqualTo(200);
    assertThat(
            fixture
                .call("PUT", "/skade/v1/consumers/job-a", cursor, ServerFixture.TOKEN, Map.of())
                .status())
        .isEqualTo(200);
    assertThat(fixture.server.catalog().consumer("job-a").orElseThrow().owner())
        .isEqualTo("reader");
    assertThat(
            fixture
                .call("DELETE", "/skade/v1/consumers/job-a", null, ServerFixture.READER, Map.of())
                .status())
        .isEqualTo(204);
    assertThat(fixture.server.catalog().consumer("job-a")).isEmpty();

    // Tokens limited to another namespace see none of shop's consumers.
    String listed =
        fixture.call("GET", "/skade/v1/consumers", null, "elsewhere-reader", Map.of()).body();
    assertThat(SkadeProtocol.consumers(listed)).isEmpty();
    assertThat(
            SkadeProtocol.consumers(
                fixture
                    .call("GET", "/skade/v1/consumers", null, ServerFixture.READER, Map.of())
                    .body()))
        .hasSize(1);
  }

  @Test
  void aTokenLimitedToANamespaceSeesItsCommitsOnTheFeedAndItsFeedMovesOn() throws Exception {
    rest.createNamespace(Namespace.of("elsewhere"));
    Table parts = rest.createTable(PARTS, IdRows.log("name"));
    ParquetFiles.append(parts, ServerFixture.rows(10));
    ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(5));
    long newest = fixture.server.catalog().commitSeq();

    List<String> everyTable = tablesOf(page(ServerFixture.TOKEN, 0));
    assertThat(everyTable).contains("shop.orders", "elsewhere.parts");
    CommitPage limited = page("elsewhere-reader", 0);
    assertThat(tablesOf(limited)).isNotEmpty().containsOnly("elsewhere.parts");
    assertThat(limited.coveredCommitSeq()).isEqualTo(newest);

    // Iceberg's client, listing namespaces with that token, sees its own only.
    assertThat(fixture.rest("elsewhere-reader").listNamespaces())
        .containsExactly(Namespace.of("elsewhere"));
    assertThat(fixture.rest("elsewhere-reader").loadTable(PARTS).currentSnapshot()).isNotNull();
    assertThatThrownBy(() -> fixture.rest("elsewhere-reader").loadTable(ORDERS))
        .isInstanceOf(ForbiddenException.class)
        .hasMessageContaining("limited to namespaces [elsewhere");
  }

  private CommitPage page(String token, long after) {
    ServerFixture.Answer answer =
        fixture.call(
            "GET", "/skade/v1/commits?after=" + after + "&wait-ms=0", null, token, Map.of());
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    return SkadeProtocol.commitPage(answer.body());
  }

  private static List<String> tablesOf(CommitPage page) {
    return page.commits().stream()
        .map(event -> io.skade.catalog.TableKeys.identifier(event.tableKey()).toString())
        .toList();
  }

  private static int rank(String role) {
    return List.of("read", "write", "admin").indexOf(role);
  }

  @Test
  void aMalformedTokenFileIsRefusedNamingTheLine() throws Exception {
    Path file = root.resolve("bad-tokens");
    for (String[] bad :
        new String[][] {
          {"t1 role=owner", "line 1: role 'owner' is unknown; use read, write or admin"},
          {"# c\nt1 colour=red", "line 2: unknown field 'colour=red'"},
          {"t1 namespaces=a,,b", "namespace '' is malformed"},
          {"t1 name=", "field 'name' has no value"},
        }) {
      Files.writeString(file, bad[0]);
      assertThatThrownBy(() -> BearerTokens.read(file))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("--token-file " + file)
          .hasMessageContaining(bad[1]);
    }
  }
}
