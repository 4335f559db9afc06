package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.remote.RemoteCommitFeed;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import io.skade.catalog.remote.SkadeServerClient;
import io.skade.testing.ParquetFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commit feed over HTTP: a parked long-poll answers when a commit lands (not when its wait
 * ends), or empty when its wait ends, or at once on shutdown; a remote subscriber that stalls while
 * thousands of commits land gets every one of them once, in order, by the log. The cursor a client
 * asks for is the catalog's newest commit, and a wrong token is refused at once.
 */
class CommitFeedOverHttpTest {
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  /** The one field a replay sets to its own time. */
  private static final String UPDATED = "\"last-updated-ms\"\\s*:\\s*\\d+";

  @TempDir Path root;
  private ServerFixture fixture;
  private SkadeCatalog owner;
  private SkadeServerClient client;

  @BeforeEach
  void start() throws Exception {
    fixture = new ServerFixture(root);
    owner = fixture.server.catalog();
    owner.createNamespace(Namespace.of("db"));
    client =
        new SkadeServerClient(fixture.server.uri(), ServerFixture.TOKEN, Duration.ofSeconds(10));
  }

  @AfterEach
  void stop() throws Exception {
    if (fixture != null) {
      fixture.close();
    }
  }

  private String waiters() {
    return fixture
        .call("GET", "/metrics", null)
        .body()
        .lines()
        .filter(line -> line.startsWith("skade_feed_waiters"))
        .findFirst()
        .orElse("");
  }

  @Test
  void theCursorIsTheCatalogsNewestCommitAndAWrongTokenIsRefusedAtOnce() {
    Table table = owner.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    for (int i = 0; i < 3; i++) {
      table.updateProperties().set("k", "v" + i).commit();
      assertThat(client.commitSeq()).isEqualTo(owner.commitSeq());
    }

    SkadeServerClient stranger =
        new SkadeServerClient(fixture.server.uri(), "wrong-token", Duration.ofSeconds(10));
    assertThatThrownBy(stranger::commitSeq)
        .isInstanceOf(NotAuthorizedException.class)
        .hasMessageContaining("refused GET " + SkadeProtocol.COMMITS)
        .hasMessageContaining("(401)")
        .hasMessageContaining("'token'");
    // The server counts a request once it is answered; a retried refusal would count again.
    await().atMost(Duration.ofSeconds(10)).until(() -> unauthorizedRequests() >= 1);
    assertThat(unauthorizedRequests()).as("requests refused for their token").isEqualTo(1);
  }

  /** The requests the server refused for their token so far, from its metrics. */
  private double unauthorizedRequests() {
    return fixture
        .call("GET", "/metrics", null)
        .body()
        .lines()
        .filter(
            line ->
                line.startsWith("skade_http_requests_seconds_count{")
                    && line.contains("route=\"unauthorized\""))
        .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
        .sum();
  }

  @Test
  void aParkedLongPollAnswersWhenACommitLandsNotWhenItsWaitEnds() throws Exception {
    Table table = owner.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    long seq = client.commitSeq();
    CompletableFuture<CommitPage> poll =
        CompletableFuture.supplyAsync(() -> client.commits(seq, 10, Duration.ofSeconds(60)));
    await().atMost(Duration.ofSeconds(10)).until(() -> waiters().endsWith(" 1.0"));
    assertThat(poll).isNotDone();

    table.updateProperties().set("k", "v").commit();
    CommitPage page = poll.get(10, TimeUnit.SECONDS); // well before the 60 s wait ends
    assertThat(page.commits()).extracting(CommitEvent::commitSeq).containsExactly(seq + 1);
    assertThat(page.commits().get(0).tableKey())
        .isEqualTo(owner.commitTableKey(TableIdentifier.of("db", "t")));
    assertThat(page.lastCommitSeq()).isEqualTo(seq + 1);
    await().atMost(Duration.ofSeconds(10)).until(() -> waiters().endsWith(" 0.0"));
  }

