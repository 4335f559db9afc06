package io.skade.catalog.remote;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.ConsumerStore;
import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.MaintenanceLocks;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client of a skade server's own routes ({@link SkadeProtocol}): the commit feed and consumer
 * cursors. The catalog itself is reached with Iceberg's {@code RESTCatalog}; this is the rest.
 *
 * <p>A transient failure (connection refused or reset, a time-out, a 5xx answer, as while the
 * server restarts) is retried with a backoff from 100 ms to 5 s for up to {@code retryFor}; a
 * request the server refused (4xx) fails at once with the server's message.
 */
public final class SkadeServerClient implements ConsumerStore, MaintenanceLocks {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeServerClient.class);
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);

  /** What a request may take beyond the wait it asks the server for. */
  private static final Duration REQUEST_SLACK = Duration.ofSeconds(30);

  private static final long FIRST_BACKOFF_MS = 100;
  private static final long MAX_BACKOFF_MS = 5_000;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final URI uri;
  private final String token;
  private final Duration retryFor;
  private final HttpClient http;

  /**
   * @param uri the server, e.g. {@code http://host:8181}
   * @param token the bearer token, or null for a server without authentication
   * @param retryFor how long transient failures of one call are retried before it fails
   */
  public SkadeServerClient(URI uri, String token, Duration retryFor) {
    this.uri = URI.create(uri.toString().replaceAll("/+$", ""));
    this.token = token;
    this.retryFor = retryFor;
    this.http =
        HttpClient.newBuilder()
            .connectTimeout(CONNECT_TIMEOUT)
            .version(HttpClient.Version.HTTP_1_1)
            .build();
  }

  /** The server this client calls. */
  public URI uri() {
    return uri;
  }

  /**
   * Commits after {@code after}, at most {@code limit} ({@code 0}: only the cursor), waiting up to
   * {@code wait} on the server for the first when there is none yet.
   */
  public CommitPage commits(long after, int limit, Duration wait) {
    String path =
        SkadeProtocol.COMMITS
            + "?after="
            + after
            + "&limit="
            + limit
            + "&wait-ms="
            + wait.toMillis();
    return SkadeProtocol.commitPage(call("GET", path, null, wait).body());
  }

  /** The catalog's cursor: the {@code commitSeq} of its newest durable commit. */
  public long commitSeq() {
    return commits(0, 0, Duration.ZERO).lastCommitSeq();
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

  private Answer call(String method, String path, String body, Duration wait, int... accepted) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(uri + path))
            .timeout(wait.plus(REQUEST_SLACK))
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
    long deadline = System.nanoTime() + retryFor.toNanos();
    long backoff = FIRST_BACKOFF_MS;
    while (true) {
      String transientFailure;
      IOException cause = null;
      try {
        HttpResponse<String> response =
            http.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        int status = response.statusCode();
        if (status < 300 || IntStream.of(accepted).anyMatch(code -> code == status)) {
          return new Answer(status, response.body());
        }
        if (status < 500) {
          throw refused(method, path, status, response.body());
        }
        transientFailure = "answered " + status + ": " + message(response.body());
      } catch (IOException e) { // refused, timed out, reset or closed under the request
        transientFailure = e.toString();
        cause = e;
      } catch (InterruptedException e) {
        throw interrupted(e);
      }
      if (System.nanoTime() + backoff * 1_000_000 > deadline) {
        throw new UncheckedIOException(
            new IOException(
                "the skade server at "
                    + uri
                    + " did not"
                    + " answer "
                    + method
                    + " "
                    + path
                    + " within "
                    + retryFor.toSeconds()
                    + " s of"
                    + " retries; last: "
                    + transientFailure
                    + ". Check that the server runs and that"
                    + " 'uri' names it",
                cause));
      }
      LOG.debug(
          "skade server at {}: {} {} failed ({}); retrying in {} ms",
          uri,
          method,
          path,
          transientFailure,
          backoff);
      try {
        Thread.sleep(backoff);
      } catch (InterruptedException e) {
        throw interrupted(e);
      }
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
    }
  }

  private UncheckedIOException interrupted(InterruptedException e) {
    Thread.currentThread().interrupt();
    return new UncheckedIOException(
        new IOException("interrupted calling the skade server at " + uri, e));
  }

  private RuntimeException refused(String method, String path, int status, String body) {
    String message =
        "the skade server at "
            + uri
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
