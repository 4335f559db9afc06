package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.remote.SkadeServerClient;
import io.skade.server.ServerProcess;
import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import io.skade.write.TableWriter;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SkadeSource} in remote mode: the catalog lives in a skade server process (a child JVM) and
 * the job (parallelism 2, checkpointing) only has its {@code uri}. A writer upserts and deletes
 * through Iceberg's REST client; the server is killed with SIGKILL and restarted on the same
 * directory and port while both run. The job is woken by the server's commit feed alone (its poll
 * interval is longer than the test). It rides through, and its changelog, applied strictly (an
 * insert meets no row, a retraction exactly the row it retracts), equals the table as Iceberg reads
 * it at the end; the job's consumer cursor is stored through the server.
 */
class SkadeSourceRemoteTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");
  private static final String TOKEN = ServerProcess.TOKEN;

  @TempDir Path root;

  @Test
  @Timeout(300)
  void aRemoteSourceRidesThroughAServerKilledAndRestartedAndEmitsAnExactChangelog()
      throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root)) {
      RESTCatalog rest = remote.rest();
      String uri = remote.server().uri();
      Table table = rest.createTable(TABLE, SCHEMA);
      TableWriter writer = new TableWriter(table);
      writer.append(List.of(row(1, "a"), row(2, "b")));

      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(2);
      env.enableCheckpointing(300);
      SkadeSource<RowData> source =
          SkadeSource.builder()
              .catalogProperties(remote.properties())
              .table("db.t")
              .consumerId("remote-job")
              // Longer than the test: only the server's commit feed can wake the enumerator.
              .pollInterval(Duration.ofMinutes(30))
              .build();
      Map<Long, String> rows = new HashMap<>();
      List<String> failures = new ArrayList<>();
      AtomicBoolean writing = new AtomicBoolean(true);
      try (CloseableIterator<RowData> changes =
          env.fromSource(source, WatermarkStrategy.noWatermarks(), "remote").executeAndCollect()) {
        CompletableFuture<Integer> writes =
            CompletableFuture.supplyAsync(
                () -> {
                  Random random = new Random(7);
                  int commits = 0;
                  while (writing.get()) {
                    try {
                      long id = random.nextInt(12);
                      if (random.nextInt(4) == 0) {
                        writer.deleteKeys(List.of(row(id, null)));
                      } else {
                        writer.upsert(
                            List.of(row(id, "v" + commits), row(id + 100, "w" + commits)));
                      }
                      commits++;
                    } catch (
                        RuntimeException e) { // the server is down: not committed, or committed
                      sleep(200);
                    }
                  }
                  return commits;
                });
        CompletableFuture<Void> reading =
            CompletableFuture.runAsync(
                () -> {
                  while (changes.hasNext()) {
                    ChangeLines.applyStrictly(ChangeLines.text(changes.next()), rows, failures);
                  }
                });

        sleep(3000); // the writer commits for a while before the kill, and after the restart
        remote.server().killAndRestart(2000); // SIGKILL, down for 2 s, the same directory and port
        sleep(4000);
        writing.set(false);
        int commits = writes.get(60, TimeUnit.SECONDS);
        assertThat(commits).as("commits the writer made").isGreaterThan(5);

        Map<Long, String> expected = ChangeLines.rows(rest.loadTable(TABLE));
        await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(100))
            .until(
                () -> {
                  synchronized (rows) {
                    return !failures.isEmpty() || rows.equals(expected);
                  }
                });
        synchronized (rows) {
          assertThat(failures).as("changes that did not apply strictly").isEmpty();
          assertThat(rows).as("the changelog applied to an empty table").isEqualTo(expected);
        }
        SkadeServerClient client =
            new SkadeServerClient(URI.create(uri), TOKEN, Duration.ofSeconds(30));
        await()
            .atMost(Duration.ofSeconds(60))
            .until(() -> client.consumer("remote-job").isPresent());
        assertThat(client.consumer("remote-job").orElseThrow().cursor().table()).isEqualTo(TABLE);
        reading.cancel(true);
      }
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
