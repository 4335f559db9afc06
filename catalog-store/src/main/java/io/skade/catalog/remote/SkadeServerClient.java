package io.skade.catalog.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.ConsumerStore;
import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.MaintenanceLocks;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.MetadataUpdateParser;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.util.JsonUtil;

/**
 * A client of a skade server's own routes ({@link SkadeProtocol}): the commit feed and consumer
 * cursors. The catalog itself is reached with Iceberg's {@code RESTCatalog}; this is the rest.
 *
 * <p>Every call rides {@link RemoteRetry}: a transient failure (connection refused or reset, a
 * time-out, a 5xx answer, as while the server restarts) is tried again until the retry timeout; a
 * request the server refused (4xx) fails at once with the server's message. The commit feed's
 * long-poll thread alone makes single tries ({@link #commitsOnce}) and rides the policy's backoff
 * without a deadline.
 *
 * <p>Calls go through the JDK's {@code HttpClient}, whose requests a thread interrupt aborts; the
 * {@link #commitSeq cursor}, which lookups ask for back to back, goes over a blocking connection
 * ({@code HttpURLConnection}, kept alive), which costs the caller's machine about a third of the
 * CPU and half the round trip of the asynchronous client's call ({@code ServerCallBenchmark}).
 */
public final class SkadeServerClient implements ConsumerStore, MaintenanceLocks {
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  /** What a request may take beyond the wait it asks the server for. */
  private static final Duration REQUEST_SLACK = Duration.ofSeconds(30);

  private static final ObjectMapper JSON = new ObjectMapper();

  private final ServerAddress address;
  private final String token;
  private final RemoteRetry retry;
  private final HttpClient http;

  /**
   * @param uri the server, e.g. {@code http://host:8181}
   * @param token the bearer token, or null for a server without authentication
   * @param retryFor how long transient failures of one call are retried before it fails
   */
  public SkadeServerClient(URI uri, String token, Duration retryFor) {
    this(ServerAddress.of(uri), token, new RemoteRetry(uri.toString(), retryFor));
  }

  /** A client whose calls ride {@code retry}, the policy of the connection that made it. */
  SkadeServerClient(ServerAddress address, String token, RemoteRetry retry) {
    this.address = address;
    this.token = token;
    this.retry = retry;
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(CONNECT_TIMEOUT)
            .version(HttpClient.Version.HTTP_1_1)
            .build();
  }

