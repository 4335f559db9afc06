package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.remote.RemoteCommitFeed;
import io.skade.catalog.remote.SkadeServerClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.LongStream;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server as its own process ({@link ServerMain}, a child JVM), killed with SIGKILL while a
 * client commits through REST and a remote subscriber follows the feed, then restarted on the same
 * directory and port: the subscriber rides through and receives every commit once, in order and
 * gapless, and every commit acknowledged before the kill is in the log after it.
 */
class ServerProcessKillTest {
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");
  @TempDir Path root;

  @Test
  @Timeout(240)
  void aRemoteSubscriberRidesThroughAServerKilledAndRestartedAndMissesNoCommit() throws Exception {
    ServerProcess server = new ServerProcess(root);
    String uri = server.uri();
    Map<String, String> props =
        new HashMap<>(Map.of(CatalogProperties.URI, uri, "token", ServerProcess.TOKEN));
    SkadeServerClient client =
        new SkadeServerClient(
            java.net.URI.create(uri), ServerProcess.TOKEN, Duration.ofSeconds(60));
    try (server;
        RESTCatalog rest = new RESTCatalog();
        RemoteCommitFeed feed = new RemoteCommitFeed(client)) {
      rest.initialize("rest", props);
      rest.createNamespace(Namespace.of("db"));
      rest.createTable(
          TABLE, new Schema(Types.NestedField.required(1, "id", Types.LongType.get())));

      // The subscriber: the live feed, the log after a lag, each commit after its cursor.
      CommitSubscription subscription = feed.subscribeCommits(256);
      long start = subscription.startCursor();
      List<CommitEvent> received = new ArrayList<>();
      AtomicBoolean stop = new AtomicBoolean();
      CompletableFuture<Void> following =
          CompletableFuture.runAsync(
              () -> {
                long cursor = start;
                while (!stop.get()) {
                  try {
                    CommitEvent event = subscription.poll(Duration.ofMillis(200));
                    if (event != null && event.commitSeq() > cursor) {
                      synchronized (received) {
                        received.add(event);
                      }
                      cursor = event.commitSeq();
                    }
                  } catch (CommitFeedLaggedException e) {
                    for (CommitEvent replayed : feed.commitsSince(cursor)) {
                      synchronized (received) {
                        received.add(replayed);
                      }
                      cursor = replayed.commitSeq();
                    }
                  } catch (InterruptedException e) {
                    return;
                  }
                }
              });

      // The committer: property updates; a commit counts when its call returned.
      Set<String> acknowledged = ConcurrentHashMap.newKeySet();
      AtomicBoolean committing = new AtomicBoolean(true);
      CompletableFuture<Integer> commits =
          CompletableFuture.supplyAsync(
              () -> {
                int failures = 0;
                for (int n = 0; committing.get(); n++) {
                  try {
                    Table table = rest.loadTable(TABLE);
                    table.updateProperties().set("n", String.valueOf(n)).commit();
                    acknowledged.add(
                        ((HasTableOperations) table).operations().current().metadataFileLocation());
                  } catch (RuntimeException e) { // the server is down: not acknowledged, go on
                    failures++;
                    sleep(100);
                  }
                }
                return failures;
              });

      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged.size() >= 40);
      int beforeKill = acknowledged.size();
      server.killAndRestart(2000); // SIGKILL, down 2 s, the same directory and port
      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged.size() >= beforeKill + 40);
      committing.set(false);
      int failures = commits.get(60, TimeUnit.SECONDS);

      long end = client.commitSeq();
      System.out.println(
          "ServerProcessKillTest: "
              + acknowledged.size()
              + " commits acknowledged,"
              + " "
              + beforeKill
              + " before the kill; "
              + failures
              + " calls failed while the server"
              + " was down; log "
              + start
              + ".."
              + end);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(
              () -> {
                synchronized (received) {
                  return !received.isEmpty()
                      && received.get(received.size() - 1).commitSeq() >= end;
                }
              });
      stop.set(true);
      following.get(10, TimeUnit.SECONDS);

      List<Long> seqs = received.stream().map(CommitEvent::commitSeq).toList();
      assertThat(seqs)
          .as(
              "commit_seqs the subscriber received (the committer failed %d times"
                  + " while the server was down)",
              failures)
          .containsExactlyElementsOf(LongStream.rangeClosed(start + 1, end).boxed().toList());
      Set<String> inLog = new LinkedHashSet<>();
      client
          .commits(start, 10_000, Duration.ZERO)
          .commits()
          .forEach(commit -> inLog.add(commit.metadataLocation()));
      assertThat(inLog)
          .as("the log after the restart holds every acknowledged commit")
          .containsAll(acknowledged);
      assertThat(received.stream().map(CommitEvent::metadataLocation).toList())
          .containsAll(acknowledged);
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
