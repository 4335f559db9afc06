package io.skade.source;

import static io.skade.testing.ChangeLines.assertCommits;
import static io.skade.testing.ChangeLines.drain;
import static io.skade.testing.ChangeLines.size;
import static io.skade.testing.ChangeLines.take;
import static io.skade.testing.KnownHistory.ROWS_AT_S4;
import static io.skade.testing.KnownHistory.S1;
import static io.skade.testing.KnownHistory.S2;
import static io.skade.testing.KnownHistory.S3;
import static io.skade.testing.KnownHistory.S4;
import static io.skade.testing.KnownHistory.S5;
import static io.skade.testing.KnownHistory.S6;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.StoredConsumer;
import io.skade.testing.KnownHistory;
import io.skade.testing.TestCatalog;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.Timeout.ThreadMode;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every startup mode, bounded reads, and the errors of bad input, on {@link KnownHistory}'s table:
 * four commits before the job starts (S1 to S4) and two while it runs (S5, S6). Jobs run in a local
 * MiniCluster with two readers; each test waits on the changes themselves.
 */
@Timeout(value = 60, threadMode = ThreadMode.SEPARATE_THREAD) // next() ignores interrupts
class SkadeSourceModesTest {
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  private KnownHistory history;

  @BeforeEach
  void writeHistory() {
    history = KnownHistory.write(catalog.get());
  }

  @Test
  void aFullStartEmitsTheCurrentRowsAsInsertsThenEveryLaterChangeInCommitOrder() throws Exception {
    List<List<String>> expected = List.of(ROWS_AT_S4, S5, S6);
    assertCommits(runWhileCommitting(builder().build(), ROWS_AT_S4.size(), expected), expected);
  }

  @Test
  void aLatestStartEmitsOnlyTheChangesCommittedAfterTheJobStarted() throws Exception {
    // A latest start is fixed when the enumerator resolves it, and nothing is emitted until a
    // commit comes; a commit made before that would silently belong to the start. So the test
    // commits only once the start is known to be fixed: the enumerator stores its cursor as a
    // consumer on each completed checkpoint, and only after it resolved its start. Once the
    // consumer is there (at S4, the snapshot current at start), every commit is after the start.
    SkadeSource<RowData> source =
        builder().startupMode(StartupMode.LATEST).consumerId("latest-test").build();
    StreamExecutionEnvironment env = environment();
    env.enableCheckpointing(100);
    List<String> seen;
    try (CloseableIterator<RowData> rows = collect(env, source)) {
      StoredConsumer consumer = catalog.awaitConsumer("latest-test");
      assertThat(consumer.cursor().snapshotId()).isEqualTo(history.s4.snapshotId());
      history.commitS5();
      history.commitS6();
      seen = take(rows, size(List.of(S5, S6)));
    }
    assertCommits(seen, List.of(S5, S6));
  }

  @Test
  void anEarliestStartEmitsEveryChangeSinceTheFirstSnapshotInCommitOrder() throws Exception {
    List<List<String>> expected = List.of(S1, S2, S3, S4, S5, S6);
    assertCommits(
        runWhileCommitting(
            builder().startupMode(StartupMode.EARLIEST).build(), S1.size(), expected),
        expected);
  }

  @Test
  void aStartFromSnapshotIncludesThatSnapshotsOwnChanges() throws Exception {
    List<List<String>> expected = List.of(S2, S3, S4, S5, S6);
    assertCommits(
        runWhileCommitting(
            builder().startFromSnapshot(history.s2.snapshotId()).build(), S2.size(), expected),
        expected);
  }

  @Test
  void aStartFromTimestampBeginsWithTheFirstSnapshotAtOrAfterThatTime() throws Exception {
    assertThat(history.s2.timestampMillis()).isLessThan(history.beforeS3Millis);
    assertThat(history.s3.timestampMillis()).isGreaterThanOrEqualTo(history.beforeS3Millis);
    List<List<String>> expected = List.of(S3, S4, S5, S6);
    assertCommits(
        runWhileCommitting(
            builder().startFromTimestamp(history.beforeS3Millis).build(), S3.size(), expected),
        expected);
  }

  @Test
  void aStartFromCommitSeqEmitsTheCommitsAfterThatCommitSeq() throws Exception {
    List<List<String>> expected = List.of(S3, S4, S5, S6);
    assertCommits(
        runWhileCommitting(
            builder().startFromCommitSeq(history.seqAfterS2).build(), S3.size(), expected),
        expected);
  }

