package io.skade.testing;

import static org.awaitility.Awaitility.await;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.StoredConsumer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.Namespace;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real skade catalog on a fresh local warehouse with namespace {@code db}, opened before each
 * test and closed (and deleted) after it: {@code @RegisterExtension final TestCatalog catalog = new
 * TestCatalog();} (or {@code new TestCatalog(Map.of(...))} with more catalog properties). It is
 * acquired through {@link SharedCatalogs}, so a source or sink of a MiniCluster job in the test's
 * JVM shares it.
 */
public class TestCatalog implements BeforeEachCallback, AfterEachCallback {
  private final Map<String, String> extraProperties;
  private Path warehouse;
  private Map<String, String> properties;
  private SharedCatalogs.Handle handle;

  public TestCatalog() {
    this(Map.of());
  }

  /** A catalog opened with {@code extraProperties} besides its warehouse. */
  public TestCatalog(Map<String, String> extraProperties) {
    this.extraProperties = Map.copyOf(extraProperties);
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    warehouse = Files.createTempDirectory("skade-test-");
    Map<String, String> props = new HashMap<>(extraProperties);
    props.put("warehouse", warehouse.toString());
    properties = Map.copyOf(props);
    handle = SharedCatalogs.acquire("test", properties);
    handle.catalog().createNamespace(Namespace.of("db"));
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    handle.close();
    try (Stream<Path> paths = Files.walk(warehouse)) {
      paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    }
  }

  public SkadeCatalog get() {
    return handle.catalog();
  }

  /**
   * Waits until a consumer {@code id} is stored (a source stores one on a completed checkpoint) and
   * returns it; polls the catalog for at most a minute, the source tests' own timeout.
   */
  public StoredConsumer awaitConsumer(String id) {
    return await("consumer " + id + " stored")
        .atMost(Duration.ofMinutes(1))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> get().consumer(id), Optional::isPresent)
        .get();
  }

  /** The catalog's properties, for components that open it themselves (a source). */
  public Map<String, String> properties() {
    return properties;
  }
}
