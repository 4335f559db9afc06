package io.skade.server;

import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.remote.SkadeProtocol;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.rest.RESTUtil;

/**
 * Table locks over HTTP ({@link SkadeProtocol#LOCKS}), taken and released in the catalog as a local
 * holder takes them, so maintenance on any JVM shares one lock per table.
 *
 * <ul>
 *   <li>{@code POST /skade/v1/locks?namespace=NS&table=T&name=N} with {@code {"holder",
 *       "lease-ms"}}: tries to take it, answers {@code {"held": ..}};
 *   <li>{@code GET} the same: the lock, 404 when no one holds it;
 *   <li>{@code DELETE} the same with {@code &holder=H}: releases it if H holds it, answers {@code
 *       {"released": ..}}.
 * </ul>
 */
final class LockRoutes {
  private final SkadeCatalog catalog;

  LockRoutes(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /** Handles the lock routes; false for any other path. */
  boolean handle(Exchange exchange) throws Exception {
    if (!exchange.pathIs("skade", "v1", "locks")) {
      return false;
    }
    exchange.route(exchange.method() + " " + SkadeProtocol.LOCKS);
    TableIdentifier table =
        TableIdentifier.of(
            RESTUtil.namespaceFromQueryParam(required(exchange, "namespace")),
            required(exchange, "table"));
    String name = required(exchange, "name");
    // Locks guard maintenance: taking or releasing one is an admin's; anyone may look.
    exchange.require(
        exchange.method().equals("GET") ? Caller.Role.READ : Caller.Role.ADMIN, table.namespace());
    switch (exchange.method()) {
      case "POST" -> {
        String body = exchange.body();
        exchange.json(
            200,
            SkadeProtocol.flag(
                "held",
                catalog.tryLock(
                    table, name, SkadeProtocol.lockHolder(body), SkadeProtocol.lockLease(body))));
      }
      case "GET" -> {
        MaintenanceLock lock =
            catalog
                .lock(table, name)
                .orElseThrow(
                    () -> new NotFoundException("no one holds the %s lock of %s", name, table));
        exchange.json(200, SkadeProtocol.lock(lock));
      }
      case "DELETE" ->
          exchange.json(
              200,
              SkadeProtocol.flag(
                  "released", catalog.unlock(table, name, required(exchange, "holder"))));
      default ->
          throw new UnsupportedOperationException(
              exchange.method()
                  + " is not served on "
                  + SkadeProtocol.LOCKS
                  + "; use POST, GET or DELETE");
    }
    return true;
  }

  private static String required(Exchange exchange, String parameter) {
    String value = exchange.query(parameter);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(
          "query parameter '"
              + parameter
              + "' is missing; a lock"
              + " route takes 'namespace', 'table' and 'name' (and 'holder' to release)");
    }
    return value;
  }
}
