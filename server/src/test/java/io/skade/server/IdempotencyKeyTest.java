package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.remote.SkadeServerClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code Idempotency-Key} on mutations: a request whose answer the client never got (the commit
 * made, the answer dropped) retried with its key commits once, and gets the first commit's answer;
 * also after the server restarted, and when two retries race. The key is stored in the commit's own
 * synced batch, so no restart can separate them.
 */
class IdempotencyKeyTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final String UPDATE = "/v1/namespaces/shop/tables/orders";

  @TempDir Path root;
  private ServerFixture fixture;

  @BeforeEach
  void start() throws Exception {
    fixture = new ServerFixture(root);
    RESTCatalog rest = fixture.rest();
    rest.createNamespace(Namespace.of("shop"));
    rest.createTable(ORDERS, new Schema(Types.NestedField.required(1, "id", Types.LongType.get())));
  }

  @AfterEach
  void stop() throws Exception {
    fixture.close();
  }

  private ServerFixture.Answer update(String key, String value) {
    String body =
        "{\"requirements\":[],\"updates\":[{\"action\":\"set-properties\","
            + "\"updates\":{\"k\":\""
            + value
            + "\"}}]}";
    return fixture.call("POST", UPDATE, body, ServerFixture.TOKEN, Map.of("Idempotency-Key", key));
  }

  private static String metadataLocation(ServerFixture.Answer answer) throws Exception {
    assertThat(answer.status()).as(answer.body()).isEqualTo(200);
    return JSON.readTree(answer.body()).path("metadata-location").asText();
  }

  private long commitSeq() {
    return fixture.server.catalog().commitSeq();
  }

  @Test
  void configAdvertisesTheKeysLifetime() throws Exception {
    JsonNode config = JSON.readTree(fixture.call("GET", "/v1/config", null).body());
    assertThat(config.path("idempotency-key-lifetime").asText()).isEqualTo("PT30M");
  }

  @Test
  void aCommitWhoseAnswerWasLostRetriedWithItsKeyCommitsOnceAlsoAcrossARestart() throws Exception {
    String key = UUID.randomUUID().toString();
    long before = commitSeq();
    String lost = metadataLocation(update(key, "first")); // committed; the client never saw it
    assertThat(commitSeq()).isEqualTo(before + 1);

    ServerFixture.Answer retried = update(key, "first");
    assertThat(metadataLocation(retried)).isEqualTo(lost);
    assertThat(retried.header(IcebergRoutes.REPLAY_HEADER)).isEqualTo("true");
    assertThat(commitSeq()).as("commit_seq after the retry").isEqualTo(before + 1);

    fixture.restart();
    ServerFixture.Answer afterRestart = update(key, "first");
    assertThat(metadataLocation(afterRestart)).isEqualTo(lost);
    assertThat(commitSeq()).as("commit_seq after a retry past a restart").isEqualTo(before + 1);
    assertThat(fixture.server.catalog().loadTable(ORDERS).properties()).containsEntry("k", "first");

    // Another key is another request.
    assertThat(metadataLocation(update(UUID.randomUUID().toString(), "second"))).isNotEqualTo(lost);
    assertThat(commitSeq()).isEqualTo(before + 2);
  }

  @Test
  void twoRetriesOfOneRequestRacingCommitOnce() throws Exception {
    for (int round = 0; round < 5; round++) {
      String key = UUID.randomUUID().toString();
      long before = commitSeq();
      CyclicBarrier together = new CyclicBarrier(2);
      List<CompletableFuture<ServerFixture.Answer>> tries =
          List.of(1, 2).stream()
              .map(
                  i ->
                      CompletableFuture.supplyAsync(
                          () -> {
                            await(together);
                            return update(key, "race");
                          }))
              .toList();
      List<String> locations =
          tries.stream()
              .map(CompletableFuture::join)
              .map(
                  answer -> {
                    try {
                      return metadataLocation(answer);
                    } catch (Exception e) {
                      throw new AssertionError(e);
                    }
                  })
              .toList();
      assertThat(locations.get(0)).isEqualTo(locations.get(1));
      assertThat(commitSeq())
          .as("commit_seq after two racing tries of one request")
          .isEqualTo(before + 1);
    }
  }

  private static void await(CyclicBarrier barrier) {
    try {
      barrier.await();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aMultiTableCommitAndADropRetriedWithTheirKeysHappenOnce() throws Exception {
    // A body the client is still sending when a replay could answer (it must read it first).
    String body =
        "{\"table-changes\":[{\"identifier\":{\"namespace\":[\"shop\"],\"name\":"
            + "\"orders\"},\"requirements\":[],\"updates\":[{\"action\":\"set-properties\","
            + "\"updates\":{\"t\":\""
            + "1".repeat(300_000)
            + "\"}}]}]}";
    String key = UUID.randomUUID().toString();
    long before = commitSeq();
    for (int i = 0; i < 5; i++) {
      assertThat(
              fixture
                  .call(
                      "POST",
                      "/v1/transactions/commit",
                      body,
                      ServerFixture.TOKEN,
                      Map.of("Idempotency-Key", key))
                  .status())
          .isEqualTo(204);
    }
    assertThat(commitSeq()).isEqualTo(before + 1);

    Table orders = fixture.server.catalog().loadTable(ORDERS);
    SkadeServerClient client =
        new SkadeServerClient(fixture.server.uri(), ServerFixture.TOKEN, Duration.ofSeconds(5));
    client.storeConsumer(
        "c1", new ConsumerCursor(ORDERS, orders.uuid().toString(), ConsumerCursor.NO_SNAPSHOT, 1));
    String dropKey = UUID.randomUUID().toString();
    for (int i = 0; i < 2; i++) {
      assertThat(
              fixture
                  .call(
                      "DELETE",
                      "/skade/v1/consumers/c1",
                      null,
                      ServerFixture.TOKEN,
                      Map.of("Idempotency-Key", dropKey))
                  .status())
          .as("drop try %d", i)
          .isEqualTo(204);
    }
    assertThat(fixture.call("DELETE", "/skade/v1/consumers/c1", null).status())
        .as("a drop without the key, of a consumer gone")
        .isEqualTo(404);

    String tableKey = UUID.randomUUID().toString();
    long beforeDrop = commitSeq();
    for (int i = 0; i < 2; i++) {
      assertThat(
              fixture
                  .call(
                      "DELETE",
                      UPDATE,
                      null,
                      ServerFixture.TOKEN,
                      Map.of("Idempotency-Key", tableKey))
                  .status())
          .as("drop try %d", i)
          .isEqualTo(204);
    }
    assertThat(commitSeq()).isEqualTo(beforeDrop + 1);
  }
}