  @Test
  void aCommitOnTheFeedCarriesTheUpdatesThatRebuildItsMetadataFromThePreviousFile()
      throws Exception {
    Table table = owner.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    ParquetFiles.append(table, List.of(row(1)));
    String base = location(table);
    try (RemoteCommitFeed feed = new RemoteCommitFeed(client)) {
      CommitSubscription subscription = feed.subscribeCommits(16);
      ParquetFiles.append(table, List.of(row(2)));
      CommitEvent event = subscription.poll(Duration.ofSeconds(10));
      assertThat(event).as("the append's commit on the feed").isNotNull();
      assertThat(event.previousMetadataLocation()).isEqualTo(base);
      String location = event.metadataLocation();

      List<MetadataUpdate> updates = feed.updates(location, base).orElseThrow();
      FileIO io = owner.io();
      TableMetadata rebuilt =
          CommittedMetadata.replay(TableMetadataParser.read(io, base), updates, location);
      assertThat(rebuilt.snapshots()).hasSize(2);
      assertThat(TableMetadataParser.toJson(rebuilt).replaceAll(UPDATED, ""))
          .isEqualTo(
              TableMetadataParser.toJson(TableMetadataParser.read(io, location))
                  .replaceAll(UPDATED, ""));
      assertThat(feed.updates(location, location))
          .as("updates from another file than the one they were made from")
          .isEmpty();
    }
  }

  private static String location(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }

  private static Record row(long id) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    return row;
  }

  @Test
  void aParkedLongPollAnswersEmptyWhenItsWaitEnds() {
    long seq = client.commitSeq();
    long started = System.nanoTime();
    CommitPage page = client.commits(seq, 10, Duration.ofMillis(300));
    assertThat(page.commits()).isEmpty();
    assertThat(page.lastCommitSeq()).isEqualTo(seq);
    assertThat(System.nanoTime() - started)
        .as("the server waited")
        .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
  }

  @Test
  void longPollsWithWaitsOfAMillisecondAllAnswer() {
    long seq = client.commitSeq();
    for (int i = 0; i < 300; i++) { // a timer firing as the request parks must still answer it
      assertThat(client.commits(seq, 10, Duration.ofMillis(1)).lastCommitSeq()).isEqualTo(seq);
    }
  }

  @Test
  void aShutdownAnswersParkedLongPollsAtOnce() throws Exception {
    long seq = client.commitSeq();
    CompletableFuture<CommitPage> poll =
        CompletableFuture.supplyAsync(() -> client.commits(seq, 10, Duration.ofSeconds(60)));
    await().atMost(Duration.ofSeconds(10)).until(() -> waiters().endsWith(" 1.0"));
    fixture.close();
    fixture = null;
    CommitPage page = poll.get(15, TimeUnit.SECONDS); // not the 60 s the poll asked for
    assertThat(page.commits()).isEmpty();
    assertThat(page.lastCommitSeq()).isEqualTo(seq);
  }

  @Test
  void aRemoteSubscriberStalledWhile5000CommitsLandGetsEachOnceInOrder() throws Exception {
    int tables = 8;
    int perTable = 625;
    List<Table> written = new ArrayList<>();
    for (int i = 0; i < tables; i++) {
      written.add(owner.createTable(TableIdentifier.of("db", "t" + i), SCHEMA));
    }
    try (RemoteCommitFeed feed = new RemoteCommitFeed(client)) {
      CommitSubscription subscription = feed.subscribeCommits(64); // far fewer than will land
      long start = subscription.startCursor();
      assertThat(start).isEqualTo(owner.commitSeq());

      ExecutorService committers = Executors.newFixedThreadPool(tables);
      List<Future<?>> done = new ArrayList<>();
      for (Table table : written) {
        done.add(
            committers.submit(
                () -> {
                  for (int n = 0; n < perTable; n++) {
                    table.updateProperties().set("n", String.valueOf(n)).commit();
                  }
                }));
      }
      for (Future<?> future : done) {
        future.get(300, TimeUnit.SECONDS);
      }
      committers.shutdown();
      long end = owner.commitSeq();
      assertThat(end - start).isEqualTo((long) tables * perTable);

      // Resumed: the live subscription, falling back to the log when it lagged.
      List<Long> received = new ArrayList<>();
      long cursor = start;
      int lags = 0;
      while (cursor < end) {
        CommitEvent event;
        try {
          event = subscription.poll(Duration.ofSeconds(5));
        } catch (CommitFeedLaggedException e) {
          lags++;
          for (CommitEvent replayed : feed.commitsSince(cursor)) {
            received.add(replayed.commitSeq());
            cursor = replayed.commitSeq();
          }
          continue;
        }
        if (event != null && event.commitSeq() > cursor) {
          received.add(event.commitSeq());
          cursor = event.commitSeq();
        }
      }
      assertThat(lags).as("the stalled subscription lagged").isPositive();
      assertThat(received)
          .as("commit_seqs received after %s", start)
          .containsExactlyElementsOf(LongStream.rangeClosed(start + 1, end).boxed().toList());
    }
  }
}
