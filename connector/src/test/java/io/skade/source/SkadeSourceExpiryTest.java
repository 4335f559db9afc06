package io.skade.source;

import static io.skade.testing.ChangeLines.assertCommits;
import static io.skade.testing.ChangeLines.take;
import static io.skade.testing.KnownHistory.ROWS_AT_S4;
import static io.skade.testing.KnownHistory.S5;
import static io.skade.testing.KnownHistory.S6;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.ExpiryBlockedException;
import io.skade.catalog.StoredConsumer;
import io.skade.testing.KnownHistory;
import io.skade.testing.TestCatalog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.Timeout.ThreadMode;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The source against snapshot expiry: its checkpointed position is stored as a consumer, which
 * holds back the expiry of the snapshots it still needs; and a job restored at a position whose
 * snapshot was expired anyway fails, saying how to recover.
 */
@Timeout(value = 60, threadMode = ThreadMode.SEPARATE_THREAD) // next() ignores interrupts
class SkadeSourceExpiryTest {
  private static final String CONSUMER = "expiry-test";

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  @TempDir Path savepoints;

  private KnownHistory history;

  @BeforeEach
  void writeHistory() {
    history = KnownHistory.write(catalog.get());
  }

  @Test
  void aCompletedCheckpointStoresTheConsumerWhoseSnapshotsTheCatalogThenRefusesToExpire()
      throws Exception {
    StreamExecutionEnvironment env = environment(new Configuration());
    env.enableCheckpointing(200);
    StoredConsumer stored;
    Job job = start(env, builder().consumerId(CONSUMER).build());
    try {
      assertCommits(take(job.rows(), ROWS_AT_S4.size()), List.of(ROWS_AT_S4));
      stored = catalog.awaitConsumer(CONSUMER);
    } finally {
      job.cancel(); // the consumer stays: the job may be restored
    }
    Table table = history.table;
    assertThat(stored.cursor())
        .isEqualTo(
            new ConsumerCursor(
                TableIdentifier.of("db", "t"),
                table.uuid().toString(),
                history.s4.snapshotId(),
                stored.cursor().commitSeq()));
    assertThat(catalog.get().consumers(TableIdentifier.of("db", "t")))
        .extracting(StoredConsumer::consumerId)
        .containsExactly(CONSUMER);

    long s5 = history.commitS5().snapshotId();
    history.commitS6();
    // The consumer's next window starts at S4: S4 and everything after it must stay.
    long s4 = history.s4.snapshotId();
    assertThatThrownBy(() -> table.expireSnapshots().expireSnapshotId(s4).commit())
        .isInstanceOf(ExpiryBlockedException.class)
        .hasMessageContaining("consumer '" + CONSUMER + "'")
        .hasMessageContaining("still needs snapshot(s) [" + s4 + "]");
    assertThatThrownBy(
            () -> table.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit())
        .isInstanceOf(ExpiryBlockedException.class)
        .hasMessageContaining("still needs snapshot(s) [" + s4 + ", " + s5 + "]");
    table.refresh();
    assertThat(table.snapshots()).hasSize(6);

    // Snapshots older than the consumer's may go.
    table.expireSnapshots().expireSnapshotId(history.s3.snapshotId()).commit();
    table.refresh();
    assertThat(table.snapshot(history.s3.snapshotId())).isNull();
    assertThat(table.snapshot(s4)).isNotNull();
  }

  @Test
  void aJobRestoredFromASavepointResumesRightAfterWhatItRead() throws Exception {
    Savepoint savepoint = readUpToS5AndStop();
    history.commitS6();
    Job restored = start(environment(restoring(savepoint)), builder().consumerId(CONSUMER).build());
    try {
      assertCommits(take(restored.rows(), S6.size()), List.of(S6)); // S5 is not read again
    } finally {
      restored.cancel();
    }
  }

