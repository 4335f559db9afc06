package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Handles on catalogs, which share one open store per directory in a JVM. */
class SharedCatalogsTest {
  @TempDir Path warehouse;

  private Map<String, String> properties() {
    return Map.of("warehouse", warehouse.toString());
  }

  @Test
  void twoAcquiresShareOneStoreThatTheLastReleaseCloses() throws Exception {
    SharedCatalogs.Handle first = SharedCatalogs.acquire(properties());
    SharedCatalogs.Handle second = SharedCatalogs.acquire(properties());
    SkadeCatalog firstCatalog = first.catalog();
    assertThat(second.catalog().sharesStoreWith(firstCatalog)).isTrue();
    try (SkadeCatalog plain = Catalogs.open(warehouse)) {
      assertThat(plain.sharesStoreWith(firstCatalog)).as("a plain open of the directory").isTrue();
      assertThat(SharedCatalogs.holds(properties())).isEqualTo(3);
    }

    first.close();
    first.close(); // a second close is not a second release
    assertThat(SharedCatalogs.holds(properties())).isEqualTo(1);
    assertThatThrownBy(first::catalog)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("was released");
    assertThatThrownBy(firstCatalog::listNamespaces).hasMessageContaining("is closed");
    Catalogs.createTable(second.catalog(), "t");

    SkadeCatalog secondCatalog = second.catalog();
    second.close();
    assertThat(SharedCatalogs.holds(properties())).isZero();
    assertThatThrownBy(secondCatalog::listNamespaces).hasMessageContaining("is closed");
    try (SkadeCatalog plain = Catalogs.open(warehouse)) {
      assertThat(plain.sharesStoreWith(secondCatalog)).as("a store opened again").isFalse();
      assertThat(plain.tableExists(TableIdentifier.of(Catalogs.DB, "t"))).isTrue();
    }
  }

  @Test
  void theOpenerMayReleaseFirstOrLastAndANewAcquireAfterwardsOpensAgain() throws Exception {
    SharedCatalogs.Handle opener = SharedCatalogs.acquire(properties());
    SharedCatalogs.Handle a = SharedCatalogs.acquire(properties());
    SharedCatalogs.Handle b = SharedCatalogs.acquire(properties());
    SkadeCatalog shared = a.catalog();
    b.close();
    opener.close();
    a.catalog().createNamespace(Namespace.of("still-open"));
    a.close();
    assertThatThrownBy(shared::listNamespaces).hasMessageContaining("is closed");

    try (SharedCatalogs.Handle again = SharedCatalogs.acquire(properties())) {
      assertThat(again.catalog().sharesStoreWith(shared)).isFalse();
      assertThat(again.catalog().namespaceExists(Namespace.of("still-open"))).isTrue();
    }
  }

  @Test
  void twoSpellingsOfOneDirectoryShareOneStore() throws Exception {
    Path real = Files.createDirectories(warehouse.resolve("real"));
    Path link = Files.createSymbolicLink(warehouse.resolve("link"), real);
    // The first spelling goes through the link to a directory that does not exist yet.
    try (SharedCatalogs.Handle viaLink =
            SharedCatalogs.acquire(
                Map.of(
                    "warehouse",
                    warehouse.toString(),
                    "catalog.path",
                    link.resolve("cat").toString()));
        SharedCatalogs.Handle direct =
            SharedCatalogs.acquire(
                Map.of(
                    "warehouse",
                    warehouse + "/",
                    "catalog.path",
                    real.resolve("cat").toString(),
                    "catalog.access",
                    "owner"))) {
      assertThat(direct.catalog().sharesStoreWith(viaLink.catalog())).isTrue();
    }
  }

  @Test
  void conflictingPropertiesAreRefusedAndTheSharedCatalogKeepsWorking() throws Exception {
    String catalogPath = warehouse.resolve("_catalog").toString();
    try (SharedCatalogs.Handle owner = SharedCatalogs.acquire(properties())) {
      assertThatThrownBy(
              () ->
                  SharedCatalogs.acquire(
                      Map.of("warehouse", warehouse.toString(), "catalog.access", "follower")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(catalogPath)
          .hasMessageContaining("already open in this JVM with other properties")
          .hasMessageContaining("catalog.access is 'owner' there and 'follower' here");
      Path other = warehouse.resolve("other");
      assertThatThrownBy(
              () ->
                  SharedCatalogs.acquire(
                      Map.of("warehouse", other.toString(), "catalog.path", catalogPath)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("warehouse is '" + warehouse + "' there and '" + other + "' here");
      assertThatThrownBy(
              () ->
                  SharedCatalogs.acquire(
                      Map.of("warehouse", warehouse.toString(), "consumer.expiry-timeout", "1h")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("consumer.expiry-timeout is '7d' there and '1h' here");

      owner.catalog().createNamespace(Namespace.of("n"));
    }
    try (SkadeCatalog plain = Catalogs.open(warehouse)) {
      assertThat(plain.namespaceExists(Namespace.of("n"))).as("the refusals held nothing").isTrue();
    }
  }

  @Test
  void concurrentAcquiresAndReleasesAlwaysSeeAnOpenCatalogAndLeaveNothingOpen() throws Exception {
    int threads = 6;
    int rounds = 40;
    Set<SkadeCatalog> instances =
        Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> workers = new ArrayList<>();
    for (int w = 0; w < threads; w++) {
      Namespace mine = Namespace.of("w" + w);
      workers.add(
          pool.submit(
              (Callable<Void>)
                  () -> {
                    go.await();
                    for (int i = 0; i < rounds; i++) {
                      try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties())) {
                        SkadeCatalog catalog = handle.catalog();
                        instances.add(catalog);
                        // Held: the catalog stays open whatever the other threads release
                        // meanwhile.
                        catalog.setProperties(mineExisting(catalog, mine), Map.of("round", "" + i));
                        assertThat(catalog.loadNamespaceMetadata(mine))
                            .containsEntry("round", "" + i);
                      }
                    }
                    return null;
                  }));
    }
    go.countDown();
    for (Future<?> worker : workers) {
      worker.get();
    }
    pool.shutdown();
    assertThat(instances).isNotEmpty();
    try (SkadeCatalog plain = Catalogs.open(warehouse)) {
      assertThat(plain.listNamespaces()).hasSize(threads);
    }
  }

  private static Namespace mineExisting(SkadeCatalog catalog, Namespace namespace) {
    if (!catalog.namespaceExists(namespace)) {
      catalog.createNamespace(namespace);
    }
    return namespace;
  }
}
