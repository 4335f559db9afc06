package io.skade;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeRuntime;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.FlinkJobs;
import io.skade.lookup.LookupCaches;
import io.skade.scan.MetadataCache;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The engine's process-wide state lives in the {@link SkadeRuntime}: shared within a runtime, fresh
 * after a reset, and its threads and lineage stopped with the runtime it belonged to.
 */
class EngineRuntimeTest {
  @TempDir Path dir;

  @BeforeEach
  @AfterEach
  void startFromNothing() {
    SkadeRuntime.reset();
  }

  @Test
  void theMetadataCacheIsSharedWithinARuntimeAndItsPrefetchThreadStopsWithIt() throws Exception {
    MetadataCache cache = MetadataCache.shared();
    assertThat(MetadataCache.shared()).isSameAs(cache);
    try (SkadeCatalog catalog = catalog(Map.of())) {
      FileIO io = catalog.io();
      // A prefetch of a file that is not there: the hint fails quietly, its thread stays.
      cache.prefetch(dir.resolve("missing.metadata.json").toString(), io, "t", 1L);
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> !prefetchThreads().isEmpty());
    Set<Thread> threads = prefetchThreads();

    SkadeRuntime.reset();
    // The pool reports itself terminated from its worker's last steps: the thread then ends.
    for (Thread thread : threads) {
      thread.join(5_000);
    }
    assertThat(threads).allSatisfy(thread -> assertThat(thread.isAlive()).isFalse());
    assertThat(MetadataCache.shared()).isNotSameAs(cache);
  }

  @Test
  void lookupCachesAreSharedByUsersOfOneRuntimeAndReleasesFromAnOldOneLeaveTheNewAlone() {
    LookupCaches.Handle first = LookupCaches.acquire();
    LookupCaches.Handle second = LookupCaches.acquire();
    assertThat(second.caches()).isSameAs(first.caches());

    SkadeRuntime.reset();
    try (LookupCaches.Handle fresh = LookupCaches.acquire()) {
      assertThat(fresh.caches()).isNotSameAs(first.caches());
      first.close();
      second.close();
      try (LookupCaches.Handle another = LookupCaches.acquire()) {
        assertThat(another.caches())
            .as("still held: the old handles' releases did not count against it")
            .isSameAs(fresh.caches());
      }
    }
  }

  @Test
  void lookupCachesOutliveTheirLastUserForAWhileSoARestartedJobFindsThemFilled() {
    String kept = LookupCaches.KEPT_PROPERTY;
    try {
      System.setProperty(kept, "60000");
      LookupCaches.Handle job = LookupCaches.acquire();
      LookupCaches caches = job.caches();
      job.close();
      try (LookupCaches.Handle restarted = LookupCaches.acquire()) {
        assertThat(restarted.caches()).as("acquired again within the while").isSameAs(caches);
      }

      System.setProperty(kept, "0");
      LookupCaches.Handle once = LookupCaches.acquire();
      once.close();
      try (LookupCaches.Handle next = LookupCaches.acquire()) {
        assertThat(next.caches()).as("kept 0 ms: emptied at the release").isNotSameAs(caches);
      }

      System.setProperty(kept, "200");
      LookupCaches.Handle last = LookupCaches.acquire();
      LookupCaches lastCaches = last.caches();
      last.close();
      await()
          .atMost(Duration.ofSeconds(10))
          .pollInterval(Duration.ofMillis(500)) // each look holds them again for the while
          .untilAsserted(
              () -> {
                try (LookupCaches.Handle later = LookupCaches.acquire()) {
                  assertThat(later.caches()).as("acquired after the while").isNotSameAs(lastCaches);
                }
              });
    } finally {
      System.clearProperty(kept);
    }
  }

  @Test
  void submittedJobsAndRunningLineageAreTheRuntimes() throws Exception {
    FlinkJobs.submitted(new FlinkJobs.Job("j1", "job", List.of(), List.of()));
    assertThat(FlinkJobs.job("j1")).isPresent();
    SkadeCatalog catalog =
        catalog(
            Map.of(
                CatalogLineage.SINK,
                "openlineage",
                CatalogLineage.OPENLINEAGE_URL,
                "file:" + dir.resolve("lineage.jsonl")));
    CatalogLineage.Running running = CatalogLineage.Running.of(catalog).orElseThrow();
    assertThat(CatalogLineage.running()).containsExactly(running);

    SkadeRuntime.reset();
    assertThat(FlinkJobs.job("j1")).isEmpty();
    assertThat(CatalogLineage.running()).isEmpty();
    assertThat(CatalogLineage.Running.of(catalog)).isEmpty();
    catalog.close(); // its store closed with the old runtime: nothing left to close
    assertThat(CatalogLineage.running()).isEmpty();
  }

  private SkadeCatalog catalog(Map<String, String> extra) {
    Map<String, String> props = new java.util.HashMap<>(extra);
    props.put("warehouse", dir.resolve("wh").toString());
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("runtime", props);
    return catalog;
  }

  private static Set<Thread> prefetchThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(thread -> thread.getName().equals("skade-metadata-prefetch"))
        .filter(Thread::isAlive)
        .collect(Collectors.toSet());
  }
}
