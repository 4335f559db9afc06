package io.skade.server;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

/**
 * One HTTP request and its answer, on Jetty's core API: the path split into its still-encoded
 * segments (a table name may hold an encoded {@code /}), the query, a body read with a size limit,
 * and the answer written once, as JSON or as the REST error model's {@link ErrorResponse}.
 */
final class Exchange {
  /** Largest request body accepted; a commit of many updates stays far below it. */
  static final int MAX_BODY_BYTES = 16 * 1024 * 1024;

  private final Request request;
  private final Response response;
  private final Callback callback;
  private final List<String> segments;
  private final AtomicBoolean answered = new AtomicBoolean();
  private Fields query;
  private String body;

  /** The body as last parsed ({@link #body(Class, Function)}). */
  private Object parsed;

  /** The route's template, for metrics and logs; set when the request is routed. */
  private String route = "unrouted";

  private int status;
  private Caller caller = Caller.ANYONE;

  Exchange(Request request, Response response, Callback callback) {
    this.request = request;
    this.response = response;
    this.callback = callback;
    this.segments = segments(request.getHttpURI().getPath());
  }

  private static List<String> segments(String rawPath) {
    List<String> parts = new ArrayList<>();
    for (String part : (rawPath == null ? "" : rawPath).split("/", -1)) {
      if (!part.isEmpty()) {
        parts.add(part);
      }
    }
    return parts;
  }

  String method() {
    return request.getMethod();
  }

  /** The path's segments, still percent-encoded. */
  List<String> segments() {
    return segments;
  }

  /** Segment {@code index} decoded. */
  String decoded(int index) {
    return RESTUtil.decodeString(segments.get(index));
  }

  /** Whether the path is {@code parts} (a {@code *} matches any one segment). */
  boolean pathIs(String... parts) {
    if (segments.size() != parts.length) {
      return false;
    }
    for (int i = 0; i < parts.length; i++) {
      if (!parts[i].equals("*") && !parts[i].equals(segments.get(i))) {
        return false;
      }
    }
    return true;
  }

  /** A query parameter, decoded; null when absent. */
  String query(String name) {
    if (query == null) {
      query = Request.extractQueryParameters(request, StandardCharsets.UTF_8);
    }
    Fields.Field field = query.get(name);
    return field == null ? null : field.getValue();
  }

  String header(String name) {
    return request.getHeaders().get(name);
  }

  void route(String template) {
    this.route = template;
  }

  /** Sets who sent the request, once its token is known. */
  void caller(Caller caller) {
    this.caller = caller;
  }

  /** Who sent the request. */
  Caller caller() {
    return caller;
  }

  /** Refuses the routed request unless its caller has {@code needed} (see {@link Caller}). */
  void require(Caller.Role needed) {
    caller.require(needed, route);
  }

  /** Refuses the routed request unless its caller has {@code needed} on {@code namespace}. */
  void require(Caller.Role needed, Namespace namespace) {
    caller.require(needed, namespace, route);
  }

  String route() {
    return route;
  }

  /** The status answered, 0 before the answer. */
  int status() {
    return status;
  }

  boolean answered() {
    return answered.get();
  }

  /**
   * The request body as text (read once).
   *
   * @throws PayloadTooLargeException when it is longer than {@link #MAX_BODY_BYTES}
   */
  String body() throws InterruptedException {
    if (body == null) {
      body = readBody();
    }
    return body;
  }

  /**
   * The body parsed as {@code type} by {@code parser}, once: a route that checks a request's body
   * before it handles it (the caller's rights) does not parse a commit twice.
   */
  <T> T body(Class<T> type, Function<String, T> parser) throws InterruptedException {
    if (!type.isInstance(parsed)) {
      parsed = parser.apply(body());
    }
    return type.cast(parsed);
  }

  private String readBody() throws InterruptedException {
    long declared = request.getLength();
    if (declared > MAX_BODY_BYTES) {
      throw new PayloadTooLargeException(declared);
    }
    try {
      byte[] bytes = Content.Source.asByteArrayAsync(request, MAX_BODY_BYTES).get();
      return new String(bytes, StandardCharsets.UTF_8);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IllegalStateException) { // more than the limit arrived
        throw new PayloadTooLargeException(-1);
      }
      throw new IllegalArgumentException(
          "the request body could not be read: " + e.getCause(), e.getCause());
    }
  }

  /** A body longer than {@link #MAX_BODY_BYTES}: answered 413. */
  static final class PayloadTooLargeException extends RuntimeException {
    PayloadTooLargeException(long declared) {
      super(
          "the request body"
              + (declared > 0 ? " of " + declared + " bytes" : "")
              + " is larger than the "
              + MAX_BODY_BYTES
              + " bytes the server accepts");
    }
  }

  void header(String name, String value) {
    response.getHeaders().put(name, value);
  }

  /** Answers {@code status} with a JSON body. */
  void json(int status, String json) {
    answer(status, "application/json", json);
  }

  /** Answers {@code status} with a plain-text body. */
  void text(int status, String contentType, String text) {
    answer(status, contentType, text);
  }

  /** Writes an answer's body. */
  @FunctionalInterface
  interface BodyWriter {
    void write(java.io.OutputStream out) throws java.io.IOException;
  }

  /**
   * Answers {@code status} with a body {@code writer} streams (blocking this thread until it is
   * sent), for answers too large to hold in memory.
   */
  void stream(int status, String contentType, BodyWriter writer) throws java.io.IOException {
    if (!answered.compareAndSet(false, true)) {
      return;
    }
    this.status = status;
    response.setStatus(status);
    closeIfBodyUnread();
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType);
    try (java.io.OutputStream out = Content.Sink.asOutputStream(response)) {
      writer.write(out);
    } catch (java.io.IOException | RuntimeException e) {
      callback.failed(e);
      throw e;
    }
    callback.succeeded();
  }

  /** Answers {@code status} without a body (204, 304, a HEAD). */
  void empty(int status) {
    if (answered.compareAndSet(false, true)) {
      this.status = status;
      response.setStatus(status);
      closeIfBodyUnread();
      response.write(true, null, callback);
    }
  }

  /** Answers with the REST error model: {@code {"error": {message, type, code}}}. */
  void error(int status, String type, String message) {
    ErrorResponse error =
        ErrorResponse.builder().responseCode(status).withType(type).withMessage(message).build();
    json(status, IcebergJson.write(error));
  }

  /**
   * Says {@code Connection: close} when the request's body was not read (a replayed commit, a
   * refusal before the body): Jetty then closes the connection once the answer is sent, unless the
   * whole body happened to arrive already, and a client that was not told reuses a closed
   * connection for its next request.
   */
  private void closeIfBodyUnread() {
    if (body == null
        && (request.getLength() > 0
            || request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING))) {
      response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
  }

  private void answer(int status, String contentType, String body) {
    if (!answered.compareAndSet(false, true)) {
      return; // a long-poll answered by its timer and by a commit at once: the first wins
    }
    this.status = status;
    response.setStatus(status);
    closeIfBodyUnread();
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, contentType + "; charset=utf-8");
    if (method().equals("HEAD")) {
      response.write(true, null, callback);
    } else {
      response.write(true, ByteBuffer.wrap(body.getBytes(StandardCharsets.UTF_8)), callback);
    }
  }
}
