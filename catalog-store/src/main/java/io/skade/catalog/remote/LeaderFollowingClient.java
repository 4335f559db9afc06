package io.skade.catalog.remote;

import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.apache.iceberg.rest.HTTPClient;
import org.apache.iceberg.rest.ParserContext;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTRequest;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.auth.AuthSession;
import org.apache.iceberg.rest.responses.ErrorResponse;

/**
 * Iceberg's REST client for a skade server group: an {@link HTTPClient} per member, each request
 * sent to the member {@link ServerAddress} takes for the leader. A request that reaches no leader —
 * the member is down, or answers {@code 421} as a standby or {@code 503} with no leader — makes the
 * address look for the leader and fails as {@link ServiceUnavailableException}, which the
 * connection's retry policy tries again (on the leader). Neither answer means the request was
 * applied, so a commit tried again commits once; one whose answer was lost is settled as any
 * other's (its idempotency key, replicated with the commit, replays the first answer).
 */
final class LeaderFollowingClient implements RESTClient {
  private final ServerAddress address;
  private final Function<URI, RESTClient> open;
  private final Map<URI, RESTClient> clients;
  private final boolean owner;

  /**
   * A member that stops answering (a paused leader) holds a request only this long unless the
   * configuration says otherwise: then the client looks for the leader.
   */
  private static final String CONNECT_TIMEOUT_MS = "5000";

  private static final String SOCKET_TIMEOUT_MS = "60000";

  /** A client of {@code address}'s members configured by Iceberg's REST {@code config}. */
  LeaderFollowingClient(ServerAddress address, Map<String, String> config) {
    this(address, member -> open(member, config), new ConcurrentHashMap<>(), true);
  }

  private static RESTClient open(URI member, Map<String, String> config) {
    Map<String, String> timed = new java.util.HashMap<>(config);
    timed.putIfAbsent("rest.client.connection-timeout-ms", CONNECT_TIMEOUT_MS);
    timed.putIfAbsent("rest.client.socket-timeout-ms", SOCKET_TIMEOUT_MS);
    return HTTPClient.builder(timed)
        .uri(member)
        .withHeaders(RESTUtil.configHeaders(config))
        .build();
  }

  private LeaderFollowingClient(
      ServerAddress address,
      Function<URI, RESTClient> open,
      Map<URI, RESTClient> clients,
      boolean owner) {
    this.address = address;
    this.open = open;
    this.clients = clients;
    this.owner = owner;
  }

  @FunctionalInterface
  private interface Request<T> {
    T send(RESTClient client, Consumer<ErrorResponse> errors);
  }

  private <T> T send(Consumer<ErrorResponse> errors, Request<T> request) {
    URI member = address.current();
    RESTClient client = clients.computeIfAbsent(member, open);
    Consumer<ErrorResponse> following =
        error -> {
          if (error.code() == 421 || error.code() == 503) {
            throw new ServiceUnavailableException(
                "skade server %s is not the group's leader (%s): %s",
                member, error.code(), error.message());
          }
          errors.accept(error);
        };
    try {
      return request.send(client, following);
    } catch (RuntimeException e) {
      // A standby's or an electing group's answer, or no answer (the member may be gone).
      if (RemoteRetry.isTransient(e) && address.lost(member)) {
        throw new ServiceUnavailableException(
            new LeaderMovedException(member, address.current(), e.getMessage()),
            "the skade server group's leader moved to %s",
            address.current());
      }
      throw e;
    }
  }

  @Override
  public void head(String path, Map<String, String> headers, Consumer<ErrorResponse> errors) {
    send(
        errors,
        (client, following) -> {
          client.head(path, headers, following);
          return null;
        });
  }

  @Override
  public <T extends RESTResponse> T delete(
      String path,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors) {
    return send(
        errors, (client, following) -> client.delete(path, responseType, headers, following));
  }

  @Override
  public <T extends RESTResponse> T delete(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors) {
    return send(
        errors,
        (client, following) -> client.delete(path, queryParams, responseType, headers, following));
  }

  @Override
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors) {
    return send(
        errors,
        (client, following) -> client.get(path, queryParams, responseType, headers, following));
  }

  @Override
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors,
      ParserContext parserContext) {
    return send(
        errors,
        (client, following) ->
            client.get(path, queryParams, responseType, headers, following, parserContext));
  }

  @Override
  public <T extends RESTResponse> T get(
      String path,
      Map<String, String> queryParams,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors,
      Consumer<Map<String, String>> responseHeaders) {
    return send(
        errors,
        (client, following) ->
            client.get(path, queryParams, responseType, headers, following, responseHeaders));
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors) {
    return send(
        errors, (client, following) -> client.post(path, body, responseType, headers, following));
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors,
      Consumer<Map<String, String>> responseHeaders) {
    return send(
        errors,
        (client, following) ->
            client.post(path, body, responseType, headers, following, responseHeaders));
  }

  @Override
  public <T extends RESTResponse> T post(
      String path,
      RESTRequest body,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors,
      Consumer<Map<String, String>> responseHeaders,
      ParserContext parserContext) {
    return send(
        errors,
        (client, following) ->
            client.post(
                path, body, responseType, headers, following, responseHeaders, parserContext));
  }

  @Override
  public <T extends RESTResponse> T postForm(
      String path,
      Map<String, String> formData,
      Class<T> responseType,
      Map<String, String> headers,
      Consumer<ErrorResponse> errors) {
    return send(
        errors,
        (client, following) -> client.postForm(path, formData, responseType, headers, following));
  }

  @Override
  public RESTClient withAuthSession(AuthSession session) {
    Map<URI, RESTClient> sessions = new ConcurrentHashMap<>();
    return new LeaderFollowingClient(
        address,
        member -> clients.computeIfAbsent(member, open).withAuthSession(session),
        sessions,
        false);
  }

  @Override
  public void close() throws IOException {
    if (owner) {
      for (RESTClient client : clients.values()) {
        client.close();
      }
    }
  }
}
