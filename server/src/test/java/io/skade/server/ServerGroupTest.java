package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.testing.IdRows;
import io.skade.testing.ParquetFiles;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.curator.test.TestingServer;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server group of three members in this JVM on a real ZooKeeper ({@link TestingServer}): one
 * leads, the standbys follow its log, and when the leader stops another takes over with every
 * commit and continues the same {@code commit_seq}.
 */
class ServerGroupTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");

  @TempDir Path root;
  private TestingServer zookeeper;
  private final List<SkadeServer> servers = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void start() throws Exception {
    zookeeper = new TestingServer(true);
    Files.writeString(root.resolve("tokens"), ServerFixture.TOKEN + "\n");
    Files.createDirectories(root.resolve("warehouse"));
    for (int i = 0; i < 3; i++) {
      servers.add(member("m" + i));
    }
  }

  private SkadeServer member(String id) throws Exception {
    return SkadeServer.start(
        new SkadeServer.Settings(
                root.resolve("warehouse").toString(),
                root.resolve(id),
                "127.0.0.1",
                0,
                root.resolve("tokens"),
                false,
                null,
                null,
                Map.of())
            .inGroup(
                new GroupSettings(
                    "g",
                    zookeeper.getConnectString(),
                    id,
                    Duration.ofSeconds(4),
                    1,
                    Duration.ofSeconds(2),
                    ServerFixture.TOKEN)));
  }

  @AfterEach
  void stop() throws Exception {
    for (SkadeServer server : servers) {
      if (server != null) {
        server.close();
      }
    }
    zookeeper.close();
  }

  private JsonNode health(SkadeServer server) throws Exception {
    HttpResponse<String> answer =
        http.send(
            HttpRequest.newBuilder(server.uri().resolve("/healthz"))
                .header("Authorization", "Bearer " + ServerFixture.TOKEN)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    return JSON.readTree(answer.body());
  }

  private SkadeServer leader() {
    return await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () -> {
              for (SkadeServer server : servers) {
                if (server != null && health(server).path("role").asText().equals("leader")) {
                  return server;
                }
              }
              return null;
            },
            server -> server != null);
  }

  private RESTCatalog rest(URI uri) {
    RESTCatalog client = new RESTCatalog();
    client.initialize(
        "rest", Map.of(CatalogProperties.URI, uri.toString(), "token", ServerFixture.TOKEN));
    return client;
  }

  @Test
  void theStandbysFollowTheLeaderAndOneTakesOverWithEveryCommit() throws Exception {
    SkadeServer first = leader();
    long seq;
    try (RESTCatalog rest = rest(first.uri())) {
      rest.createNamespace(Namespace.of("shop"));
      Table orders = rest.createTable(ORDERS, IdRows.log("name"));
      for (int i = 0; i < 5; i++) {
        ParquetFiles.append(orders, ServerFixture.rows(i));
      }
      seq = first.catalog().commitSeq();
    }
    // Every standby holds every acknowledged commit (at least one at once, all soon).
    for (SkadeServer server : servers) {
      await()
          .atMost(Duration.ofSeconds(20))
          .until(() -> health(server).path("commit-seq").asLong(), s -> s == seq);
    }
    // A standby answers a catalog route with the leader's address.
    SkadeServer standby = servers.stream().filter(s -> s != first).findFirst().orElseThrow();
    HttpResponse<String> misdirected =
        http.send(
            HttpRequest.newBuilder(standby.uri().resolve("/v1/namespaces"))
                .header("Authorization", "Bearer " + ServerFixture.TOKEN)
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(misdirected.statusCode()).isEqualTo(421);
    assertThat(misdirected.headers().firstValue(ServerGroup.LEADER_HEADER))
        .hasValue(first.uri().toString());

    first.close();
    servers.set(servers.indexOf(first), null);
    SkadeServer second = leader();
    assertThat(second).isNotSameAs(first);
    assertThat(second.catalog().commitSeq()).isEqualTo(seq);
    try (RESTCatalog rest = rest(second.uri())) {
      ParquetFiles.append(rest.loadTable(ORDERS), ServerFixture.rows(10));
      assertThat(rest.loadTable(ORDERS).currentSnapshot().summary())
          .containsEntry("total-records", "6");
    }
    assertThat(second.catalog().commitSeq()).isEqualTo(seq + 1);
    assertThat(second.catalog().commitsSince(0, 100))
        .extracting(e -> e.commitSeq())
        .isEqualTo(ServerFixture.sequence(seq + 1));
  }
}
