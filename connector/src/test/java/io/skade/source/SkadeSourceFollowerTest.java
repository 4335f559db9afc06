package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import io.skade.catalog.CatalogLockedException;
import io.skade.catalog.SharedCatalogs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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
 * A source in a process that does not own the catalog: another JVM ({@link OwnerProcess}) owns
 * it and commits, so the source follows it read-only and learns of commits only by polling.
 */
class SkadeSourceFollowerTest {
  private static final int ROWS = 40;
  private static final long WAIT_MS = 60_000;

  @TempDir Path root;

  @Test
  @Timeout(180)
  void aSourceFollowingACatalogOwnedByAnotherProcessDeliversEveryCommitOnceInOrder() throws Exception {
    Map<String, String> properties = Map.of("warehouse", root.resolve("wh").toString());
    try (Owner owner = Owner.start(root, ROWS)) {
      owner.await("ACK " + (ROWS / 2 - 1)); // the first half is committed before the job starts

      assertThatThrownBy(() -> SharedCatalogs.acquire(properties).close())
          .as("this JVM cannot own the catalog, so the source below follows it")
          .isInstanceOfSatisfying(CatalogLockedException.class,
              e -> assertThat(e.heldByAnotherProcess()).isTrue());

      SkadeSource<RowData> source = SkadeSource.builder()
          .catalogProperties(properties)
          .table(OwnerProcess.TABLE)
          .startupMode(StartupMode.EARLIEST)
          .pollInterval(Duration.ofMillis(100))
          .build();
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(1);
      List<String> seen = new ArrayList<>();
      try (Rows rows = new Rows(
          env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").executeAndCollect())) {
        rows.take(ROWS / 2, seen, owner); // replayed from the log at startup
        owner.go(); // the second half is committed while the job runs: only polling finds it
        rows.take(ROWS - ROWS / 2, seen, owner);
      }

      assertThat(seen).containsExactlyElementsOf(
          LongStream.range(0, ROWS).mapToObj(id -> "+I " + id).toList());
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
    void take(int count, List<String> seen, Owner owner) throws Exception {
      long deadline = System.currentTimeMillis() + WAIT_MS;
      for (int i = 0; i < count; i++) {
        Object next = queue.poll(deadline - System.currentTimeMillis(), TimeUnit.MILLISECONDS);
        if (next instanceof Throwable failure) {
          throw new AssertionError("job failed after rows " + seen, failure);
        }
        if (next == null) {
          fail("no row within " + WAIT_MS + " ms; rows so far " + seen + "; owner's stderr:\n"
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

  /** The {@link OwnerProcess} child and its stdout, line by line. */
  private static final class Owner implements AutoCloseable {
    private final Process process;
    private final Path stderr;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private Owner(Process process, Path stderr) {
      this.process = process;
      this.stderr = stderr;
      Thread reader = new Thread(this::readStdout, "owner-stdout-" + process.pid());
      reader.setDaemon(true);
      reader.start();
    }

    static Owner start(Path root, int rows) throws IOException {
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      Path stderr = root.resolve("owner.err");
      Process process = new ProcessBuilder(java.toString(), "-cp",
          System.getProperty("java.class.path"), OwnerProcess.class.getName(),
          root.resolve("wh").toString(), String.valueOf(rows), "50")
          .redirectError(stderr.toFile())
          .start();
      return new Owner(process, stderr);
    }

    private void readStdout() {
      try (BufferedReader in = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("stdout failed: " + e);
      } finally {
        lines.add("EOF");
      }
    }

    /** Waits (bounded) for the line {@code expected}, skipping the lines before it. */
    void await(String expected) throws InterruptedException {
      long deadline = System.currentTimeMillis() + WAIT_MS;
      String line;
      do {
        line = lines.poll(deadline - System.currentTimeMillis(), TimeUnit.MILLISECONDS);
        if (line == null || line.equals("EOF") || line.startsWith("stdout failed")) {
          fail("the owner process did not print '" + expected + "' within " + WAIT_MS + " ms ("
              + (line == null ? "timed out" : line) + "); its stderr:\n" + stderr());
        }
      } while (!line.equals(expected));
    }

    /** Lets the owner commit its second half. */
    void go() throws IOException {
      OutputStream in = process.getOutputStream();
      in.write("GO\n".getBytes(StandardCharsets.UTF_8));
      in.flush();
    }

    String stderr() {
      try {
        return Files.exists(stderr) ? Files.readString(stderr) : "";
      } catch (IOException e) {
        return "(unreadable: " + e + ")";
      }
    }

    @Override
    public void close() throws Exception {
      try {
        process.getOutputStream().close(); // the owner closes its catalog and exits
        if (!process.waitFor(WAIT_MS, TimeUnit.MILLISECONDS)) {
          fail("the owner process did not exit within " + WAIT_MS + " ms of its stdin closing");
        }
        assertThat(process.exitValue()).as("owner's exit code; its stderr:\n%s", stderr())
            .isZero();
      } finally {
        process.destroyForcibly(); // a no-op once it exited; never leave it holding the lock
        process.waitFor(WAIT_MS, TimeUnit.MILLISECONDS);
      }
    }
  }
}
