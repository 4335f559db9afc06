package io.skade.server;

import io.skade.testing.IdRows;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * A skade server on a fresh catalog under {@code root}, started in this JVM (real Jetty, real
 * RocksDB), with bearer tokens of every role; its Iceberg REST clients and raw HTTP calls.
 */
final class ServerFixture implements AutoCloseable {
  static final String TOKEN = "test-token";

  /** A token of role {@code read}, named {@code reader}. */
  static final String READER = "reader-token";

  /** A token of role {@code write}, named {@code writer}. */
  static final String WRITER = "writer-token";

  /**
   * Tokens limited to namespace {@code elsewhere}: of roles read (also {@code x.y}), write and
   * admin, each named as itself.
   */
  static final List<String> ELSEWHERE =
      List.of("elsewhere-reader", "elsewhere-writer", "elsewhere-admin");

  /**
   * This server's own client: a client shared by tests keeps connections to an earlier test's
   * server, and a new server on the same port then sees a POST on a connection it never had.
   */
  private HttpClient http = HttpClient.newHttpClient();

  private final List<AutoCloseable> opened = new ArrayList<>();
  private final Path root;
  SkadeServer server;

  ServerFixture(Path root) throws Exception {
    this.root = root;
    Files.writeString(
        root.resolve("tokens"),
        String.join(
            "\n",
            "# test: a bare token is an admin of every namespace",
            TOKEN,
            READER + " role=read name=reader",
            WRITER + "   role=write name=writer",
            "elsewhere-reader role=read namespaces=elsewhere,x.y name=elsewhere-reader",
            "elsewhere-writer role=write namespaces=elsewhere name=elsewhere-writer",
            "elsewhere-admin role=admin namespaces=elsewhere name=elsewhere-admin",
            ""));
    server = start();
  }

  private SkadeServer start() throws Exception {
    return SkadeServer.start(
        SkadeServer.Settings.of(
            root.resolve("warehouse").toString(), "127.0.0.1", 0, root.resolve("tokens")));
  }

  /** Stops the server and starts a new one on the same catalog (on another port). */
  void restart() throws Exception {
    server.close();
    server = start();
    http = HttpClient.newHttpClient(); // none of the old server's connections
  }

  /** Iceberg's REST catalog client of the server, with the admin token. */
  RESTCatalog rest() {
    return rest(TOKEN);
  }

  /** Iceberg's REST catalog client of the server, with {@code token}. */
  RESTCatalog rest(String token) {
    RESTCatalog client = new RESTCatalog();
    client.initialize(
        "rest", Map.of(CatalogProperties.URI, server.uri().toString(), "token", token));
    opened.add(client);
    return client;
  }

  /** Rows of {@code IdRows.log("name")}: each id, named {@code n<id>}. */
  static List<Record> rows(long... ids) {
    Schema schema = IdRows.log("name");
    List<Record> rows = new ArrayList<>();
    for (long id : ids) {
      rows.add(IdRows.row(schema, id, "n" + id));
    }
    return rows;
  }

  /** 1, 2, …, {@code last}. */
  static List<Long> sequence(long last) {
    return LongStream.rangeClosed(1, last).boxed().toList();
  }

  /** One answer: its status, body and headers. */
  record Answer(int status, String body, Map<String, List<String>> headers) {
    String header(String name) {
      return headers.entrySet().stream()
          .filter(e -> e.getKey().equalsIgnoreCase(name))
          .findFirst()
          .map(e -> e.getValue().get(0))
          .orElse(null);
    }
  }

  /** A raw call with the token. */
  Answer call(String method, String path, String body) {
    return call(method, path, body, TOKEN, Map.of());
  }

  /** A raw call; {@code token} null sends no Authorization header. */
  Answer call(String method, String path, String body, String token, Map<String, String> headers) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(server.uri() + path))
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    headers.forEach(request::header);
    try {
      HttpResponse<String> response =
          http.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      return new Answer(response.statusCode(), response.body(), response.headers().map());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Sends the head of a POST announcing a body of {@code length} bytes, and none of the body, on a
   * plain socket; the whole answer as text.
   */
  String rawPostHeadOnly(String path, long length) throws IOException {
    try (Socket socket = new Socket(server.uri().getHost(), server.uri().getPort())) {
      socket.setSoTimeout(10_000);
      socket
          .getOutputStream()
          .write(
              ("POST "
                      + path
                      + " HTTP/1.1\r\nHost: localhost\r\n"
                      + "Authorization: Bearer "
                      + TOKEN
                      + "\r\nContent-Type: application/json\r\n"
                      + "Content-Length: "
                      + length
                      + "\r\n\r\n")
                  .getBytes(StandardCharsets.US_ASCII));
      socket.getOutputStream().flush();
      ByteArrayOutputStream answer = new ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      try {
        for (int n; (n = socket.getInputStream().read(buffer)) > 0; ) {
          answer.write(buffer, 0, n);
          if (answer.toString(StandardCharsets.UTF_8).contains("}}")) {
            break; // the error body is complete
          }
        }
      } catch (SocketTimeoutException e) {
        // the answer so far is what there is
      }
      return answer.toString(StandardCharsets.UTF_8);
    }
  }

  @Override
  public void close() throws Exception {
    for (AutoCloseable closeable : opened) {
      closeable.close();
    }
    server.close();
  }
}