  @Test
  void aJobRestoredAtASnapshotThatWasExpiredFailsNamingItAndTheModesThatRecover() throws Exception {
    Savepoint savepoint = readUpToS5AndStop();
    // While the job is stopped, S5 is expired anyway (its consumer dropped first).
    history.commitS6();
    expireAllButCurrent();
    assertThat(history.table.snapshot(savepoint.s5())).isNull();

    Job restored = start(environment(restoring(savepoint)), builder().consumerId(CONSUMER).build());
    try {
      assertThatThrownBy(restored::awaitEnd)
          .satisfies(
              failure ->
                  assertThat(messages(failure))
                      .anySatisfy(
                          message ->
                              assertThat(message)
                                  .contains("snapshot " + savepoint.s5())
                                  .contains("startup-mode=full")
                                  .contains("startup-mode=latest")));
    } finally {
      restored.rows().close();
    }

    // Nor can a new source start from the expired snapshot.
    assertThatThrownBy(() -> builder().startFromSnapshot(savepoint.s5()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snapshot " + savepoint.s5())
        .hasMessageContaining("unknown or expired");
  }

  /** A savepoint of a job positioned at snapshot {@code s5}. */
  private record Savepoint(String path, long s5) {}

  /**
   * Runs a full job, commits S5 once the job emitted the rows at start, and stops the job with a
   * savepoint once S5's changes came: its position is S5.
   */
  private Savepoint readUpToS5AndStop() throws Exception {
    Job job = start(environment(new Configuration()), builder().consumerId(CONSUMER).build());
    try {
      assertCommits(take(job.rows(), ROWS_AT_S4.size()), List.of(ROWS_AT_S4));
      long s5 = history.commitS5().snapshotId();
      assertCommits(take(job.rows(), S5.size()), List.of(S5));
      String path =
          job.client()
              .stopWithSavepoint(
                  false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
              .get();
      job.awaitEnd();
      return new Savepoint(path, s5);
    } finally {
      job.rows().close();
    }
  }

  private static Configuration restoring(Savepoint savepoint) {
    Configuration conf = new Configuration();
    conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint.path());
    // The source (uid "skade") restores; the test's collect sink is a new one in each job.
    conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
    return conf;
  }

  /** A running job of the source, collected, and the client to stop it. */
  private record Job(CloseableIterator<RowData> rows, JobClient client) {
    /** Waits for the job's end; throws its failure, if it failed. */
    void awaitEnd() throws Exception {
      client.getJobExecutionResult().get();
    }

    void cancel() throws Exception {
      client.cancel().get();
      try {
        awaitEnd();
      } catch (ExecutionException cancelled) {
        // the expected end of a cancelled job
      }
      rows.close();
    }
  }

  private static Job start(StreamExecutionEnvironment env, SkadeSource<RowData> source)
      throws Exception {
    CloseableIterator<RowData> rows =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade")
            .uid("skade")
            .collectAsync();
    return new Job(rows, env.executeAsync("skade expiry test"));
  }

  private static StreamExecutionEnvironment environment(Configuration conf) {
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(2);
    return env;
  }

  private SkadeSourceBuilder<RowData> builder() {
    return SkadeSource.builder().catalogProperties(catalog.properties()).table("db.t");
  }

  /**
   * Drops the consumer and expires every snapshot but the current one. A stopped job's enumerator
   * may store its cursor once more after the job's result came (it handles the notice of its last
   * completed checkpoint asynchronously, until its coordinator is closed), so a refusal caused by
   * such a late store is answered by dropping it again.
   */
  private void expireAllButCurrent() {
    while (true) {
      catalog.get().dropConsumer(CONSUMER);
      try {
        history.table.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit();
        history.table.refresh();
        return;
      } catch (ExpiryBlockedException lateStore) {
        history.table.refresh();
      }
    }
  }

  private static List<String> messages(Throwable failure) {
    List<String> messages = new ArrayList<>();
    for (Throwable t = failure; t != null; t = t.getCause()) {
      messages.add(String.valueOf(t.getMessage()));
    }
    return messages;
  }
}
