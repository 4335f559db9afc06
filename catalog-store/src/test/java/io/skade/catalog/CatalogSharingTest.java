package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@link SkadeCatalog} opened on one directory in a JVM, whichever way, shares one open
 * store, committer, commit feed and set of services, until the last of them closes.
 */
class CatalogSharingTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path root;

  /** The ways a user opens a catalog: each returns an open catalog and what closes it. */
  private enum Way {
    LOAD_CATALOG {
      @Override
      Opened open(String name, Map<String, String> props) {
        Catalog catalog =
            CatalogUtil.loadCatalog(SkadeCatalog.class.getName(), name, props, new Configuration());
        return new Opened((SkadeCatalog) catalog, ((SkadeCatalog) catalog)::close);
      }
    },
    BUILD_ICEBERG_CATALOG {
      @Override
      Opened open(String name, Map<String, String> props) {
        Map<String, String> options = new HashMap<>(props);
        options.put("catalog-impl", SkadeCatalog.class.getName());
        SkadeCatalog catalog = (SkadeCatalog) CatalogUtil.buildIcebergCatalog(name, options, null);
        return new Opened(catalog, catalog::close);
      }
    },
    CONSTRUCTOR {
      @Override
      Opened open(String name, Map<String, String> props) {
        SkadeCatalog catalog = new SkadeCatalog();
        catalog.initialize(name, props);
        return new Opened(catalog, catalog::close);
      }
    },
    SHARED_CATALOGS {
      @Override
      Opened open(String name, Map<String, String> props) {
        SharedCatalogs.Handle handle = SharedCatalogs.acquire(name, props);
        return new Opened(handle.catalog(), handle::close);
      }
    };

    abstract Opened open(String name, Map<String, String> props);
  }

  private record Opened(SkadeCatalog catalog, AutoCloseable closer) {
    void close() throws Exception {
      closer.close();
    }
  }

  private static Map<String, String> props(Path warehouse) {
    return Map.of("warehouse", warehouse.toString());
  }

  @Test
  void catalogsOpenedEveryWayCommitThroughOneStoreAndSeeEachOthersCommits() throws Exception {
    Path warehouse = root.resolve("wh");
    List<Opened> opened = new ArrayList<>();
    for (Way way : Way.values()) {
      opened.add(way.open(way.name().toLowerCase(), props(warehouse)));
    }
    List<SkadeCatalog> catalogs = opened.stream().map(Opened::catalog).toList();
    assertThat(SharedCatalogs.holds(props(warehouse))).isEqualTo(Way.values().length);
    List<CommitSubscription> feeds = catalogs.stream().map(SkadeCatalog::subscribeCommits).toList();

    Table created = Catalogs.createTable(catalogs.get(0), "t");
    // Every catalog appends to the same table from its own thread: the compare-and-swaps of all
    // of them meet in one committer, which Iceberg's retries resolve.
    int appendsPerCatalog = 5;
    ExecutorService pool = Executors.newFixedThreadPool(catalogs.size());
    List<Future<?>> writers = new ArrayList<>();
    for (int c = 0; c < catalogs.size(); c++) {
      SkadeCatalog catalog = catalogs.get(c);
      int writer = c;
      writers.add(
          pool.submit(
              (Callable<Void>)
                  () -> {
                    Table table = catalog.loadTable(T);
                    for (int i = 0; i < appendsPerCatalog; i++) {
                      Catalogs.append(table, "w" + writer + "-" + i);
                    }
                    return null;
                  }));
    }
    for (Future<?> writer : writers) {
      writer.get(1, TimeUnit.MINUTES);
    }
    pool.shutdown();

    long last = catalogs.get(0).commitSeq();
    int snapshots = catalogs.size() * appendsPerCatalog;
    for (SkadeCatalog catalog : catalogs) {
      assertThat(catalog.commitSeq()).as(catalog.name()).isEqualTo(last);
      Table table = catalog.loadTable(T);
      assertThat(table.uuid()).isEqualTo(created.uuid());
      assertThat(table.snapshots()).as(catalog.name() + " loads every snapshot").hasSize(snapshots);
      assertThat(seqs(catalog.commitsSince(0)))
          .as(catalog.name() + "'s log")
          .isEqualTo(LongStream.rangeClosed(1, last).boxed().toList());
      for (SkadeCatalog other : catalogs) {
        assertThat(catalog.sharesStoreWith(other)).isTrue();
      }
    }
    assertThat(last).as("one create and one commit per append").isEqualTo(1 + snapshots);
    for (int c = 0; c < feeds.size(); c++) {
      assertThat(drain(feeds.get(c), last))
          .as("feed of " + catalogs.get(c).name())
          .isEqualTo(LongStream.rangeClosed(1, last).boxed().toList());
    }
    assertThat(catalogs.get(0).statistics().batchesWritten())
        .as("the store's counters, however many catalogs share it")
        .isEqualTo(catalogs.get(3).statistics().batchesWritten());

    for (Opened o : opened) {
      o.close();
    }
    assertThat(SharedCatalogs.holds(props(warehouse))).isZero();
    try (SkadeCatalog again = Catalogs.open(warehouse)) {
      assertThat(again.loadTable(T).snapshots()).hasSize(snapshots);
      assertThat(seqs(again.commitsSince(0))).hasSize((int) last);
    }
  }

  @Test
  void closingTheCatalogsInEveryOrderKeepsTheStoreUntilTheLastAndLeavesItReopenable()
      throws Exception {
    List<List<Integer>> orders =
        List.of(
            List.of(0, 1, 2),
            List.of(0, 2, 1),
            List.of(1, 0, 2),
            List.of(1, 2, 0),
            List.of(2, 0, 1),
            List.of(2, 1, 0));
    Way[] ways = {Way.LOAD_CATALOG, Way.CONSTRUCTOR, Way.SHARED_CATALOGS};
    for (List<Integer> order : orders) {
      String context = "closing order " + order;
      Path warehouse = root.resolve("wh" + order.get(0) + order.get(1) + order.get(2));
      List<Opened> opened = new ArrayList<>();
      for (int i = 0; i < ways.length; i++) {
        opened.add(ways[i].open("c" + i, props(warehouse)));
      }
      List<CommitSubscription> feeds =
          opened.stream().map(o -> o.catalog().subscribeCommits()).toList();
      Catalogs.createTable(opened.get(order.get(0)).catalog(), "t");
      int appends = 0;
      for (int step = 0; step < order.size(); step++) {
        int closing = order.get(step);
        SkadeCatalog closed = opened.get(closing).catalog();
        opened.get(closing).close();
        opened.get(closing).close(); // a second close changes nothing

        assertThat(SharedCatalogs.holds(props(warehouse)))
            .as(context)
            .isEqualTo(order.size() - step - 1);
        assertThatThrownBy(() -> closed.loadTable(T))
            .as(context)
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("skade catalog 'c" + closing + "'")
            .hasMessageContaining("is closed");
        assertThatThrownBy(() -> Catalogs.append(closed.loadTable(T), "x"))
            .as(context)
            .hasMessageContaining("is closed");
        assertThatThrownBy(closed::subscribeCommits).as(context).hasMessageContaining("is closed");
        // Its subscription ends: once what it was handed is taken, a poll says it is closed.
        CommitSubscription feed = feeds.get(closing);
        assertThatThrownBy(
                () -> {
                  while (feed.poll(Duration.ofSeconds(5)) != null) {
                    // taking what was delivered before the close
                  }
                })
            .as(context)
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("closed");

        // The others go on committing through the same store and hear of it.
        for (int later = step + 1; later < order.size(); later++) {
          SkadeCatalog open = opened.get(order.get(later)).catalog();
          Catalogs.append(open.loadTable(T), "after-" + step + "-" + later);
          appends++;
          long seq = open.commitSeq();
          for (int other = step + 1; other < order.size(); other++) {
            SkadeCatalog listening = opened.get(order.get(other)).catalog();
            assertThat(listening.loadTable(T).snapshots()).as(context).hasSize(appends);
            assertThat(drain(feeds.get(order.get(other)), seq)).as(context).endsWith(seq);
          }
        }
      }
      try (SkadeCatalog again = Catalogs.open(warehouse)) {
        assertThat(again.loadTable(T).snapshots()).as(context).hasSize(appends);
        assertThat(seqs(again.commitsSince(0)))
            .as(context)
            .isEqualTo(LongStream.rangeClosed(1, 1 + appends).boxed().toList());
      }
    }
  }

  @Test
  void aStoresServicesRunOnceAndOutliveTheCatalogThatOpenedIt() throws Exception {
    Path warehouse = root.resolve("wh");
    Map<String, String> props =
        Map.of("warehouse", warehouse.toString(), RecordingService.KEY, "outlive");
    SkadeCatalog opener = Way.LOAD_CATALOG.open("opener", props).catalog();
    RecordingService.Recording recording = RecordingService.RECORDINGS.get("outlive");
    SkadeCatalog second = Way.CONSTRUCTOR.open("second", props).catalog();
    assertThat(RecordingService.RECORDINGS.get("outlive"))
        .as("started once for the store, not again for the second catalog")
        .isSameAs(recording);
    assertThat(recording.catalog).isNotSameAs(opener).isNotSameAs(second);
    assertThat(recording.catalog.sharesStoreWith(second)).isTrue();

    opener.close();
    recording.catalog.close(); // the store's own catalog closes only with the store
    Table table = Catalogs.createTable(second, "t");
    Catalogs.append(table, "f");
    long snapshot = second.loadTable(T).currentSnapshot().snapshotId();
    long seq = second.commitSeq();
    await().atMost(WAIT).until(() -> recording.seqs.contains(seq) || !recording.failures.isEmpty());
    assertThat(recording.failures).isEmpty();
    assertThat(recording.seqs).containsExactly(1L, 2L);
    assertThat(recording.loadedSnapshots).containsExactly(snapshot);
    assertThat(recording.closed).isFalse();

    second.close();
    assertThat(recording.closed).as("stopped with the store").isTrue();
    assertThat(recording.failures).isEmpty();
    assertThatThrownBy(() -> recording.catalog.loadTable(T)).hasMessageContaining("is closed");
  }

  @Test
  void propertiesThatDefineTheStoreMustAgreeAndAnErrorNamesBothValues() throws Exception {
    Path warehouse = root.resolve("wh");
    String catalogPath = warehouse.resolve("_catalog").toString();
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Function<Map<String, String>, Map<String, String>> with =
          extra -> {
            Map<String, String> props = new HashMap<>(props(warehouse));
            props.putAll(extra);
            return props;
          };
      assertRefused(
          with.apply(Map.of("catalog.access", "follower")),
          catalogPath,
          "catalog.access is 'owner' there and 'follower' here");
      Path other = root.resolve("other");
      assertRefused(
          Map.of("warehouse", other.toString(), "catalog.path", catalogPath),
          catalogPath,
          "warehouse is '" + warehouse + "' there and '" + other + "' here");
      assertRefused(
          with.apply(Map.of("commit.max-batch-size", "1")),
          catalogPath,
          "commit.max-batch-size is '4096' there and '1' here");
      assertRefused(
          with.apply(Map.of("consumer.expiry-timeout", "1h")),
          catalogPath,
          "consumer.expiry-timeout is '7d' there and '1h' here");
      assertRefused(
          with.apply(Map.of(RecordingService.KEY, "x")),
          catalogPath,
          RecordingService.KEY + " is unset there and 'x' here");
      assertThat(SharedCatalogs.holds(props(warehouse)))
          .as("the refusals hold nothing")
          .isEqualTo(1);

      // The same settings written otherwise, and the properties each catalog has for itself.
      Map<String, String> own =
          with.apply(
              Map.of(
                  "warehouse",
                  "file:" + warehouse + "/",
                  "consumer.expiry-timeout",
                  "168h",
                  "commit.max-batch-size",
                  "4096",
                  "commit-feed.buffer-size",
                  "2",
                  "table-default.owner",
                  "mine",
                  "unique-table-location",
                  "true"));
      try (SkadeCatalog mine = Way.CONSTRUCTOR.open("mine", own).catalog()) {
        assertThat(mine.sharesStoreWith(owner)).isTrue();
        assertThat(mine.name()).isEqualTo("mine");
        Table table = Catalogs.createTable(mine, "t");
        assertThat(table.properties()).containsEntry("owner", "mine");
        assertThat(table.location()).startsWith("file:" + warehouse + "/db/t-");
        Table other2 =
            owner.buildTable(TableIdentifier.of(Catalogs.DB, "u"), Catalogs.SCHEMA).create();
        assertThat(other2.properties()).doesNotContainKey("owner");
        assertThat(other2.location()).isEqualTo(warehouse + "/db/u");
        try (CommitSubscription small = mine.subscribeCommits()) {
          for (int i = 0; i < 3; i++) {
            Catalogs.append(owner.loadTable(T), "f" + i);
          }
          // The committer publishes a group's events before it completes the next group, so
          // once this change returns, all three were delivered.
          owner.createNamespace(org.apache.iceberg.catalog.Namespace.of("after"));
          assertThatThrownBy(() -> small.poll(Duration.ofSeconds(5)))
              .as("its own default buffer of 2")
              .isInstanceOf(CommitFeedLaggedException.class);
        }
      }
      owner.createNamespace(org.apache.iceberg.catalog.Namespace.of("n"));
    }
    try (SkadeCatalog plain = Catalogs.open(warehouse)) {
      assertThat(plain.namespaceExists(org.apache.iceberg.catalog.Namespace.of("n"))).isTrue();
      assertThat(plain.loadTable(T).snapshots()).hasSize(3);
    }
  }

  private static void assertRefused(
      Map<String, String> props, String catalogPath, String difference) {
    assertThatThrownBy(() -> Way.CONSTRUCTOR.open("refused", props))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("skade catalog at " + catalogPath)
        .hasMessageContaining("already open in this JVM with other properties")
        .hasMessageContaining(difference);
  }

  @Test
  void followersOfOneDirectoryShareOneSecondaryInstance() throws Exception {
    Path warehouse = root.resolve("wh");
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Catalogs.createTable(owner, "t");
    }
    Map<String, String> follow =
        Map.of("warehouse", warehouse.toString(), "catalog.access", "follower");
    try (SkadeCatalog a = Way.CONSTRUCTOR.open("a", follow).catalog();
        SharedCatalogs.Handle b = SharedCatalogs.acquireOrFollow(props(warehouse))) {
      assertThat(b.catalog().isFollower()).as("acquireOrFollow joins this JVM's follower").isTrue();
      assertThat(b.catalog().sharesStoreWith(a)).isTrue();
      assertThat(b.catalog().tableExists(T)).isTrue();
      assertRefused(
          props(warehouse),
          warehouse.resolve("_catalog").toString(),
          "catalog.access is 'follower' there and 'owner' here");
    }
  }

  @Test
  void anotherProcessIsRefusedTheDirectoryWhileCatalogsOfThisJvmShareIt() throws Exception {
    Path warehouse = root.resolve("wh");
    try (SkadeCatalog a = Catalogs.open(warehouse);
        SkadeCatalog b = Way.LOAD_CATALOG.open("b", props(warehouse)).catalog()) {
      Catalogs.createTable(a, "t");
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      Process child =
          new ProcessBuilder(
                  java.toString(),
                  "-cp",
                  System.getProperty("java.class.path"),
                  OpenCatalogChild.class.getName(),
                  warehouse.toString())
              .redirectError(root.resolve("child.err").toFile())
              .start();
      String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(child.waitFor(1, TimeUnit.MINUTES)).isTrue();
      assertThat(out)
          .as(() -> "child stderr: " + readQuietly(root.resolve("child.err")))
          .startsWith("REFUSED " + CatalogLockedException.class.getName())
          .contains(warehouse.resolve("_catalog").toString())
          .contains("held by another process");
      Catalogs.append(b.loadTable(T), "f");
      assertThat(a.loadTable(T).snapshots()).hasSize(1);
    }
  }

  @Test
  void aWarehouseWhoseNameHasSpacesPercentHashPlusAndNonAsciiCharactersWorks() throws Exception {
    Path warehouse = root.resolve("a b%c#d+é").resolve("wh");
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "f");
      assertThat(table.location()).isEqualTo(warehouse + "/db/t");
      assertThat(catalog.catalogPath()).isEqualTo(warehouse.resolve("_catalog").toString());
      assertThat(Files.exists(warehouse.resolve("_catalog").resolve("CURRENT"))).isTrue();
      try (Stream<Path> metadata = Files.list(warehouse.resolve("db/t/metadata"))) {
        assertThat(metadata.map(p -> p.getFileName().toString()))
            .as("metadata files, in the directory named as it is")
            .anyMatch(name -> name.endsWith(".metadata.json"))
            .anyMatch(name -> name.startsWith("snap-"));
      }
      // Spelled as a URI the way Hadoop and Iceberg write locations: the same directory.
      Map<String, String> asUri = Map.of("warehouse", "file:" + warehouse);
      try (SkadeCatalog viaUri = Way.LOAD_CATALOG.open("uri", asUri).catalog()) {
        assertThat(viaUri.sharesStoreWith(catalog)).isTrue();
        Catalogs.append(viaUri.loadTable(T), "g");
      }
    }
    try (SkadeCatalog again =
        Way.CONSTRUCTOR.open("again", Map.of("warehouse", "file://" + warehouse)).catalog()) {
      Table table = again.loadTable(T);
      assertThat(table.snapshots()).hasSize(2);
      assertThat(table.io().newInputFile(table.currentSnapshot().manifestListLocation()).exists())
          .isTrue();
      assertThat(seqs(again.commitsSince(0))).containsExactly(1L, 2L, 3L);
    }
  }

  /** Polls {@code feed} until it delivered {@code upTo}; returns the seqs taken. */
  private static List<Long> drain(CommitSubscription feed, long upTo) {
    List<Long> seqs = new ArrayList<>();
    // In this thread, with no pause between polls: each poll waits on the feed itself.
    await("the feed delivering commit " + upTo)
        .atMost(WAIT)
        .pollInSameThread()
        .pollInterval(Duration.ZERO)
        .until(
            () -> {
              CommitEvent event = feed.poll(Duration.ofMillis(100));
              if (event != null) {
                seqs.add(event.commitSeq());
              }
              return !seqs.isEmpty() && seqs.get(seqs.size() - 1) >= upTo;
            });
    return seqs;
  }

  private static List<Long> seqs(Iterable<CommitEvent> events) {
    List<Long> seqs = new ArrayList<>();
    events.forEach(event -> seqs.add(event.commitSeq()));
    return seqs;
  }

  private static String readQuietly(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }
}
