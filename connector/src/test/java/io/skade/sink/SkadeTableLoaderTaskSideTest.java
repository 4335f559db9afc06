package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogMissingException;
import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The sink's committer opens the catalog on a TaskManager through {@link SkadeTableLoader}: on a
 * machine without the catalog it fails, naming the path and the {@code uri} option, instead of
 * silently creating a second, empty catalog there.
 */
class SkadeTableLoaderTaskSideTest {
  @TempDir Path root;

  @Test
  void aCommitterOnAMachineWithoutTheCatalogFailsAndCreatesNothing() {
    Path warehouse = root.resolve("warehouse");
    SkadeTableLoader loader =
        new SkadeTableLoader(
            Map.of("warehouse", warehouse.toString()), TableIdentifier.of("shop", "orders"));
    assertThatThrownBy(loader::open)
        .isInstanceOf(CatalogMissingException.class)
        .hasMessageContaining(warehouse.toString())
        .hasMessageContaining("'uri'");
    assertThat(loader.isOpen()).isFalse();
    assertThat(warehouse).doesNotExist();
  }
}
