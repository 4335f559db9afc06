package io.skade;

import io.skade.catalog.SkadeCatalog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.Namespace;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real skade catalog on a fresh local warehouse with namespace {@code db}, opened before each
 * test and closed (and deleted) after it: {@code @RegisterExtension final TestCatalog catalog =
 * new TestCatalog();}.
 */
public final class TestCatalog implements BeforeEachCallback, AfterEachCallback {
  private Path warehouse;
  private SkadeCatalog catalog;

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    warehouse = Files.createTempDirectory("skade-test-");
    catalog = new SkadeCatalog();
    catalog.initialize("test", Map.of("warehouse", warehouse.toString()));
    catalog.createNamespace(Namespace.of("db"));
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    catalog.close();
    try (Stream<Path> paths = Files.walk(warehouse)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    }
  }

  public SkadeCatalog get() {
    return catalog;
  }
}
