package io.skade.server;

import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.IdempotencyKeyUsedException;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.server.Caller.Role;
import java.util.List;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.rest.RESTUtil;

/**
 * Consumer cursors over HTTP ({@link SkadeProtocol#CONSUMERS}), stored in the catalog as local
 * consumers store theirs, so the expiry guard holds snapshots back for remote readers too.
 *
 * <ul>
 *   <li>{@code GET /skade/v1/consumers[?namespace=NS&table=T]}: every consumer, or a table's;
 *   <li>{@code GET /skade/v1/consumers/{id}}: one, 404 when none is stored;
 *   <li>{@code PUT /skade/v1/consumers/{id}} with a cursor: stores it, answers the stored row;
 *   <li>{@code DELETE /skade/v1/consumers/{id}}: 204, or 404 when none was stored.
 * </ul>
 *
 * <p>A consumer belongs to the token that stores it: a {@code read} or {@code write} token stores
 * and drops its own consumers only, an {@code admin} token anyone's; every token sees only the
 * consumers of the namespaces it may read.
 */
final class ConsumerRoutes {
  private final SkadeCatalog catalog;

  ConsumerRoutes(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /** Handles the consumers' routes; false for any other path. */
  boolean handle(Exchange exchange) throws Exception {
    if (exchange.pathIs("skade", "v1", "consumers")) {
      exchange.route("GET " + SkadeProtocol.CONSUMERS);
      CommitFeedRoutes.requireGet(exchange);
      exchange.require(Role.READ);
      Caller caller = exchange.caller();
      exchange.json(
          200,
          SkadeProtocol.consumers(
              list(exchange).stream()
                  .filter(consumer -> caller.reaches(consumer.cursor().table().namespace()))
                  .toList()));
      return true;
    }
    if (!exchange.pathIs("skade", "v1", "consumers", "*")) {
      return false;
    }
    String consumerId = exchange.decoded(3);
    // Its own consumers are a reader's; another's only an admin's (checked by the catalog).
    String owner = exchange.caller().role() == Role.ADMIN ? null : exchange.caller().name();
    switch (exchange.method()) {
      case "GET" -> {
        exchange.route("GET " + SkadeProtocol.CONSUMERS + "/{id}");
        StoredConsumer consumer =
            readable(exchange, consumerId).orElseThrow(() -> unknown(consumerId));
        exchange.json(200, SkadeProtocol.consumer(consumer));
      }
      case "PUT" -> {
        // Storing a cursor is idempotent by itself: a retry stores the same cursor again.
        exchange.route("PUT " + SkadeProtocol.CONSUMERS + "/{id}");
        readable(exchange, consumerId);
        ConsumerCursor cursor = SkadeProtocol.cursor(exchange.body());
        exchange.require(Role.READ, cursor.table().namespace());
        exchange.json(
            200, SkadeProtocol.consumer(catalog.storeConsumer(consumerId, cursor, owner)));
      }
      case "DELETE" -> {
        exchange.route("DELETE " + SkadeProtocol.CONSUMERS + "/{id}");
        readable(exchange, consumerId);
        String key = exchange.header(RESTUtil.IDEMPOTENCY_KEY_HEADER);
        if (key != null && catalog.idempotencyRecord(key).isPresent()) {
          exchange.empty(204); // dropped by the first try, whose answer was lost
          return true;
        }
        boolean dropped;
        try {
          dropped =
              key == null
                  ? catalog.dropConsumer(consumerId, owner)
                  : catalog.withIdempotencyKey(key, () -> catalog.dropConsumer(consumerId, owner));
        } catch (IdempotencyKeyUsedException e) {
          dropped = true; // a racing retry of the same request dropped it
        }
        if (!dropped) {
          throw unknown(consumerId);
        }
        exchange.empty(204);
      }
      default -> {
        exchange.route(exchange.method() + " " + SkadeProtocol.CONSUMERS + "/{id}");
        throw new UnsupportedOperationException(
            exchange.method()
                + " is not served on "
                + SkadeProtocol.CONSUMERS
                + "/{id}; use GET, PUT or DELETE");
      }
    }
    return true;
  }

  /**
   * The consumer stored under {@code consumerId}, if any, refusing a caller that may not read its
   * table's namespace.
   */
  private Optional<StoredConsumer> readable(Exchange exchange, String consumerId) {
    Optional<StoredConsumer> consumer = catalog.consumer(consumerId);
    consumer.ifPresent(c -> exchange.require(Role.READ, c.cursor().table().namespace()));
    return consumer;
  }

  private List<StoredConsumer> list(Exchange exchange) {
    String namespace = exchange.query("namespace");
    String table = exchange.query("table");
    if (namespace == null && table == null) {
      return catalog.consumers();
    }
    if (namespace == null || table == null) {
      throw new IllegalArgumentException(
          "query parameters 'namespace' and 'table' go together:"
              + " give both to list a table's consumers, or neither to list all");
    }
    TableIdentifier identifier =
        TableIdentifier.of(RESTUtil.namespaceFromQueryParam(namespace), table);
    exchange.require(Role.READ, identifier.namespace());
    return catalog.consumers(identifier);
  }

  private static NotFoundException unknown(String consumerId) {
    return new NotFoundException("no consumer '%s' is stored in the catalog", consumerId);
  }
}
