package io.skade.server;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.remote.SkadeProtocol;
import java.util.stream.Collectors;
import org.apache.iceberg.MetadataUpdateParser;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NotFoundException;

/**
 * Table metadata files over HTTP ({@link SkadeProtocol#METADATA}): {@code GET
 * /skade/v1/metadata?location=L} answers the JSON of metadata file {@code L} of the catalog's
 * warehouse, from memory when the server committed or read it lately, so that a client following
 * commits asks the store for none of them. Each file's JSON is kept once written (up to {@link
 * #KEPT_BYTES}), for every client that follows the table asks for the same files.
 *
 * <p>{@code GET /skade/v1/metadata/updates?location=L&base=B} answers {@code {"updates": [...]}}:
 * the updates (Iceberg REST's JSON) that made file {@code L} from file {@code B}, when this server
 * committed {@code L} onto {@code B} lately with updates a reader can replay ({@link
 * CommittedMetadata#updates}); 404 otherwise. A client that holds {@code B} applies them instead of
 * parsing {@code L}, which grows with every snapshot the table keeps.
 */
final class MetadataRoutes {
  /** The most JSON kept, in characters. */
  static final long KEPT_BYTES = 64L << 20;

  private static final String SUFFIX = ".metadata.json";

  private final SkadeCatalog catalog;
  private final String warehouse;
  private final Cache<String, String> kept =
      Caffeine.newBuilder()
          .maximumWeight(KEPT_BYTES)
          .weigher((String location, String json) -> location.length() + json.length())
          .build();

  MetadataRoutes(SkadeCatalog catalog) {
    this.catalog = catalog;
    this.warehouse = catalog.warehouse().replaceAll("/+$", "") + "/";
  }

  /** Handles the metadata routes; false for any other path. */
  boolean handle(Exchange exchange) {
    if (exchange.pathIs("skade", "v1", "metadata", "updates")) {
      updates(exchange);
      return true;
    }
    if (!exchange.pathIs("skade", "v1", "metadata")) {
      return false;
    }
    exchange.route("GET " + SkadeProtocol.METADATA);
    CommitFeedRoutes.requireGet(exchange);
    exchange.require(Caller.Role.READ);
    String location = exchange.query("location");
    if (location == null || location.isEmpty()) {
      throw new IllegalArgumentException(
          "query parameter 'location' is missing; give the metadata file to read, e.g."
              + " location="
              + warehouse
              + "db/t/metadata/00001-<uuid>.metadata.json");
    }
    if (!location.startsWith(warehouse)
        || !location.endsWith(SUFFIX)
        || location.endsWith(".gz" + SUFFIX)) {
      throw new NotFoundException(
          "%s is not a metadata file this server serves: it serves the plain *%s files under its"
              + " warehouse %s; read others from the store",
          location, SUFFIX, warehouse);
    }
    requireReaches(exchange, location);
    exchange.json(
        200,
        kept.get(
            location,
            key -> TableMetadataParser.toJson(CommittedMetadata.readKnown(catalog.io(), key))));
    return true;
  }

  /**
   * Refuses a token limited to some namespaces a metadata file outside their directories: tables
   * live under {@code <warehouse>/<namespace levels>/}.
   */
  private void requireReaches(Exchange exchange, String location) {
    Caller caller = exchange.caller();
    boolean inside =
        caller.namespaces().isEmpty()
            || caller.namespaces().stream()
                .anyMatch(
                    namespace ->
                        location.startsWith(
                            warehouse + String.join("/", namespace.levels()) + "/"));
    if (!inside) {
      throw new ForbiddenException(
          "token '%s' is limited to namespaces %s, and %s is not under their directories in %s;"
              + " use a token whose namespaces include the table's",
          caller.name(), caller.namespaces(), location, warehouse);
    }
  }

  private void updates(Exchange exchange) {
    exchange.route("GET " + SkadeProtocol.METADATA_UPDATES);
    CommitFeedRoutes.requireGet(exchange);
    exchange.require(Caller.Role.READ);
    String location = exchange.query("location");
    String base = exchange.query("base");
    if (location == null || location.isEmpty() || base == null || base.isEmpty()) {
      throw new IllegalArgumentException(
          "query parameters 'location' and 'base' are both needed: the metadata file to build and"
              + " the one the client holds, e.g. location="
              + warehouse
              + "db/t/metadata/00002-<uuid>.metadata.json&base="
              + warehouse
              + "db/t/metadata/00001-<uuid>.metadata.json");
    }
    requireReaches(exchange, location);
    CommittedMetadata.Updates updates = CommittedMetadata.updates(location);
    if (updates == null || !updates.base().equals(base)) {
      throw new NotFoundException(
          "this server holds no updates from %s to %s; read the whole metadata file",
          base, location);
    }
    exchange.json(
        200,
        updates.updates().stream()
            .map(MetadataUpdateParser::toJson)
            .collect(Collectors.joining(",", "{\"updates\":[", "]}")));
  }
}
