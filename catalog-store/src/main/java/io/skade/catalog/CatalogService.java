package io.skade.catalog;

import java.util.Map;

/**
 * Something an owner catalog store runs for as long as it is open, found with Java's {@link
 * java.util.ServiceLoader}: modules above the catalog store (skade's lineage) hook into every owner
 * store without the store depending on them. Followers run none.
 *
 * <p>A service is started once per store, however many {@link SkadeCatalog}s of the JVM share it,
 * on a catalog of the store's own that stays open until the store closes.
 */
public interface CatalogService {

  /**
   * Starts this service for {@code catalog}, just opened with {@code properties}; returns what to
   * close before the store closes, or null when the properties do not ask for the service.
   *
   * @throws IllegalArgumentException when the properties configure the service wrongly; the catalog
   *     then fails to open
   */
  AutoCloseable start(SkadeCatalog catalog, Map<String, String> properties);

  /**
   * The settings of this service that {@code properties} make, defaults filled in, by property key.
   * Every catalog sharing an open store must make the same ones, since the store runs the service
   * once: a catalog whose settings differ fails to open, naming both.
   */
  default Map<String, String> settings(Map<String, String> properties) {
    return Map.of();
  }
}
