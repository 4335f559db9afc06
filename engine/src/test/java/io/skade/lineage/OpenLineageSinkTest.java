package io.skade.lineage;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lineage sent through OpenLineage's HTTP transport to a collector this test runs on loopback: the
 * events carry OpenLineage's required fields and skade's facets, and a collector that fails,
 * refuses connections or hangs never fails or holds up a commit.
 */
class OpenLineageSinkTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier A = TableIdentifier.of("db", "a");
  private static final TableIdentifier C = TableIdentifier.of("db", "c");
  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private final List<JsonNode> received = new ArrayList<>();
  private HttpServer collector;

  @AfterEach
  void stopCollector() {
    if (collector != null) {
      collector.stop(0);
    }
  }

  @Test
  void commitsReachTheCollectorAsOpenLineageRunEventsWithSkadesFacets() throws Exception {
    URI url = startCollector(200, null);
    Table c;
    Snapshot appended;
    try (BestEffortLineage out =
            new BestEffortLineage(OpenLineageSink.http(url, Duration.ofSeconds(5), "skade-test"));
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      catalog.get().buildTable(A, SCHEMA).withProperty("format-version", "2").create();
      c = catalog.get().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      appended =
          new TableWriter(c)
              .describedAs(
                  "loader",
                  List.of(
                      new LineageDataset(
                          catalog.get().warehouse(), "db.a", null, null, null, List.of())))
              .append(List.of(row(1, "one")));
      awaitReceived(3);
      assertThat(out.failed()).isZero();
    }

    JsonNode event = received.get(2);
    assertThat(event.path("eventType").asText()).isEqualTo("COMPLETE");
    assertThat(event.path("eventTime").asText()).isNotEmpty();
    assertThat(event.path("producer").asText()).isEqualTo(OpenLineageSink.PRODUCER.toString());
    assertThat(event.path("schemaURL").asText()).contains("openlineage.io");
    assertThat(event.path("run").path("runId").asText()).hasSize(36);
    assertThat(event.path("job").path("namespace").asText()).isEqualTo("skade-test");
    assertThat(event.path("job").path("name").asText()).isEqualTo("loader");
    long commitSeq = catalog.get().commitOf(C, appended.snapshotId()).orElseThrow().commitSeq();
    JsonNode commit = event.path("run").path("facets").path("skade_commit");
    assertThat(commit.path("commitSeq").asLong()).isEqualTo(commitSeq);
    assertThat(commit.path("operation").asText()).isEqualTo("APPEND");

    JsonNode output = event.path("outputs").get(0);
    URI location = URI.create("file:" + c.location());
    assertThat(output.path("namespace").asText()).isEqualTo("file");
    assertThat(output.path("name").asText()).isEqualTo(location.getPath());
    JsonNode symlink = output.path("facets").path("symlinks").path("identifiers").get(0);
    assertThat(symlink.path("namespace").asText()).isEqualTo(catalog.get().warehouse());
    assertThat(symlink.path("name").asText()).isEqualTo("db.c");
    assertThat(symlink.path("type").asText()).isEqualTo("TABLE");
    assertThat(output.path("facets").path("version").path("datasetVersion").asText())
        .isEqualTo(Long.toString(appended.snapshotId()));
    assertThat(output.path("facets").path("schema").path("fields").findValuesAsText("name"))
        .containsExactly("id", "name");
    JsonNode input = event.path("inputs").get(0);
    assertThat(
            input.path("facets").path("symlinks").path("identifiers").get(0).path("name").asText())
        .isEqualTo("db.a");

    assertThat(
            received
                .get(0)
                .path("outputs")
                .get(0)
                .path("facets")
                .path("symlinks")
                .path("identifiers")
                .get(0)
                .path("name")
                .asText())
        .isEqualTo("db.a");
    assertThat(
            received
                .get(0)
                .path("run")
                .path("facets")
                .path("skade_commit")
                .path("operation")
                .asText())
        .isEqualTo("CREATE");
  }

  @Test
  void aCollectorAnswering500FailsNoCommitAndIsCounted() throws Exception {
    URI url = startCollector(500, null);
    assertCommitsUnaffected(url, out -> awaitCount(out::failed, 3));
    assertThat(received).hasSize(3);
  }

  @Test
  void aCollectorRefusingConnectionsFailsNoCommitAndIsCounted() throws Exception {
    int port;
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = closed.getLocalPort();
    }
    assertCommitsUnaffected(
        URI.create("http://127.0.0.1:" + port), out -> awaitCount(out::failed, 3));
  }

  @Test
  void aHangingCollectorHoldsUpNoCommit() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    URI url = startCollector(200, release);
    try {
      // Every commit returns while the collector holds the first request unanswered.
      assertCommitsUnaffected(
          url,
          out -> {
            awaitReceived(1);
            assertThat(out.delivered() + out.failed()).isZero();
          });
    } finally {
      release.countDown();
    }
  }

  @Test
  void theFileTransportWritesOneJsonEventPerLine(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("lineage.jsonl");
    try (BestEffortLineage out = new BestEffortLineage(OpenLineageSink.file(file, "skade-test"));
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      Table c = catalog.get().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      new TableWriter(c).append(List.of(row(1, "one")));
      awaitCount(out::delivered, 2);
    }
    List<String> lines = Files.readAllLines(file);
    assertThat(lines).hasSize(2);
    assertThat(
            JSON.readTree(lines.get(1))
                .path("run")
                .path("facets")
                .path("skade_commit")
                .path("operation")
                .asText())
        .isEqualTo("APPEND");
  }

  private interface Check {
    void check(BestEffortLineage out) throws Exception;
  }

  /** Three commits through a lineage sending to {@code url}; every one lands in the catalog. */
  private void assertCommitsUnaffected(URI url, Check whileOpen) throws Exception {
    long before = catalog.get().commitSeq();
    try (BestEffortLineage out =
            new BestEffortLineage(
                OpenLineageSink.http(url, Duration.ofSeconds(1), "skade-test"),
                100,
                Duration.ofSeconds(2));
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      Table c = catalog.get().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      TableWriter writer = new TableWriter(c);
      writer.append(List.of(row(1, "one")));
      writer.append(List.of(row(2, "two")));
      assertThat(catalog.get().commitSeq()).isEqualTo(before + 3);
      assertThat(catalog.get().loadTable(C).snapshots()).hasSize(2);
      whileOpen.check(out);
    }
  }

  /** A collector answering {@code status}; when {@code hold} is given, only once it opens. */
  private URI startCollector(int status, CountDownLatch hold) throws IOException {
    collector = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    collector.createContext(
        "/api/v1/lineage",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          synchronized (received) {
            received.add(JSON.readTree(new String(body, StandardCharsets.UTF_8)));
          }
          try {
            if (hold != null) {
              hold.await(30, TimeUnit.SECONDS);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          exchange.sendResponseHeaders(status, -1);
          exchange.close();
        });
    collector.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
    collector.start();
    return URI.create("http://127.0.0.1:" + collector.getAddress().getPort());
  }

  private void awaitReceived(int count) {
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              synchronized (received) {
                assertThat(received).hasSizeGreaterThanOrEqualTo(count);
              }
            });
  }

  /** Waits until {@code counter} reached {@code count}, then asserts it went no further. */
  private static void awaitCount(java.util.function.LongSupplier counter, long count) {
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> counter.getAsLong() >= count);
    assertThat(counter.getAsLong()).isEqualTo(count);
  }
}