  /** How long a group member may take to say whether it leads. */
  private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);

  private static final HttpClient PROBES =
      HttpClient.newBuilder()
          .connectTimeout(PROBE_TIMEOUT)
          .version(HttpClient.Version.HTTP_1_1)
          .build();

  /**
   * Whether the server group member at {@code member} leads its group: its {@code
   * /healthz?role=leader} answers 200. False when it answers otherwise or not within 2 s.
   */
  static boolean leads(URI member, String token) {
    try {
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create(member + "/healthz?role=leader"))
              .timeout(PROBE_TIMEOUT);
      if (token != null) {
        request.header("Authorization", "Bearer " + token);
      }
      return PROBES.send(request.build(), HttpResponse.BodyHandlers.discarding()).statusCode()
          == 200;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (IOException e) {
      return false; // down, or stopped: not the leader
    }
  }

  /** The server this client calls. */
  public URI uri() {
    return address.current();
  }

  /**
   * Commits after {@code after}, at most {@code limit} ({@code 0}: only the cursor), waiting up to
   * {@code wait} on the server for the first when there is none yet.
   */
  public CommitPage commits(long after, int limit, Duration wait) {
    return SkadeProtocol.commitPage(
        call("GET", commitsPath(after, limit, wait), null, wait).body());
  }

  /** One try of {@link #commits}, for the long-poll thread, which rides the policy itself. */
  CommitPage commitsOnce(long after, int limit, Duration wait) throws InterruptedException {
    String path = commitsPath(after, limit, wait);
    return SkadeProtocol.commitPage(once(path, wait.plus(REQUEST_SLACK)).body());
  }

  private static String commitsPath(long after, int limit, Duration wait) {
    return SkadeProtocol.COMMITS
        + "?after="
        + after
        + "&limit="
        + limit
        + "&wait-ms="
        + wait.toMillis();
  }

  /**
   * The JSON of table metadata file {@code location} as the server holds it, or empty when the
   * server refuses to serve that file (not its warehouse's, or a server without the route). One
   * try, for a caller that reads the file from the store otherwise.
   *
   * @throws UncheckedIOException when the server does not answer within {@code timeout}, or fails
   * @throws InterruptedException when interrupted while waiting for the answer
   */
  Optional<String> metadataJson(String location, Duration timeout) throws InterruptedException {
    String path = SkadeProtocol.METADATA + "?location=" + encode(location);
    try {
      return Optional.of(bestEffort(path, timeout).body());
    } catch (UncheckedIOException e) {
      throw e;
    } catch (RuntimeException refused) {
      return Optional.empty();
    }
  }

  /**
   * The updates that made metadata file {@code location} from file {@code base}, as the server
   * holds them when it committed {@code location} onto {@code base} lately, or empty when it does
   * not (or does not answer within {@code timeout}, or fails). One try, for a caller that reads the
   * whole file otherwise.
   *
   * @throws InterruptedException when interrupted while waiting for the answer
   */
  public Optional<List<MetadataUpdate>> metadataUpdates(
      String location, String base, Duration timeout) throws InterruptedException {
    String path =
        SkadeProtocol.METADATA_UPDATES + "?location=" + encode(location) + "&base=" + encode(base);
    try {
      JsonNode updates =
          JsonUtil.mapper().readTree(bestEffort(path, timeout).body()).get("updates");
      List<MetadataUpdate> parsed = new ArrayList<>();
      updates.forEach(update -> parsed.add(MetadataUpdateParser.fromJson(update)));
      return Optional.of(parsed);
    } catch (IOException | RuntimeException refused) {
      return Optional.empty();
    }
  }

  /** The policy this client's calls ride. */
  RemoteRetry retry() {
    return retry;
  }

  /**
   * The catalog's cursor: the {@code commitSeq} of its newest durable commit. Asked over a blocking
   * connection (see above): an interrupt does not abort it, a server that does not answer fails it
   * after the request time-out.
   */
  public long commitSeq() {
    String path = commitsPath(0, 0, Duration.ZERO);
    return SkadeProtocol.commitPage(ride("GET", path, () -> sendBlocking(path)).body())
        .lastCommitSeq();
  }

  /** The commit that added {@code snapshotId} to {@code table}, if the catalog recorded it. */
  public Optional<CommitEvent> commitOf(TableIdentifier table, long snapshotId) {
    Answer answer =
        call(
            "GET",
            SkadeProtocol.COMMIT_OF + "?" + tableQuery(table) + "&snapshot-id=" + snapshotId,
            null,
            Duration.ZERO,
            404);
    return answer.status() == 404
        ? Optional.empty()
        : Optional.of(SkadeProtocol.commit(answer.body()));
  }

  @Override
  public StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor) {
    return SkadeProtocol.consumer(
        call("PUT", consumerPath(consumerId), SkadeProtocol.cursor(cursor), Duration.ZERO).body());
  }

  @Override
  public Optional<StoredConsumer> consumer(String consumerId) {
    Answer answer = call("GET", consumerPath(consumerId), null, Duration.ZERO, 404);
    return answer.status() == 404
        ? Optional.empty()
        : Optional.of(SkadeProtocol.consumer(answer.body()));
  }

  @Override
  public List<StoredConsumer> consumers() {
    return SkadeProtocol.consumers(
        call("GET", SkadeProtocol.CONSUMERS, null, Duration.ZERO).body());
  }

  @Override
  public List<StoredConsumer> consumers(TableIdentifier table) {
    return SkadeProtocol.consumers(
        call("GET", SkadeProtocol.CONSUMERS + "?" + tableQuery(table), null, Duration.ZERO).body());
  }

  @Override
  public boolean dropConsumer(String consumerId) {
    return call("DELETE", consumerPath(consumerId), null, Duration.ZERO, 404).status() != 404;
  }

  @Override
  public boolean tryLock(TableIdentifier table, String name, String holder, Duration lease) {
    // Retrying is safe: a holder that already holds the lock is answered that it holds it.
    return SkadeProtocol.flag(
        call("POST", lockPath(table, name), SkadeProtocol.lockRequest(holder, lease), Duration.ZERO)
            .body(),
        "held");
  }

  @Override
  public Optional<MaintenanceLock> lock(TableIdentifier table, String name) {
    Answer answer = call("GET", lockPath(table, name), null, Duration.ZERO, 404);
    return answer.status() == 404
        ? Optional.empty()
        : Optional.of(SkadeProtocol.lock(answer.body()));
  }

  @Override
  public boolean unlock(TableIdentifier table, String name, String holder) {
    return SkadeProtocol.flag(
        call("DELETE", lockPath(table, name) + "&holder=" + encode(holder), null, Duration.ZERO)
            .body(),
        "released");
  }

  private static String lockPath(TableIdentifier table, String name) {
    return SkadeProtocol.LOCKS + "?" + tableQuery(table) + "&name=" + encode(name);
  }

  /**
   * Hands a Flink job run's lineage event ({@code json}, as skade's lineage writes it) to the
   * lineage the server runs for its catalog: it names the job in the descriptions of the job's
   * commits, and reaches the server's lineage sink.
   */
  public void reportJobRun(String json) {
    call("POST", SkadeProtocol.JOB_RUNS, json, Duration.ZERO);
  }

  private static String consumerPath(String consumerId) {
    return SkadeProtocol.CONSUMERS + "/" + encode(consumerId);
  }

  private static String tableQuery(TableIdentifier table) {
    return "namespace=" + encode(namespace(table.namespace())) + "&table=" + encode(table.name());
  }

  /** A namespace as a query parameter: its levels joined by the unit separator. */
  private static String namespace(Namespace namespace) {
    return String.join("\u001f", namespace.levels());
  }

  private static String encode(String text) {
    return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private record Answer(int status, String body) {}

  /** One try of {@code GET path}, to the member taken for the leader. */
  private Answer once(String path, Duration timeout) throws InterruptedException {
    URI member = address.current();
    return send(member, true, "GET", path, request(member, "GET", path, null, timeout));
  }

  /**
   * One try of {@code GET path} for a caller that does without the answer (it reads the store
   * instead): a failure does not wait for a server group to elect its leader.
   */
  private Answer bestEffort(String path, Duration timeout) throws InterruptedException {
    URI member = address.current();
    return send(member, false, "GET", path, request(member, "GET", path, null, timeout));
  }

  /**
   * The server's answer to {@code method path}, riding the policy through transient failures; a
   * refusal (4xx) fails at once with the server's message.
   */
  private Answer call(String method, String path, String body, Duration wait, int... accepted) {
    // Built per try: a group's client sends each try to the member it takes for the leader.
    return ride(
        method,
        path,
        () -> {
          URI member = address.current();
          return send(
              member,
              true,
              method,
              path,
              request(member, method, path, body, wait.plus(REQUEST_SLACK)),
              accepted);
        });
  }

  /** {@code once}, one try of {@code method path}, riding the policy. */
  private Answer ride(String method, String path, Callable<Answer> once) {
    try {
      return retry.call("skade server at " + address + ": " + method + " " + path, once);
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof InterruptedIOException) {
        throw e;
      }
      throw new UncheckedIOException(
          new IOException(
              "the skade server at "
                  + address
                  + " did not answer "
                  + method
                  + " "
                  + path
                  + " within "
                  + retry.timeout().toSeconds()
                  + " s of retries; last: "
                  + e.getMessage()
                  + ". Check that the server runs and that 'uri' names it",
              e));
    }
  }

  private HttpRequest request(
      URI member, String method, String path, String body, Duration timeout) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(member + path))
            .timeout(timeout)
            .method(
                method,
                body == null
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (body != null) {
      request.header("Content-Type", "application/json");
    }
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return request.build();
  }

  /**
   * One try: the answer, a refusal (4xx, not transient), or an {@link UncheckedIOException} for a
   * request that failed (refused, timed out, reset or closed under it) or a 5xx answer, which
   * {@link RemoteRetry#isTransient} tries again.
   */
  private Answer send(
      URI member, boolean follow, String method, String path, HttpRequest request, int... accepted)
      throws InterruptedException {
    HttpResponse<String> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw failed(member, follow, e);
    }
    return answer(member, follow, method, path, response.statusCode(), response.body(), accepted);
  }

  /** One try of {@code GET path} over a blocking connection; its answer as {@link #send}'s. */
  private Answer sendBlocking(String path) {
    URI member = address.current();
    int status;
    String body;
    try {
      HttpURLConnection connection =
          (HttpURLConnection) URI.create(member + path).toURL().openConnection(Proxy.NO_PROXY);
      connection.setConnectTimeout((int) CONNECT_TIMEOUT.toMillis());
      connection.setReadTimeout((int) REQUEST_SLACK.toMillis());
      if (token != null) {
        connection.setRequestProperty("Authorization", "Bearer " + token);
      }
      status = connection.getResponseCode();
      // Read to the end and closed, the connection is kept for the next call.
      try (InputStream in =
          status < 400 ? connection.getInputStream() : connection.getErrorStream()) {
        body = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    } catch (SocketTimeoutException e) {
      // Not an interrupt (a SocketTimeoutException is an InterruptedIOException): transient.
      throw failed(member, true, new IOException(e.toString(), e));
    } catch (IOException e) {
      throw failed(member, true, e);
    }
    return answer(member, true, "GET", path, status, body);
  }

  /**
   * {@code status} and {@code body} of {@code member} as an answer when it is a success or {@code
   * accepted}; else a refusal (4xx), or for a 5xx an {@link UncheckedIOException}, which is
   * transient. A group's standby ({@code 421}) or a group with no leader ({@code 503}) sends the
   * client looking for the leader, and is transient too.
   */
  private Answer answer(
      URI member,
      boolean follow,
      String method,
      String path,
      int status,
      String body,
      int... accepted) {
    if (status < 300 || IntStream.of(accepted).anyMatch(code -> code == status)) {
      return new Answer(status, body);
    }
    if (status == 421 || status == 503) {
      throw failed(member, follow, new IOException("answered " + status + ": " + message(body)));
    }
    if (status < 500) {
      throw refused(method, path, status, body);
    }
    String answered = "answered " + status + ": " + message(body);
    throw new UncheckedIOException(answered, new IOException(answered));
  }

  /**
   * A request to {@code member} that failed with {@code failure} (transient): for a server group,
   * when {@code follow}, a {@link LeaderMovedException} once the client follows another member that
   * leads.
   */
  private UncheckedIOException failed(URI member, boolean follow, IOException failure) {
    if (follow && address.lost(member)) {
      return new UncheckedIOException(
          new LeaderMovedException(member, address.current(), failure.getMessage()));
    }
    return new UncheckedIOException(failure.toString(), failure);
  }

  private RuntimeException refused(String method, String path, int status, String body) {
    String message =
        "the skade server at "
            + address.current()
            + " refused "
            + method
            + " "
            + path
            + " ("
            + status
            + "): "
            + message(body);
    return switch (status) {
      case 401, 403 ->
          new NotAuthorizedException(
              "%s; set the catalog property 'token' to one" + " of the server's tokens", message);
      case 404 -> new org.apache.iceberg.exceptions.NotFoundException("%s", message);
      default -> new IllegalArgumentException(message);
    };
  }

  /** The message of a REST error body, or the body itself. */
  private static String message(String body) {
    String shown = body.length() > 300 ? body.substring(0, 300) + "…" : body;
    try {
      return JSON.readTree(body).path("error").path("message").asText(shown);
    } catch (IOException e) {
      return shown;
    }
  }
}
