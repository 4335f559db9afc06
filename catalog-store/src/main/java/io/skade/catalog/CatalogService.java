package io.skade.catalog;

import java.util.Map;

/**
 * Something an owner {@link SkadeCatalog} runs for as long as it is open, found with Java's
 * {@link java.util.ServiceLoader}: modules above the catalog store (skade's lineage) hook into
 * every owner catalog without the store depending on them. Followers run none.
 */
public interface CatalogService {

  /**
   * Starts this service for {@code catalog}, just opened with {@code properties}; returns what
   * to close before the catalog closes, or null when the properties do not ask for the service.
   *
   * @throws IllegalArgumentException when the properties configure the service wrongly; the
   *     catalog then fails to open
   */
  AutoCloseable start(SkadeCatalog catalog, Map<String, String> properties);
}
