package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A job reading a primary-key table and a log table while a writer commits, through injected
 * failures of the reader and of a downstream operator and a stop-with-savepoint and restore into a
 * new job: the changes it emitted, applied in order to an empty state, equal the tables, and every
 * appended row of the log table came exactly once.
 *
 * <p>The collected changelog is applied strictly: an insert must meet no row, a {@code -U} or
 * {@code -D} must meet exactly the row it retracts. A change repeated, lost or out of order fails
 * that check at once, so it also proves that each key's changes came in commit order.
 */
class SkadeSourceExactlyOnceTest {
  private static final Schema SCHEMA = IdRows.keyed("v");
  private static final Schema LOG_SCHEMA = IdRows.log("v");

  /** Failures injected so far, across restarts (the MiniCluster runs in this JVM). */
  private static final AtomicInteger FAILURES = new AtomicInteger();

  private static final AtomicLong RECORDS = new AtomicLong();
  private static volatile long[] failAt = new long[0];

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  @TempDir Path savepoints;

  @Test
  @Timeout(300)
  void changesSurviveInjectedFailuresAndASavepointRestoreExactlyOnce() throws Exception {
    long seed = System.nanoTime();
    System.out.println("SkadeSourceExactlyOnceTest seed " + seed);
    Random random = new Random(seed);
    // Failure points by record count (reader and downstream alternate), six in the first job.
    failAt =
        new long[] {
          30 + random.nextInt(40),
          100 + random.nextInt(50),
          180 + random.nextInt(50),
          260 + random.nextInt(50),
          340 + random.nextInt(50),
          420 + random.nextInt(40)
        };
    FAILURES.set(0);
    RECORDS.set(0);
    Table keyed = catalog.get().createTable(TableIdentifier.of("db", "keyed"), SCHEMA);
    Table log = catalog.get().createTable(TableIdentifier.of("db", "log"), LOG_SCHEMA);
    Materialized state = new Materialized();
    CompletableFuture<Integer> writer =
        CompletableFuture.supplyAsync(() -> write(keyed, log, new Random(seed + 1), 25));
    JobClient first;
    try (Running job = start(null)) {
      first = job.client;
      // Apply until the writer is done and half its changes are in, then take a savepoint.
      while (!writer.isDone() || state.applied < 400) {
        state.apply(job.rows.next());
      }
      String savepoint =
          first
              .stopWithSavepoint(
                  false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
              .get(60, TimeUnit.SECONDS);
      job.rows.forEachRemaining(state::apply); // what was emitted before the savepoint
      int changesBefore = writer.get();
      // A new job restored from the savepoint, while more is written, with two more failures.
      long now = RECORDS.get();
      failAt =
          new long[] {
            failAt[0],
            failAt[1],
            failAt[2],
            failAt[3],
            failAt[4],
            failAt[5],
            now + 30 + random.nextInt(40),
            now + 120 + random.nextInt(40)
          };
      CompletableFuture<Integer> more =
          CompletableFuture.supplyAsync(() -> write(keyed, log, new Random(seed + 2), 12));
      try (Running restored = start(savepoint)) {
        Map<Long, String> expectedKeyed = ChangeLines.rows(keyed);
        Map<Long, String> expectedLog = null;
        while (expectedLog == null
            || !state.keyed.equals(expectedKeyed)
            || !state.log.equals(expectedLog)) {
          state.apply(restored.rows.next());
          if (more.isDone() && expectedLog == null) {
            more.get();
            expectedKeyed = ChangeLines.rows(keyed);
            expectedLog = ChangeLines.rows(log);
          }
        }
        assertThat(changesBefore + more.get()).isGreaterThanOrEqualTo(500);
      }
    }
    assertThat(FAILURES.get()).as("failures injected").isEqualTo(8);
    assertThat(state.keyed).isEqualTo(ChangeLines.rows(keyed));
    assertThat(state.log).isEqualTo(ChangeLines.rows(log));
  }

  /** A job with both sources, checkpoints every 200 ms and restarts after each failure. */
  private Running start(String savepoint) throws Exception {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 1000);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(20));
    conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
    if (savepoint != null) {
      conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
      // The collect sink's own state (its result buffer, drained above) has no stable uid.
      conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
    }
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(2);
    DataStream<String> keyedChanges =
        env.fromSource(source("db.keyed", "k"), WatermarkStrategy.noWatermarks(), "keyed")
            .uid("keyed");
    DataStream<String> logChanges =
        env.fromSource(source("db.log", "l"), WatermarkStrategy.noWatermarks(), "log").uid("log");
    DataStream<String> all =
        keyedChanges.union(logChanges).map(SkadeSourceExactlyOnceTest::failSometimes).uid("fail");
    CloseableIterator<String> rows = all.collectAsync();
    return new Running(env.executeAsync("exactly-once"), rows);
  }

  private SkadeSource<String> source(String table, String tag) {
    return SkadeSource.builder()
        .catalogProperties(catalog.properties())
        .table(table)
        .batchRows(16)
        .deserializer(new Lines(tag))
        .build();
  }

  /** Changes as text, {@code tag kind id v}; a reader-side failure at every other point. */
  private static final class Lines implements ChangeDeserializer<String> {
    private final String tag;

    Lines(String tag) {
      this.tag = tag;
    }

    @Override
    public void deserialize(RowData change, ChangeMetadata metadata, Collector<String> out) {
      maybeFail(0);
      out.collect(tag + " " + ChangeLines.text(change));
    }

    @Override
    public TypeInformation<String> getProducedType() {
      return Types.STRING;
    }
  }

  private static String failSometimes(String line) {
    maybeFail(1);
    return line;
  }

  /** Throws at the failure points of this side (0: reader, 1: downstream map). */
  private static void maybeFail(int side) {
    long n = RECORDS.incrementAndGet();
    int done = FAILURES.get();
    if (done < failAt.length
        && done % 2 == side
        && n >= failAt[done]
        && FAILURES.compareAndSet(done, done + 1)) {
      throw new IllegalStateException("injected failure " + (done + 1) + " at record " + n);
    }
  }

  /** Commits mixed changes: upserts and deletes of the keyed table, appends to the log. */
  private static int write(Table keyed, Table log, Random random, int commits) {
    TableWriter keyedWriter = new TableWriter(keyed);
    TableWriter logWriter = new TableWriter(log);
    int changes = 0;
    try {
      for (int c = 0; c < commits; c++) {
        List<Record> upserts = new ArrayList<>();
        Set<Long> keys = new HashSet<>();
        for (int i = random.nextInt(9) + 6; i > 0; i--) {
          long id = random.nextInt(60);
          if (keys.add(id)) {
            upserts.add(row(SCHEMA, id, "v" + random.nextInt(1000)));
          }
        }
        keyedWriter.upsert(upserts);
        changes += upserts.size();
        List<Record> deletes = new ArrayList<>();
        for (int i = random.nextInt(4); i > 0; i--) {
          deletes.add(row(SCHEMA, random.nextInt(60), null));
        }
        if (!deletes.isEmpty()) {
          keyedWriter.deleteKeys(deletes);
          changes += deletes.size(); // an upper bound: a key may be absent or repeated
        }
        List<Record> appends = new ArrayList<>();
        for (int i = random.nextInt(6) + 3; i > 0; i--) {
          appends.add(row(LOG_SCHEMA, NEXT_LOG_ID.incrementAndGet(), "l" + random.nextInt(9)));
        }
        logWriter.append(appends);
        changes += appends.size();
        Thread.sleep(random.nextInt(15)); // paces the writer at random
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return changes;
  }

  private static final AtomicLong NEXT_LOG_ID = new AtomicLong();

  /** The changelog applied strictly to an empty state, per table. */
  private static final class Materialized {
    final Map<Long, String> keyed = new HashMap<>();
    final Map<Long, String> log = new HashMap<>();
    int applied;

    final List<String> history = new ArrayList<>();

    void apply(String line) {
      history.add(line + " @failures=" + FAILURES.get());
      String[] parts = line.split(" ", 4);
      Map<Long, String> rows = parts[0].equals("k") ? keyed : log;
      long id = Long.parseLong(parts[2]);
      String v = parts[3].equals("null") ? null : parts[3];
      switch (parts[1]) {
        case "+I", "+U" ->
            assertThat(rows.containsKey(id))
                .as(
                    "%s meets no row (a change repeated or out of order?); history of its key: %s",
                    line,
                    history.stream()
                        .filter(
                            h -> h.startsWith(parts[0] + " ") && h.split(" ")[2].equals(parts[2]))
                        .toList())
                .isFalse();
        case "-U", "-D" ->
            assertThat(rows.containsKey(id) && java.util.Objects.equals(rows.get(id), v))
                .as(
                    "%s retracts the row there: %s; history: %s",
                    line,
                    rows.get(id),
                    history.subList(Math.max(0, history.size() - 60), history.size()))
                .isTrue();
        default -> throw new AssertionError("unknown change " + line);
      }
      if (parts[1].startsWith("+")) {
        rows.put(id, v);
      } else {
        rows.remove(id);
      }
      applied++;
    }
  }

  private record Running(JobClient client, CloseableIterator<String> rows)
      implements AutoCloseable {
    @Override
    public void close() throws Exception {
      rows.close();
    }
  }
}
