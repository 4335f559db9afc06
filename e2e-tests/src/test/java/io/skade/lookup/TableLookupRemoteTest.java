package io.skade.lookup;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.server.ServerProcess;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import io.skade.testing.SlowAnswersProxy;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Lookups of a table a skade server owns (a child JVM), from a process that is its client: a writer
 * commits through Iceberg's REST client, and every probe made after this process's commit feed
 * delivered a commit sees that commit, in every caching mode, with no poll interval to wait out (it
 * is an hour). Killed with SIGKILL and restarted, the server is ridden through: the probes after it
 * see the commits made after it.
 */
class TableLookupRemoteTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "dim");
  private static final TableIdentifier OTHER = TableIdentifier.of("db", "other");

  @TempDir Path root;

  @ParameterizedTest
  @EnumSource(TableLookup.Caching.class)
  @Timeout(180)
  void aProbeAfterTheFeedDeliveredACommitSeesIt(TableLookup.Caching caching) throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      RESTCatalog rest = remote.rest();
      TableWriter writer = new TableWriter(rest.createTable(TABLE, SCHEMA));
      TableWriter other = new TableWriter(rest.createTable(OTHER, SCHEMA));
      writer.append(List.of(row(1, "v0"), row(2, "w")));

      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        TableLookup<Record> lookup = lookup(connection, settings(caching), caches);
        assertThat(names(lookup, 1)).containsExactly("v0");
        try (CommitSubscription feed = connection.feed().subscribeCommits()) {
          String key = connection.feed().commitTableKey(TABLE);
          for (int i = 1; i <= 12; i++) {
            other.upsert(List.of(row(1, "elsewhere" + i))); // another table's commits too
            long seq = commitSeq(writer.upsert(List.of(row(1, "v" + i))).snapshotId(), connection);
            awaitDelivered(feed, key, seq);
            assertThat(names(lookup, 1))
                .as("the probe after commit %d was delivered", i)
                .containsExactly("v" + i);
            assertThat(names(lookup, 2)).containsExactly("w");
          }
          writer.deleteKeys(List.of(row(2, null)));
          awaitDelivered(feed, key, connection.feed().commitSeq());
          assertThat(names(lookup, 2)).as("a deleted key").isEmpty();

          remote.server().killAndRestart(1_000); // SIGKILL; the same directory and port
          assertThat(names(lookup, 1))
              .as("a probe after the restart, before any commit")
              .containsExactly("v12");
          Table reloaded = rest.loadTable(TABLE);
          long seq =
              commitSeq(
                  new TableWriter(reloaded).upsert(List.of(row(1, "after"))).snapshotId(),
                  connection);
          awaitDelivered(feed, key, seq);
          assertThat(names(lookup, 1))
              .as("the first commit after the restart")
              .containsExactly("after");
        }
      }
    }
  }

  /**
   * Through a server, a lookup builds each new version of its table from the one it holds and the
   * updates the commit feed carried, rather than load the whole table (whose metadata grows with
   * every snapshot) from the server again: the probe after each commit sees it, and the server
   * answers no request for the table, its metadata file or its updates while the probes run (its
   * metrics count them by route).
   */
  @Test
  @Timeout(180)
  void aCommitsVersionIsBuiltFromTheFeedNotLoadedFromTheServer() throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      TableWriter writer = new TableWriter(remote.rest().createTable(TABLE, SCHEMA));
      writer.append(List.of(row(1, "v0"), row(2, "w")));
      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        TableLookup<Record> lookup =
            lookup(connection, settings(TableLookup.Caching.PROBE), caches);
        assertThat(names(lookup, 1)).containsExactly("v0");
        try (CommitSubscription feed = connection.feed().subscribeCommits()) {
          String key = connection.feed().commitTableKey(TABLE);
          for (int i = 1; i <= 10; i++) {
            long seq = commitSeq(writer.upsert(List.of(row(1, "v" + i))).snapshotId(), connection);
            awaitDelivered(feed, key, seq);
            double asked = metadataRequests(remote.server());
            assertThat(names(lookup, 1))
                .as("the probe after commit %d was delivered", i)
                .containsExactly("v" + i);
            assertThat(names(lookup, 2)).containsExactly("w");
            assertThat(metadataRequests(remote.server()))
                .as("requests for the table's metadata by the probes after commit %d", i)
                .isEqualTo(asked);
          }
        }
      }
    }
  }

  /**
   * With a poll interval of zero, a probe made right after another client's commit returned sees
   * it, without waiting for this process's feed to deliver it (what a delta join relies on: the row
   * a source in another process emitted is found by the next probe). A probe at once after a commit
   * races the feed's long-poll, and loses it after the server was away (the long-poll backs off)
   * unless it catches up with the server first.
   */
  @ParameterizedTest(name = "{0}, asynchronous {1}") // ROWS probes as PROBE does, at its snapshot
  @CsvSource({"PROBE, false", "FULL, false", "PROBE, true"})
  @Timeout(180)
  void aProbeWithAZeroPollIntervalSeesEveryCommitDurableBeforeIt(
      TableLookup.Caching caching, boolean async) throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      RESTCatalog rest = remote.rest();
      TableWriter writer = new TableWriter(rest.createTable(TABLE, SCHEMA));
      writer.append(List.of(row(0, "v0")));

      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        TableLookup<Record> fresh = lookup(connection, settings(caching, Duration.ZERO), caches);
        Function<Long, List<String>> probe = id -> async ? namesAsync(fresh, id) : names(fresh, id);
        for (long i = 1; i <= 40; i++) {
          writer.upsert(List.of(row(i, "v" + i))); // returns once durable on the server
          assertThat(probe.apply(i))
              .as("the probe right after commit %d returned", i)
              .containsExactly("v" + i);
        }
        // The feed's long-poll backs off while the server is away (SIGKILL): a commit made as
        // soon as it is back reaches this process only when the long-poll resumes.
        remote.server().killAndRestart(1_000);
        TableWriter afterRestart = new TableWriter(rest.loadTable(TABLE));
        for (long i = 41; i <= 45; i++) {
          afterRestart.upsert(List.of(row(i, "v" + i)));
          assertThat(probe.apply(i))
              .as("the probe right after commit %d, after the restart", i)
              .containsExactly("v" + i);
        }
      }
    }
  }

  /**
   * The lookups of one process share one catch-up with the server: connections opened with equal
   * properties share a session, and asynchronous probes under way together wait for one check. Each
   * probe still sees every commit that was durable when it began, while another client commits
   * without pause and the server's answers reach this process 400 ms late (a proxy holds them): a
   * probe counted as covered by a check or a long-poll answer sent before it began would miss the
   * commits made in between.
   */
  @Test
  @Timeout(180)
  void probesSharingCatchUpsEachSeeEveryCommitDurableWhenTheyBegan() throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      TableWriter writer = new TableWriter(remote.rest().createTable(TABLE, SCHEMA));
      writer.append(List.of(row(1, "0")));
      ExecutorService probers = Executors.newFixedThreadPool(16);
      Map<String, String> late = new HashMap<>(remote.properties());
      try (SlowAnswersProxy proxy =
              new SlowAnswersProxy(URI.create(remote.server().uri()), Duration.ofMillis(400));
          CatalogConnection first = CatalogConnection.open(withUri(late, proxy.uri()));
          CatalogConnection second = CatalogConnection.open(withUri(late, proxy.uri()))) {
        assertThat(second.feed())
            .as("one session per server and properties")
            .isSameAs(first.feed());
        List<TableLookup<Record>> lookups =
            List.of(
                lookup(first, settings(TableLookup.Caching.PROBE, Duration.ZERO), caches),
                lookup(second, settings(TableLookup.Caching.ROWS, Duration.ZERO), caches));
        // The writer alone commits from here on: its n-th commit is the log's commit base + n.
        long base = first.feed().commitSeq();
        AtomicLong durable = new AtomicLong();
        AtomicBoolean writing = new AtomicBoolean(true);
        CompletableFuture<Void> commits =
            CompletableFuture.runAsync(
                () -> {
                  try {
                    for (long version = 1; version <= 40; version++) {
                      writer.upsert(List.of(row(1, Long.toString(version))));
                      durable.set(version); // the upsert returned: durable on the server
                    }
                  } finally {
                    writing.set(false);
                  }
                });
        List<String> stale = new CopyOnWriteArrayList<>();
        AtomicLong probes = new AtomicLong();
        List<CompletableFuture<Void>> running = new ArrayList<>();
        for (int p = 0; p < 16; p++) {
          TableLookup<Record> lookup = lookups.get(p % 2);
          CatalogConnection connection = p % 2 == 0 ? first : second;
          running.add(
              CompletableFuture.runAsync(
                  () -> {
                    while (writing.get()) {
                      long before = durable.get();
                      connection.caughtUp().join();
                      // What the catch-up promises, before a table load could hide a lapse.
                      long known = connection.commitsSeen(TABLE);
                      if (before > 0 && known < base + before) {
                        stale.add(
                            "knew commit " + known + " after " + (base + before) + " was durable");
                      }
                      long seen = Long.parseLong(namesAsync(lookup, 1).get(0));
                      probes.incrementAndGet();
                      if (seen < before) {
                        stale.add(
                            "saw version " + seen + " after version " + before + " was durable");
                      }
                    }
                  },
                  probers));
        }
        commits.get(120, TimeUnit.SECONDS);
        CompletableFuture.allOf(running.toArray(CompletableFuture[]::new))
            .get(60, TimeUnit.SECONDS);
        assertThat(stale).isEmpty();
        assertThat(probes.get()).as("probes made while the writer committed").isGreaterThan(32);
      } finally {
        probers.shutdownNow();
      }
    }
  }

  @Test
  @Timeout(120)
  void aLookupOfATableTheServerLacksFailsNamingIt() throws Exception {
    try (ServerProcess server = new ServerProcess(root);
        LookupCaches.Handle caches = LookupCaches.acquire();
        CatalogConnection connection =
            CatalogConnection.open(Map.of("uri", server.uri(), "token", ServerProcess.TOKEN))) {
      assertThatThrownBy(() -> lookup(connection, settings(TableLookup.Caching.PROBE), caches))
          .isInstanceOf(NoSuchTableException.class)
          .hasMessageContaining("db.dim");
    }
  }

  private static Map<String, String> withUri(Map<String, String> properties, String uri) {
    properties.put("uri", uri);
    return properties;
  }

  /** The commit_seq the server gave the snapshot (asked of the server, not of the feed). */
  /**
   * Lookups as of a time through a server: each commit's stamp, as the server's log holds it,
   * answers with that commit's rows and the microsecond before it with the commit before; the
   * retention's hold is stored on the server, whose expiry guard then refuses to expire the history
   * a client's snapshot expiry would remove.
   */
  @Test
  @Timeout(120)
  void aLookupAsOfATimeThroughAServerAnswersWithThatTimesRowsAndHoldsTheHistory() throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      RESTCatalog rest = remote.rest();
      TableWriter writer = new TableWriter(rest.createTable(TABLE, SCHEMA));
      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        List<Long> stamps = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          long snapshot = writer.upsert(List.of(row(1, "v" + i))).snapshotId();
          long stamp = connection.commitOf(TABLE, snapshot).orElseThrow().tsMicros();
          stamps.add(stamp);
          await().until(() -> System.currentTimeMillis() * 1000 > stamp + 1000);
        }
        Duration retention = Duration.ofHours(1);
        TableLookup<Record> lookup =
            lookup(
                connection,
                settings(TableLookup.Caching.PROBE).withAsOfRetention(retention),
                caches);
        for (int i = 0; i < stamps.size(); i++) {
          assertThat(namesAsOf(lookup, stamps.get(i), 1)).containsExactly("v" + i);
          assertThat(namesAsOf(lookup, stamps.get(i) - 1, 1))
              .isEqualTo(i == 0 ? List.of() : List.of("v" + (i - 1)));
        }
        assertThat(connection.consumers().consumer(TableLookup.holdId(TABLE, retention)))
            .as("the hold, stored on the server")
            .isPresent();
        Table table = rest.loadTable(TABLE);
        assertThatThrownBy(
                () ->
                    table
                        .expireSnapshots()
                        .expireOlderThan(System.currentTimeMillis() + 1)
                        .retainLast(1)
                        .commit())
            .as("the server's expiry guard keeps the history the hold needs")
            .hasMessageContaining(TableLookup.holdId(TABLE, retention));
      }
    }
  }

  private static List<String> namesAsOf(TableLookup<Record> lookup, long micros, long id) {
    try {
      return lookup.lookupAsOf(micros, List.of(id)).stream()
          .map(r -> (String) r.getField("name"))
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static long commitSeq(long snapshotId, CatalogConnection connection) {
    return connection.commitOf(TABLE, snapshotId).orElseThrow().commitSeq();
  }

  /** Takes the feed's events until one of {@code tableKey} at or after {@code seq}. */
  private static void awaitDelivered(CommitSubscription feed, String tableKey, long seq) {
    // In this thread, with no pause between polls: each poll waits on the feed itself.
    await("the feed delivering commit " + seq)
        .atMost(Duration.ofSeconds(60))
        .pollInSameThread()
        .pollInterval(Duration.ZERO)
        .until(
            () -> {
              CommitEvent event = feed.poll(Duration.ofSeconds(1));
              return event != null && event.commitSeq() >= seq && event.tableKey().equals(tableKey);
            });
  }

  /**
   * The requests for a table's metadata the server answered so far, from its metrics: loads of the
   * table, its metadata files, and the updates that made one.
   */
  private static double metadataRequests(ServerProcess server) throws Exception {
    List<String> routes =
        List.of(
            "route=\"GET /v1/namespaces/{namespace}/tables/{table}\"",
            "route=\"GET " + SkadeProtocol.METADATA + "\"",
            "route=\"GET " + SkadeProtocol.METADATA_UPDATES + "\"");
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(server.uri() + "/metrics"))
            .header("Authorization", "Bearer " + ServerProcess.TOKEN)
            .build();
    return HttpClient.newHttpClient()
        .send(request, HttpResponse.BodyHandlers.ofString())
        .body()
        .lines()
        .filter(
            line ->
                line.startsWith("skade_http_requests_seconds_count{")
                    && routes.stream().anyMatch(line::contains))
        .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
        .sum();
  }

  private static List<String> names(TableLookup<Record> lookup, long id) {
    try {
      return lookup.lookup(List.of(id)).stream().map(r -> (String) r.getField("name")).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * As an asynchronous lookup function probes ({@link TableLookup#lookupAsync}): read at once on
   * another thread while the catch-up is under way, read again when it shows a commit.
   */
  private static List<String> namesAsync(TableLookup<Record> lookup, long id) {
    return lookup
        .lookupAsync(() -> lookup.lookupCaughtUp(List.of(id)), ForkJoinPool.commonPool())
        .join()
        .stream()
        .map(r -> (String) r.getField("name"))
        .toList();
  }

  /** A lookup of {@code TABLE} through {@code connection}, its rows Iceberg's records. */
  private static TableLookup<Record> lookup(
      CatalogConnection connection, TableLookup.Settings settings, LookupCaches.Handle caches) {
    return new TableLookup<>(
        connection, TABLE, settings, caches.caches(), table -> Function.identity());
  }

  private static TableLookup.Settings settings(TableLookup.Caching caching) {
    return settings(caching, Duration.ofHours(1));
  }

  private static TableLookup.Settings settings(TableLookup.Caching caching, Duration pollInterval) {
    return new TableLookup.Settings(
        List.of("id"),
        null,
        pollInterval,
        caching,
        caching == TableLookup.Caching.ROWS ? 100 : 0,
        Expressions.alwaysTrue(),
        0);
  }
}
