package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.server.ServerProcess;
import io.skade.testing.ChangeLines;
import io.skade.testing.ChildJvm;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.LongStream;
import java.util.stream.StreamSupport;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Interoperability over the skade server: Iceberg's own Flink connector ({@link
 * IcebergFlinkEngine}, Flink SQL with {@code 'catalog-type' = 'rest'}) is a second engine in a JVM
 * of its own, the server a second, this test the third. The second engine creates a primary-key
 * table and upserts and deletes in it, commit after commit (merge-on-read: equality deletes, and
 * position deletes for keys it writes twice in one commit); a remote {@link SkadeSource} started
 * before those writes emits their exact changelog, which, applied strictly, is the table the second
 * engine reads at the end; every commit of the second engine took a {@code commit_seq} on the
 * server's gapless feed. The other way round, the second engine reads the rows of a table skade
 * wrote (upserts, key deletes and position deletes).
 */
class SecondEngineOverRestTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier ORDERS = TableIdentifier.of("db", "orders");
  private static final TableIdentifier SKADE_WRITTEN = TableIdentifier.of("db", "skade_written");
  private static final Duration WAIT = Duration.ofSeconds(60);

  /** What the second engine writes: one Flink job, so one Iceberg commit, each. */
  private static final List<List<String>> ENGINE_COMMITS =
      List.of(
          List.of("+I 1 a", "+I 2 b", "+I 3 c", "+I 4 d", "+I 5 e"),
          List.of("-U 2 b", "+U 2 b2", "-D 3 c", "+I 6 f"),
          // 7 written twice in one job: its writer deletes the first row by position.
          List.of("+I 7 g", "-U 7 g", "+U 7 g2", "-U 4 d", "+U 4 d2", "-D 5 e"),
          // 8 inserted and deleted in one job: by position again, never visible.
          List.of("+I 8 h", "-D 8 h", "-U 1 a", "+U 1 a2", "-D 6 f"));

  @TempDir Path root;

  @Test
  @Timeout(180)
  void icebergsFlinkConnectorWritesThroughTheServerAndARemoteSkadeSourceEmitsItsExactChangelog()
      throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root)) {
      RESTCatalog rest = remote.rest();
      try (ChildJvm engine =
          ChildJvm.start(
              IcebergFlinkEngine.class,
              root.resolve("engine.err"),
              WAIT,
              remote.server().uri(),
              ServerProcess.TOKEN)) {
        // While the engine's JVM starts (it reads this table at its end).
        writeWithSkade(
            rest.buildTable(SKADE_WRITTEN, SCHEMA).withProperty("format-version", "2").create());
        engine.await("CREATED");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        SkadeSource<RowData> source =
            SkadeSource.builder()
                .catalogProperties(remote.properties())
                .table("db.orders")
                .startupMode(StartupMode.EARLIEST)
                // Longer than the test: only the server's commit feed can wake the enumerator.
                .pollInterval(Duration.ofMinutes(30))
                .build();
        CloseableIterator<RowData> changes =
            env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").collectAsync();
        JobClient job = env.executeAsync("skade source on the second engine's table");
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        Map<Long, String> applied = new HashMap<>();
        List<String> failures = new ArrayList<>();
        try (changes) {
          await().atMost(WAIT).until(() -> job.getJobStatus().get() == JobStatus.RUNNING);
          CompletableFuture<Void> reading =
              CompletableFuture.runAsync(
                  () -> {
                    while (changes.hasNext()) {
                      String change = ChangeLines.text(changes.next());
                      seen.add(change);
                      ChangeLines.applyStrictly(change, applied, failures);
                    }
                  });

          List<Long> committed = new ArrayList<>();
          for (List<String> commit : ENGINE_COMMITS) {
            for (String change : commit) {
              engine.send(change);
            }
            engine.send("COMMIT");
            committed.add(
                Long.parseLong(
                    engine.lineStartingWith("COMMITTED ").substring("COMMITTED ".length())));
          }
          engine.send("END");
          List<String> engineRead = engine.linesBefore("DONE");
          assertThat(rows(engineRead, "ORDERS"))
              .as("the table as the second engine reads it at the end")
              .containsExactlyInAnyOrder("1 a2", "2 b2", "4 d2", "7 g2");
          assertThat(rows(engineRead, "SKADE_WRITTEN"))
              .as(
                  "skade's upserts, key deletes and position deletes, as Iceberg's Flink reader"
                      + " reads them")
              .containsExactlyInAnyOrder("1 a", "2 b2", "4 d");
          Map<Long, String> expected = Map.of(1L, "a2", 2L, "b2", 4L, "d2", 7L, "g2");
          Table orders = rest.loadTable(ORDERS);
          assertThat(ChangeLines.rows(orders))
              .as("the table as Iceberg's generic reader reads it")
              .isEqualTo(expected);
          assertThat(snapshotIds(orders))
              .as("the table's snapshots: one per job of the second engine")
              .isEqualTo(committed);
          assertThat(orders.snapshot(committed.get(1)).summary())
              .as("the second commit deletes by key: merge-on-read")
              .containsKey(SnapshotSummary.ADD_EQ_DELETE_FILES_PROP);
          for (int c : List.of(2, 3)) {
            assertThat(orders.snapshot(committed.get(c)).summary())
                .as("commit %d deletes a row of its own by position", c + 1)
                .containsEntry(SnapshotSummary.ADDED_POS_DELETES_PROP, "1");
          }

          List<String> expectedChanges =
              List.of(
                  "+I 1 a", "+I 2 b", "+I 3 c", "+I 4 d", "+I 5 e", "-U 2 b", "+U 2 b2", "-D 3 c",
                  "+I 6 f", "+I 7 g2", "-U 4 d", "+U 4 d2", "-D 5 e", "-U 1 a", "+U 1 a2",
                  "-D 6 f");
          await()
              .atMost(WAIT)
              .until(() -> reading.isDone() || seen.size() >= expectedChanges.size());
          if (reading.isCompletedExceptionally()) {
            reading.join(); // the job failed: its failure, not a time-out
          }
          synchronized (applied) {
            assertThat(failures).as("changes that did not apply strictly").isEmpty();
            assertThat(applied).as("the changelog applied to an empty table").isEqualTo(expected);
          }
          assertThat(seen)
              .as("the changes of the second engine's commits")
              .containsExactlyInAnyOrderElementsOf(expectedChanges);
          reading.cancel(true);

          try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
            List<CommitEvent> log = new ArrayList<>();
            connection.feed().commitsSince(0).forEach(log::add);
            assertThat(log)
                .extracting(CommitEvent::commitSeq)
                .as("the server's log, gapless")
                .containsExactlyElementsOf(LongStream.rangeClosed(1, log.size()).boxed().toList());
            for (TableIdentifier table : List.of(ORDERS, SKADE_WRITTEN)) {
              String key = connection.feed().commitTableKey(table);
              assertThat(
                      log.stream()
                          .filter(commit -> commit.tableKey().equals(key))
                          .flatMap(commit -> commit.addedSnapshotIds().stream())
                          .toList())
                  .as(
                      "the snapshots the log's commits of %s added: each of the table's once",
                      table)
                  .isEqualTo(snapshotIds(rest.loadTable(table)));
            }
          }
        }
      }
    }
  }

  /** Writes db.skade_written with skade's writer through the server: rows 1 a, 2 b2, 4 d. */
  private static void writeWithSkade(Table table) {
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a"), row(2, "b"), row(3, "c")));
    writer.upsert(List.of(row(2, "b2")));
    writer.deleteKeys(List.of(row(3, null)));
    Snapshot appended = writer.append(List.of(row(4, "d"), row(5, "e")));
    DataFile file = appended.addedDataFiles(table.io()).iterator().next();
    writer.deletePositions(Map.of(file.location(), List.of(1L))); // the row 5 e
  }

  /** The rows {@code <id> <name>} of the lines {@code <label> <id> <name>} among {@code lines}. */
  private static List<String> rows(List<String> lines, String label) {
    return lines.stream()
        .filter(line -> line.startsWith(label + " "))
        .map(line -> line.substring(label.length() + 1))
        .toList();
  }

  /** The table's snapshots, oldest first. */
  private static List<Long> snapshotIds(Table table) {
    return StreamSupport.stream(table.snapshots().spliterator(), false)
        .map(Snapshot::snapshotId)
        .toList();
  }
}
