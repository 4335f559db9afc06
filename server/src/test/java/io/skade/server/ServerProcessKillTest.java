package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.RemoteCommitFeed;
import io.skade.catalog.SkadeServerClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.LongStream;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server as its own process ({@link ServerMain}, a child JVM), killed with SIGKILL while a
 * client commits through REST and a remote subscriber follows the feed, then restarted on the
 * same directory and port: the subscriber rides through and receives every commit once, in
 * order and gapless, and every commit acknowledged before the kill is in the log after it.
 */
class ServerProcessKillTest {
  private static final Pattern LISTENING =
      Pattern.compile("skade server listening on (http://[^:]+:(\\d+))");
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");
  @TempDir Path root;
  private final List<Process> children = new ArrayList<>();

  @AfterEach
  void killChildren() {
    children.forEach(Process::destroyForcibly);
  }

  /** Starts the server process; its URI once it prints that it listens. */
  private String startServer(int port) throws Exception {
    Path log = root.resolve("server-" + children.size() + ".log");
    Process process = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        // Surefire's java.class.path is a manifest-only jar whose Class-Path the child inherits.
        "-cp", System.getProperty("java.class.path"), ServerMain.class.getName(),
        "--warehouse", root.resolve("warehouse").toString(),
        "--port", String.valueOf(port),
        "--token-file", root.resolve("tokens").toString())
        .redirectErrorStream(true).start();
    children.add(process);
    CompletableFuture<String> uri = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = lines.readLine()) != null; ) {
          Files.writeString(log, line + System.lineSeparator(), StandardCharsets.UTF_8,
              java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
          Matcher matcher = LISTENING.matcher(line);
          if (matcher.find()) {
            uri.complete(matcher.group(1));
          }
        }
      } catch (Exception e) {
        uri.completeExceptionally(e);
      }
      uri.completeExceptionally(new IllegalStateException("the server process ended; its output"
          + " is in " + log));
    }, "server-output");
    reader.setDaemon(true);
    reader.start();
    return uri.get(60, TimeUnit.SECONDS);
  }

  @Test
  @Timeout(240)
  void aRemoteSubscriberRidesThroughAServerKilledAndRestartedAndMissesNoCommit()
      throws Exception {
    Files.writeString(root.resolve("tokens"), ServerFixture.TOKEN + "\n");
    String uri = startServer(0);
    int port = Integer.parseInt(uri.substring(uri.lastIndexOf(':') + 1));
    Map<String, String> props = new HashMap<>(Map.of(CatalogProperties.URI, uri,
        "token", ServerFixture.TOKEN));
    SkadeServerClient client = new SkadeServerClient(java.net.URI.create(uri),
        ServerFixture.TOKEN, Duration.ofSeconds(60));
    try (RESTCatalog rest = new RESTCatalog(); RemoteCommitFeed feed = new RemoteCommitFeed(client)) {
      rest.initialize("rest", props);
      rest.createNamespace(Namespace.of("db"));
      rest.createTable(TABLE, new Schema(Types.NestedField.required(1, "id",
          Types.LongType.get())));

      // The subscriber: the live feed, the log after a lag, each commit after its cursor.
      CommitSubscription subscription = feed.subscribeCommits(256);
      long start = subscription.startCursor();
      List<CommitEvent> received = new ArrayList<>();
      AtomicBoolean stop = new AtomicBoolean();
      CompletableFuture<Void> following = CompletableFuture.runAsync(() -> {
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
      CompletableFuture<Integer> commits = CompletableFuture.supplyAsync(() -> {
        int failures = 0;
        for (int n = 0; committing.get(); n++) {
          try {
            Table table = rest.loadTable(TABLE);
            table.updateProperties().set("n", String.valueOf(n)).commit();
            acknowledged.add(((HasTableOperations) table).operations().current()
                .metadataFileLocation());
          } catch (RuntimeException e) { // the server is down: not acknowledged, go on
            failures++;
            sleep(100);
          }
        }
        return failures;
      });

      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged.size() >= 40);
      Process first = children.get(0);
      first.destroyForcibly(); // SIGKILL
      assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
      int beforeKill = acknowledged.size();
      sleep(2000);
      String again = startServer(port);
      assertThat(again).isEqualTo(uri);
      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged.size() >= beforeKill + 40);
      committing.set(false);
      int failures = commits.get(60, TimeUnit.SECONDS);

      long end = client.commitSeq();
      System.out.println("ServerProcessKillTest: " + acknowledged.size() + " commits acknowledged,"
          + " " + beforeKill + " before the kill; " + failures + " calls failed while the server"
          + " was down; log " + start + ".." + end);
      await().atMost(Duration.ofSeconds(60)).until(() -> {
        synchronized (received) {
          return !received.isEmpty() && received.get(received.size() - 1).commitSeq() >= end;
        }
      });
      stop.set(true);
      following.get(10, TimeUnit.SECONDS);

      List<Long> seqs = received.stream().map(CommitEvent::commitSeq).toList();
      assertThat(seqs).as("commit_seqs the subscriber received (the committer failed %d times"
          + " while the server was down)", failures)
          .containsExactlyElementsOf(LongStream.rangeClosed(start + 1, end).boxed().toList());
      Set<String> inLog = new LinkedHashSet<>();
      client.commits(start, 10_000, Duration.ZERO).commits()
          .forEach(commit -> inLog.add(commit.metadataLocation()));
      assertThat(inLog).as("the log after the restart holds every acknowledged commit")
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