  @Test
  void aBoundedReadStopsAtTheSnapshotCurrentAtStartAndEndsOnItsOwn() throws Exception {
    SkadeSource<RowData> source = builder().startupMode(StartupMode.EARLIEST).bounded().build();
    List<String> seen;
    try (CloseableIterator<RowData> rows = collect(environment(), source)) {
      seen = new ArrayList<>(take(rows, S1.size())); // changes came: the end is fixed at S4
      history.commitS5();
      seen.addAll(drain(rows));
    }
    assertCommits(seen, List.of(S1, S2, S3, S4));
  }

  @Test
  void aBoundedFullReadIsTheTableAtStartAsInserts() throws Exception {
    List<String> seen;
    try (CloseableIterator<RowData> rows = collect(environment(), builder().bounded().build())) {
      seen = drain(rows);
    }
    assertCommits(seen, List.of(ROWS_AT_S4));
  }

  @Test
  void anEndSnapshotFromAStartSnapshotReadsExactlyThatWindow() throws Exception {
    history.commitS5(); // the end is not the current snapshot
    SkadeSource<RowData> source =
        builder()
            .startFromSnapshot(history.s2.snapshotId())
            .endSnapshot(history.s3.snapshotId())
            .build();
    List<String> seen;
    try (CloseableIterator<RowData> rows = collect(environment(), source)) {
      seen = drain(rows);
    }
    assertCommits(seen, List.of(S2, S3));
  }

  @Test
  void anUnknownTableIsRefusedNamingTheTablesThatExist() {
    catalog.get().createTable(TableIdentifier.of("db", "u"), KnownHistory.SCHEMA);
    assertThatThrownBy(() -> builder().table("db.orders").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("db.orders does not exist")
        .hasMessageContaining("db.t")
        .hasMessageContaining("db.u");
  }

  @Test
  void anUnknownProjectedColumnIsRefusedNamingTheTablesColumns() {
    assertThatThrownBy(() -> builder().columns(List.of("id", "nmae")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no column 'nmae'")
        .hasMessageContaining("[id, name]");
  }

  @Test
  void aStartFromAnUnknownSnapshotIsRefusedNamingTheSnapshot() {
    long unknown = history.s4.snapshotId() + 1;
    assertThatThrownBy(() -> builder().startFromSnapshot(unknown).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snapshot " + unknown)
        .hasMessageContaining("not in the table's current history");
  }

  @Test
  void aStartupModeWithoutItsArgumentIsRefused() {
    for (StartupMode mode :
        List.of(
            StartupMode.FROM_SNAPSHOT, StartupMode.FROM_TIMESTAMP, StartupMode.FROM_COMMIT_SEQ)) {
      assertThatThrownBy(() -> builder().startup(mode, null).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("startup mode " + mode.value() + " needs its argument");
    }
    assertThatThrownBy(() -> builder().startup(StartupMode.LATEST, 5L).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("startup mode latest takes no argument");
    assertThatThrownBy(() -> StartupMode.of("newest"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'newest'")
        .hasMessageContaining("full, latest, earliest, from-snapshot");
  }

  @Test
  void aLimitOnAReadOfChangesIsRefused() {
    assertThatThrownBy(() -> builder().limit(10).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a limit of 10 rows applies to a read of one snapshot's rows")
        .hasMessageContaining("call bounded() with startup mode full");
    assertThatThrownBy(
            () -> builder().startupMode(StartupMode.EARLIEST).bounded().limit(10).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a limit of 10 rows applies to a read of one snapshot's rows");
    assertThatThrownBy(() -> builder().bounded().limit(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a limit must be positive, got 0");
  }

  private SkadeSourceBuilder<RowData> builder() {
    return SkadeSource.builder().catalogProperties(catalog.properties()).table("db.t");
  }

  private static StreamExecutionEnvironment environment() {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    return env;
  }

  private static CloseableIterator<RowData> collect(
      StreamExecutionEnvironment env, SkadeSource<RowData> source) throws Exception {
    return env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").executeAndCollect();
  }

  /**
   * Runs an unbounded job of {@code source}; once its first {@code before} changes came (so it
   * runs), commits S5 and S6, then takes as many changes as {@code expected} holds in all and
   * cancels the job.
   */
  private List<String> runWhileCommitting(
      SkadeSource<RowData> source, int before, List<List<String>> expected) throws Exception {
    List<String> seen;
    try (CloseableIterator<RowData> rows = collect(environment(), source)) {
      seen = new ArrayList<>(take(rows, before));
      history.commitS5();
      history.commitS6();
      seen.addAll(take(rows, size(expected) - before));
    }
    return seen;
  }
}
