package io.skade.server;

import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.IdempotencyKeyUsedException;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.remote.SkadeProtocol;
import java.util.List;
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
      exchange.json(200, SkadeProtocol.consumers(list(exchange)));
      return true;
    }
    if (!exchange.pathIs("skade", "v1", "consumers", "*")) {
      return false;
    }
    String consumerId = exchange.decoded(3);
    switch (exchange.method()) {
      case "GET" -> {
        exchange.route("GET " + SkadeProtocol.CONSUMERS + "/{id}");
        exchange.json(
            200,
            SkadeProtocol.consumer(
                catalog.consumer(consumerId).orElseThrow(() -> unknown(consumerId))));
      }
      case "PUT" -> {
        // Storing a cursor is idempotent by itself: a retry stores the same cursor again.
        exchange.route("PUT " + SkadeProtocol.CONSUMERS + "/{id}");
        ConsumerCursor cursor = SkadeProtocol.cursor(exchange.body());
        exchange.json(200, SkadeProtocol.consumer(catalog.storeConsumer(consumerId, cursor)));
      }
      case "DELETE" -> {
        exchange.route("DELETE " + SkadeProtocol.CONSUMERS + "/{id}");
        String key = exchange.header(RESTUtil.IDEMPOTENCY_KEY_HEADER);
        if (key != null && catalog.idempotencyRecord(key).isPresent()) {
          exchange.empty(204); // dropped by the first try, whose answer was lost
          return true;
        }
        boolean dropped;
        try {
          dropped =
              key == null
                  ? catalog.dropConsumer(consumerId)
                  : catalog.withIdempotencyKey(key, () -> catalog.dropConsumer(consumerId));
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
    return catalog.consumers(
        TableIdentifier.of(RESTUtil.namespaceFromQueryParam(namespace), table));
  }

  private static NotFoundException unknown(String consumerId) {
    return new NotFoundException("no consumer '%s' is stored in the catalog", consumerId);
  }
}
