package io.skade.lookup;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitSubscription;
import io.skade.server.ServerProcess;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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
        TableLookup<Record> lookup =
            new TableLookup<>(
                connection,
                TABLE,
                settings(caching),
                caches.caches(),
                table -> Function.identity());
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
   * With a poll interval of zero, a probe made right after another client's commit returned sees
   * it, without waiting for this process's feed to deliver it (what a delta join relies on: the row
   * a source in another process emitted is found by the next probe). A probe at once after a commit
   * races the feed's long-poll, and loses it after the server was away (the long-poll backs off)
   * unless it catches up with the server first.
   */
  @ParameterizedTest // the row cache probes as PROBE does, at the snapshot LatestTable gives
  @EnumSource(
      value = TableLookup.Caching.class,
      names = {"PROBE", "FULL"})
  @Timeout(180)
  void aProbeWithAZeroPollIntervalSeesEveryCommitDurableBeforeIt(TableLookup.Caching caching)
      throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        LookupCaches.Handle caches = LookupCaches.acquire()) {
      RESTCatalog rest = remote.rest();
      TableWriter writer = new TableWriter(rest.createTable(TABLE, SCHEMA));
      writer.append(List.of(row(0, "v0")));

      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        TableLookup<Record> fresh =
            new TableLookup<>(
                connection,
                TABLE,
                settings(caching, Duration.ZERO),
                caches.caches(),
                table -> Function.identity());
        for (int i = 1; i <= 40; i++) {
          writer.upsert(List.of(row(i, "v" + i))); // returns once durable on the server
          assertThat(names(fresh, i))
              .as("the probe right after commit %d returned", i)
              .containsExactly("v" + i);
        }
        // The feed's long-poll backs off while the server is away (SIGKILL): a commit made as
        // soon as it is back reaches this process only when the long-poll resumes.
        remote.server().killAndRestart(1_000);
        TableWriter afterRestart = new TableWriter(rest.loadTable(TABLE));
        for (int i = 41; i <= 45; i++) {
          afterRestart.upsert(List.of(row(i, "v" + i)));
          assertThat(names(fresh, i))
              .as("the probe right after commit %d, after the restart", i)
              .containsExactly("v" + i);
        }
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
      assertThatThrownBy(
              () ->
                  new TableLookup<>(
                      connection,
                      TABLE,
                      settings(TableLookup.Caching.PROBE),
                      caches.caches(),
                      table -> Function.identity()))
          .isInstanceOf(NoSuchTableException.class)
          .hasMessageContaining("db.dim");
    }
  }

  /** The commit_seq the server gave the snapshot (asked of the server, not of the feed). */
  private static long commitSeq(long snapshotId, CatalogConnection connection) {
    return connection.commitOf(TABLE, snapshotId).orElseThrow().commitSeq();
  }

  /** Waits until this process's feed has delivered the table's commit {@code seq}. */
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

  private static List<String> names(TableLookup<Record> lookup, long id) throws Exception {
    return lookup.lookup(List.of(id)).stream().map(r -> (String) r.getField("name")).toList();
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
