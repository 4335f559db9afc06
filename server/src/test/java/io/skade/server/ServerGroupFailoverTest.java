package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.remote.RemoteConnection;
import io.skade.testing.IdRows;
import io.skade.testing.ParquetFiles;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.test.TestingServer;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server group of three server JVMs on a real ZooKeeper, with faults injected for real: the
 * leader SIGKILLed during commits ten times, the leader SIGSTOPped until a standby takes over
 * (fencing), a standby's disk deleted. Writers commit through skade's client given every member's
 * address. The group and its ZooKeeper are shared by the tests, which run in order.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ServerGroupFailoverTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Schema SCHEMA = IdRows.log("name");
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");

  @TempDir static Path root;
  private TestingServer zookeeper;
  private ServerGroupProcess group;
  private final List<ServerProcess> members = new ArrayList<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
  private String uris;

  @BeforeAll
  void start() throws Exception {
    zookeeper = new TestingServer(true);
    group =
        new ServerGroupProcess(
            root,
            "g",
            zookeeper.getConnectString(),
            3,
            "--zookeeper-session-timeout",
            "PT3S",
            "--replication-timeout",
            "PT2S");
    members.addAll(group.members());
    uris = group.uri();
    try (RemoteConnection connection = connect(uris)) {
      connection.namespaces().createNamespace(Namespace.of("shop"));
      connection.catalog().createTable(ORDERS, SCHEMA);
    }
  }

  @AfterAll
  void stop() throws Exception {
    group.close();
    zookeeper.close();
  }

  private static RemoteConnection connect(String uri) {
    return RemoteConnection.open(
        uri,
        Map.of(
            CatalogConnection.TOKEN, ServerProcess.TOKEN, CatalogConnection.RETRY_TIMEOUT, "60 s"));
  }

  private JsonNode health(ServerProcess member) {
    try {
      HttpResponse<String> answer =
          http.send(
              HttpRequest.newBuilder(URI.create(member.uri() + "/healthz"))
                  .timeout(Duration.ofSeconds(2))
                  .header("Authorization", "Bearer " + ServerProcess.TOKEN)
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return JSON.readTree(answer.body());
    } catch (IOException e) {
      return JSON.createObjectNode(); // down
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private ServerProcess leader() throws InterruptedException {
    return group.leader();
  }

  /** Commits one row a commit through the group until stopped; what was acknowledged, or not. */
  private final class Writer extends Thread {
    final Set<Long> acknowledged = ConcurrentHashMap.newKeySet();
    final Set<Long> unknown = ConcurrentHashMap.newKeySet();
    final AtomicBoolean stop = new AtomicBoolean();
    final long base;

    Writer(long base) {
      this.base = base;
    }

    @Override
    public void run() {
      try (RemoteConnection group = connect(uris)) {
        for (long id = base; !stop.get(); id++) {
          try {
            ParquetFiles.append(group.catalog().loadTable(ORDERS), ServerFixture.rows(id));
            acknowledged.add(id);
          } catch (RuntimeException | IOException e) {
            unknown.add(id);
          }
        }
      }
    }
  }

  @Test
  @Order(1)
  void everyAcknowledgedCommitSurvivesTenLeaderKillsAndTheLogStaysGapless() throws Exception {
    List<Writer> writers = List.of(new Writer(1_000_000), new Writer(2_000_000));
    writers.forEach(Thread::start);
    List<Long> failovers = new ArrayList<>();
    for (int kill = 0; kill < 10; kill++) {
      ServerProcess leader = leader();
      long before = acknowledged(writers);
      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged(writers) >= before + 3);
      leader.kill();
      long killed = System.nanoTime();
      ServerProcess next = leader();
      failovers.add((System.nanoTime() - killed) / 1_000_000);
      assertThat(next).isNotSameAs(leader);
      leader.restart(); // back as a standby: its unacknowledged tail, if any, is dropped
    }
    long last = acknowledged(writers);
    await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged(writers) >= last + 3);
    writers.forEach(w -> w.stop.set(true));
    for (Writer writer : writers) {
      writer.join(120_000);
    }

    Set<Long> acknowledged = new HashSet<>();
    Set<Long> unknown = new HashSet<>();
    writers.forEach(w -> acknowledged.addAll(w.acknowledged));
    writers.forEach(w -> unknown.addAll(w.unknown));
    try (RemoteConnection group = connect(uris)) {
      Set<Long> stored = ids(group.catalog());
      assertThat(stored).as("every acknowledged commit's row").containsAll(acknowledged);
      Set<Long> phantoms = new HashSet<>(stored);
      phantoms.removeAll(acknowledged);
      assertThat(unknown).as("rows no writer sent").containsAll(phantoms);
      List<CommitEvent> log = group.feed().commitsSince(0, 100_000);
      List<Long> seqs = log.stream().map(CommitEvent::commitSeq).toList();
      assertThat(seqs)
          .as("commit_seq, gapless and each once")
          .isEqualTo(ServerFixture.sequence(seqs.size()));
      assertThat(log.stream().map(CommitEvent::metadataLocation).distinct().count())
          .isEqualTo(log.size());
    }
    System.out.println("failover ms (leader killed → new leader serving): " + failovers);
  }

  @Test
  @Order(2)
  void aLeaderStoppedUntilAStandbyTakesOverAcknowledgesNothingAfterAndEndsAStandby()
      throws Exception {
    ServerProcess stopped = leader();
    try (RemoteConnection direct =
        RemoteConnection.open(
            stopped.uri(),
            Map.of(
                CatalogConnection.TOKEN,
                ServerProcess.TOKEN,
                CatalogConnection.RETRY_TIMEOUT,
                "5 s"))) {
      Table orders = direct.catalog().loadTable(ORDERS); // a client that knows only this member
      stopped.signal("STOP");
      ServerProcess next;
      try {
        next = leader();
        try (RemoteConnection group = connect(uris)) {
          ParquetFiles.append(group.catalog().loadTable(ORDERS), ServerFixture.rows(3_000_001));
        }
      } finally {
        stopped.signal("CONT");
      }
      assertThat(next).isNotSameAs(stopped);
      // Woken, the deposed leader acknowledges nothing: a standby refuses, a fenced leader's
      // commit gets no standby's acknowledgement.
      assertThatThrownBy(() -> ParquetFiles.append(orders, ServerFixture.rows(3_000_002)))
          .isInstanceOf(RuntimeException.class);
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () -> {
                JsonNode health = health(stopped);
                assertThat(health.path("role").asText()).isEqualTo("standby");
                assertThat(health.path("commit-seq").asLong())
                    .isEqualTo(health(next).path("commit-seq").asLong());
              });
      try (RemoteConnection group = connect(uris)) {
        assertThat(ids(group.catalog())).contains(3_000_001L).doesNotContain(3_000_002L);
      }
    }
  }

  @Test
  @Order(3)
  void aStandbyWhoseDiskIsDeletedRebuildsFromTheLeaderAndServesAgain() throws Exception {
    ServerProcess leader = leader();
    ServerProcess standby = members.stream().filter(m -> m != leader).findFirst().orElseThrow();
    standby.kill();
    Path catalog = root.resolve("m" + members.indexOf(standby)).resolve("catalog");
    ReplicationRoutes.delete(catalog);
    assertThat(catalog).doesNotExist();
    try (RemoteConnection group = connect(uris)) {
      ParquetFiles.append(group.catalog().loadTable(ORDERS), ServerFixture.rows(4_000_001));
      standby.restart();
      await()
          .atMost(Duration.ofSeconds(60))
          .untilAsserted(
              () ->
                  assertThat(health(standby).path("commit-seq").asLong())
                      .isEqualTo(health(leader).path("commit-seq").asLong()));
      assertThat(catalog).isDirectory();
      // It serves again: the leader gone, it may lead with every commit.
      leader.kill();
      ServerProcess next = leader();
      assertThat(ids(group.catalog())).contains(4_000_001L);
      leader.restart();
      assertThat(next).isNotSameAs(leader);
    }
  }

  private static long acknowledged(List<Writer> writers) {
    return writers.stream().mapToLong(w -> w.acknowledged.size()).sum();
  }

  private static Set<Long> ids(Catalog catalog) throws IOException {
    Set<Long> ids = new HashSet<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(catalog.loadTable(ORDERS)).build()) {
      rows.forEach(row -> ids.add((Long) row.getField("id")));
    }
    return ids;
  }
}
