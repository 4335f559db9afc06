package io.skade.catalog;

import java.util.Map;

/**
 * Child process of {@link CatalogSharingTest}: opens the catalog of the warehouse {@code args[0]}
 * as its owner and prints one line, {@code OPENED} or {@code REFUSED <exception class> <message>},
 * then exits.
 */
public final class OpenCatalogChild {
  private OpenCatalogChild() {}

  public static void main(String[] args) throws Exception {
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("child", Map.of("warehouse", args[0]));
      System.out.println("OPENED");
    } catch (RuntimeException e) {
      System.out.println("REFUSED " + e.getClass().getName() + " " + e.getMessage());
    }
    System.out.flush();
  }
}
