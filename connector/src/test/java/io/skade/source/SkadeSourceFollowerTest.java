package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import io.skade.catalog.CatalogLockedException;
import io.skade.catalog.SharedCatalogs;
import io.skade.testing.ChildJvm;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A source in a process that does not own the catalog: another JVM ({@link OwnerProcess}) owns it
 * and commits, so the source follows it read-only and learns of commits only by polling.
 */
class SkadeSourceFollowerTest {
  private static final int ROWS = 40;
  private static final long WAIT_MS = 60_000;

  @TempDir Path root;

  @Test
  @Timeout(180)
  void aSourceFollowingACatalogOwnedByAnotherProcessDeliversEveryCommitOnceInOrder()
      throws Exception {
    Map<String, String> properties = Map.of("warehouse", root.resolve("wh").toString());
    try (ChildJvm owner =
        ChildJvm.start(
            OwnerProcess.class,
            root.resolve("owner.err"),
            Duration.ofMillis(WAIT_MS),
            root.resolve("wh").toString(),
            String.valueOf(ROWS),
            "50")) {
      owner.await("ACK " + (ROWS / 2 - 1)); // the first half is committed before the job starts

      assertThatThrownBy(() -> SharedCatalogs.acquire(properties).close())
          .as("this JVM cannot own the catalog, so the source below follows it")
          .isInstanceOfSatisfying(
              CatalogLockedException.class, e -> assertThat(e.heldByAnotherProcess()).isTrue());

      SkadeSource<RowData> source =
          SkadeSource.builder()
              .catalogProperties(properties)
              .table(OwnerProcess.TABLE)
              .startupMode(StartupMode.EARLIEST)
              .pollInterval(Duration.ofMillis(100))
              .build();
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(1);
      List<String> seen = new ArrayList<>();
      try (Rows rows =
          new Rows(
              env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade")
                  .executeAndCollect())) {
        rows.take(ROWS / 2, seen, owner); // replayed from the log at startup
        owner.send("GO"); // the second half is committed while the job runs: only polling finds it
        rows.take(ROWS - ROWS / 2, seen, owner);
      }

      assertThat(seen)
          .containsExactlyElementsOf(LongStream.range(0, ROWS).mapToObj(id -> "+I " + id).toList());
      owner.await("DONE");
    }
  }

  /** The rows of a running job, taken off its result iterator by a thread of their own. */
  private static final class Rows implements AutoCloseable {
    private final CloseableIterator<RowData> iterator;
    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>(); // rows or a failure
    private final Thread collector;

    Rows(CloseableIterator<RowData> iterator) {
      this.iterator = iterator;
      this.collector = new Thread(this::collect, "follower-test-collector");
      collector.setDaemon(true);
      collector.start();
    }

    private void collect() {
      try {
        while (iterator.hasNext()) {
          RowData row = iterator.next();
          queue.add(row.getRowKind().shortString() + " " + row.getLong(0));
        }
        queue.add(new IllegalStateException("the unbounded job ended"));
      } catch (RuntimeException e) {
        queue.add(e); // the job failed, or close() below cancelled it
      }
    }

    /** Waits (bounded) for {@code count} more rows and appends them to {@code seen}. */
    void take(int count, List<String> seen, ChildJvm owner) throws Exception {
      long deadline = System.currentTimeMillis() + WAIT_MS;
      for (int i = 0; i < count; i++) {
        Object next = queue.poll(deadline - System.currentTimeMillis(), TimeUnit.MILLISECONDS);
        if (next instanceof Throwable failure) {
          throw new AssertionError("job failed after rows " + seen, failure);
        }
        if (next == null) {
          fail(
              "no row within "
                  + WAIT_MS
                  + " ms; rows so far "
                  + seen
                  + "; owner's stderr:\n"
                  + owner.stderr());
        }
        seen.add((String) next);
      }
    }

    @Override
    public void close() throws Exception {
      iterator.close(); // cancels the job
      collector.join(WAIT_MS);
    }
  }
}
