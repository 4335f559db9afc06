package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.LongStream;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a real owner process ({@link CommitLoopChild}) with SIGKILL while it commits, and checks
 * what the next owner finds: a gapless log, metadata files for every row, table pointers that agree
 * with the log, and every commit the dead process acknowledged.
 */
class CrashRecoveryTest {
  /** Kills per run of the suite (on rocksdbjni, then on frocksdbjni); more with {@code -D}. */
  private static final int ROUNDS = Integer.getInteger("skade.crash.rounds", 20);

  private static final int MAX_EXTRA_DELAY_MS = 300;
  private static final long CHILD_TIMEOUT_MS = 60_000;
  private static final long FOLLOWER_TIMEOUT_MS = 30_000;

  @TempDir Path root;

  @Test
  void killedMidCommitTheStoreReopensGaplessWithEveryAcknowledgedCommit() throws Exception {
    // Replay a failing run with -Dskade.crash.seed=<seed from the message>.
    long seed = Long.getLong("skade.crash.seed", System.nanoTime());
    System.out.println("CrashRecoveryTest seed " + seed);
    Random random = new Random(seed);
    Path warehouse = root.resolve("wh");
    List<Ack> acknowledged = new ArrayList<>();

    for (int round = 0; round < ROUNDS; round++) {
      int extraDelayMs = random.nextInt(MAX_EXTRA_DELAY_MS + 1);
      String context =
          "seed "
              + seed
              + ", round "
              + round
              + " (killed "
              + extraDelayMs
              + " ms after the first ACK)";
      long started = System.nanoTime();
      List<Ack> acks;
      try (Child child = Child.start(warehouse, root.resolve("child-" + round + ".err"))) {
        child.awaitReadyAndAcks(1, context);
        // Not a stand-in for a condition: it moves the kill to a random point of the commit loop.
        Thread.sleep(extraDelayMs);
        assertThat(child.process.isAlive())
            .as(
                () ->
                    context
                        + ": the child exited on its own before the kill; its stderr:\n"
                        + child.stderr())
            .isTrue();
        acks = child.kill();
      }
      long killed = System.nanoTime();
      acknowledged.addAll(acks);
      long commitSeq = assertRecovered(warehouse, acknowledged, context);
      System.out.printf(
          "%s: %d ACKs, commitSeq %d; child ran %d ms, checks took %d ms%n",
          context,
          acks.size(),
          commitSeq,
          (killed - started) / 1_000_000,
          (System.nanoTime() - killed) / 1_000_000);
    }
  }

  @Test
  void aSecondProcessCannotOwnTheCatalogAndIsToldWhy() throws Exception {
    Path warehouse = root.resolve("wh");
    String catalogDir = warehouse.resolve("_catalog").toAbsolutePath().toString();
    List<Ack> acknowledged;
    try (Child child = Child.start(warehouse, root.resolve("child.err"))) {
      child.awaitReadyAndAcks(0, "lock test");

      assertThatThrownBy(() -> openOwner(warehouse))
          .isInstanceOf(CatalogLockedException.class)
          .hasMessageContaining(catalogDir)
          .hasMessageContaining("another process");

      // A follower needs no lock: it reads the owner's log while the owner keeps committing.
      SkadeCatalog follower = new SkadeCatalog();
      follower.initialize(
          "f", Map.of("warehouse", warehouse.toString(), "catalog.access", "follower"));
      try {
        assertThat(follower.isFollower()).isTrue();
        long seenAtOpen = follower.commitSeq();
        assertThat(seenAtOpen).as("the owner's CREATE commits, seen by the follower").isPositive();

        long target = child.awaitAckAbove(seenAtOpen, "follower test");
        // Every read of the log, not only the last, must be gapless: a gap fails at once.
        List<CommitEvent> log =
            await("the follower's log reaching commit " + target)
                .atMost(Duration.ofMillis(FOLLOWER_TIMEOUT_MS))
                .pollInterval(Duration.ofMillis(10))
                .until(
                    () -> {
                      List<CommitEvent> read = readLog(follower);
                      assertGapless(read, "follower's log while the owner commits");
                      return read;
                    },
                    read -> lastSeq(read) >= target);
        assertThat(lastSeq(log))
            .as(
                "the follower's log reaches commit %d the owner acknowledged after it opened",
                target)
            .isGreaterThanOrEqualTo(target)
            .isGreaterThan(seenAtOpen);
      } finally {
        follower.close();
      }
      acknowledged = child.kill();
    }

    // The lock died with its owner: the next owner opens, whole, with every acknowledged commit.
    assertRecovered(warehouse, acknowledged, "reopened after the lock holder was killed");
  }

  // ---- checks ------------------------------------------------------------------------------

  /** Reopens the catalog as the next owner and checks it; returns its commitSeq. */
  private static long assertRecovered(Path warehouse, List<Ack> acknowledged, String context)
      throws IOException {
    try (SkadeCatalog catalog = openOwner(warehouse)) {
      List<CommitEvent> log = readLog(catalog);
      assertGapless(log, context);
      assertThat(catalog.commitSeq())
          .as(context + ": commitSeq is the last log row")
          .isEqualTo(lastSeq(log));

      Map<String, CommitEvent> newestByTable = new HashMap<>();
      Map<String, Set<Long>> snapshotsByTable = new HashMap<>();
      for (CommitEvent row : log) {
        assertThat(row.operation())
            .as(context + ": operation of %s", row)
            .isIn(CommitOperation.CREATE, CommitOperation.UPDATE);
        // A metadata file is written before its pointer swap: no row may point at a missing one.
        assertThat(localPath(row.metadataLocation()))
            .as(context + ": metadata file of %s", row)
            .exists();
        newestByTable.put(row.tableKey(), row);
        snapshotsByTable
            .computeIfAbsent(row.tableKey(), k -> new HashSet<>())
            .addAll(row.addedSnapshotIds());
      }

      List<TableIdentifier> tables = catalog.listTables(CommitLoopChild.DB);
      assertThat(tables).as(context).containsExactlyInAnyOrderElementsOf(CommitLoopChild.TABLES);
      for (TableIdentifier id : tables) {
        String key = catalog.commitTableKey(id);
        Table table = catalog.loadTable(id);
        assertThat(((HasTableOperations) table).operations().current().metadataFileLocation())
            .as(context + ": %s points at its newest log row's metadata", id)
            .isEqualTo(newestByTable.get(key).metadataLocation());
        // The metadata chain and the log agree: each logged append is a snapshot, and no other.
        Set<Long> snapshots = new HashSet<>();
        for (Snapshot snapshot : table.snapshots()) {
          snapshots.add(snapshot.snapshotId());
        }
        assertThat(snapshots)
            .as(context + ": snapshots of %s vs. its log rows", id)
            .isEqualTo(snapshotsByTable.getOrDefault(key, Set.of()));
      }

      long commitSeq = catalog.commitSeq();
      for (Ack ack : acknowledged) {
        assertThat(ack.seq()).as(context + ": acknowledged %s", ack).isLessThanOrEqualTo(commitSeq);
        CommitEvent row = log.get((int) ack.seq() - 1); // gapless from 1, checked above
        assertThat(row.operation())
            .as(context + ": log row of acknowledged %s", ack)
            .isEqualTo(CommitOperation.UPDATE);
        assertThat(row.tableKey())
            .as(context + ": log row of acknowledged %s", ack)
            .isEqualTo(ack.tableKey());
        assertThat(row.addedSnapshotIds())
            .as(context + ": log row of acknowledged %s", ack)
            .containsExactly(ack.snapshotId());
      }
      return commitSeq;
    }
  }

  private static void assertGapless(List<CommitEvent> log, String context) {
    List<Long> seqs = log.stream().map(CommitEvent::commitSeq).toList();
    assertThat(seqs)
        .as(context + ": commit seqs are exactly 1..N")
        .isEqualTo(LongStream.rangeClosed(1, seqs.size()).boxed().toList());
  }

  private static List<CommitEvent> readLog(SkadeCatalog catalog) {
    List<CommitEvent> log = new ArrayList<>();
    catalog.commitsSince(0).forEach(log::add);
    return log;
  }

  private static long lastSeq(List<CommitEvent> log) {
    return log.isEmpty() ? 0 : log.get(log.size() - 1).commitSeq();
  }

  /** Metadata locations are plain paths for a plain-path warehouse, but may be file: URIs. */
  private static Path localPath(String location) {
    return location.startsWith("file:") ? Path.of(URI.create(location)) : Path.of(location);
  }

  private static SkadeCatalog openOwner(Path warehouse) {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("test", Map.of("warehouse", warehouse.toString()));
    return catalog;
  }

  // ---- the child process -------------------------------------------------------------------

  /** One {@code ACK} line of the child: a commit it saw returned, hence durable. */
  record Ack(long seq, String tableKey, long snapshotId) {}

  /** A running {@link CommitLoopChild} and the reader of its stdout. */
  private static final class Child implements AutoCloseable {
    final Process process;
    private final Path stderrFile;
    private final Thread reader;
    // Guarded by this: what the reader has seen so far.
    private boolean ready;
    private boolean eof;
    private final List<Ack> acks = new ArrayList<>();
    private final List<String> otherOutput = new ArrayList<>();
    private IOException readFailure;

    private Child(Process process, Path stderrFile) {
      this.process = process;
      this.stderrFile = stderrFile;
      this.reader = new Thread(this::readStdout, "child-stdout-" + process.pid());
      reader.setDaemon(true);
      reader.start();
    }

    static Child start(Path warehouse, Path stderrFile) throws IOException {
      Path java = Path.of(System.getProperty("java.home"), "bin", "java");
      // Surefire's java.class.path is a manifest-only jar whose Class-Path the child inherits.
      Process process =
          new ProcessBuilder(
                  java.toString(),
                  "-cp",
                  System.getProperty("java.class.path"),
                  CommitLoopChild.class.getName(),
                  warehouse.toString())
              .redirectError(stderrFile.toFile())
              .start();
      return new Child(process, stderrFile);
    }

    /** Splits stdout into lines; a last line without its newline was cut by the kill: ignored. */
    private void readStdout() {
      try (InputStream in = process.getInputStream()) {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b >= 0; b = in.read()) {
          if (b == '\n') {
            onLine(line.toString(StandardCharsets.UTF_8));
            line.reset();
          } else {
            line.write(b);
          }
        }
      } catch (IOException e) {
        // Kept for kill(), which fails the test: ACKs after this point would be unaccounted for.
        synchronized (this) {
          readFailure = e;
        }
      } finally {
        synchronized (this) {
          eof = true;
          notifyAll();
        }
      }
    }

    private synchronized void onLine(String line) {
      String[] parts = line.trim().split(" ");
      if (parts.length == 1 && parts[0].equals("READY")) {
        ready = true;
      } else if (parts.length == 4 && parts[0].equals("ACK")) {
        acks.add(new Ack(Long.parseLong(parts[1]), parts[2], Long.parseLong(parts[3])));
      } else {
        otherOutput.add(line);
      }
      notifyAll();
    }

    /** Waits (bounded) until the child printed READY and at least {@code minAcks} ACKs. */
    void awaitReadyAndAcks(int minAcks, String context) throws InterruptedException {
      awaitCondition(
          () -> ready && acks.size() >= minAcks, "READY and " + minAcks + " ACK(s)", context);
    }

    /** Waits (bounded) for an ACK of a commit after {@code seq}; returns its seq. */
    long awaitAckAbove(long seq, String context) throws InterruptedException {
      awaitCondition(
          () -> acks.stream().anyMatch(a -> a.seq() > seq), "an ACK above commit " + seq, context);
      synchronized (this) {
        return acks.stream().mapToLong(Ack::seq).max().orElseThrow();
      }
    }

    private synchronized void awaitCondition(BooleanSupplier condition, String what, String context)
        throws InterruptedException {
      long deadline = System.currentTimeMillis() + CHILD_TIMEOUT_MS;
      while (!condition.getAsBoolean()) {
        long left = deadline - System.currentTimeMillis();
        if (eof || left <= 0) {
          fail(
              context
                  + ": the child "
                  + (eof
                      ? "exited"
                      : "did not print " + what + " within " + CHILD_TIMEOUT_MS + " ms")
                  + " (ready="
                  + ready
                  + ", acks="
                  + acks.size()
                  + ", other stdout="
                  + otherOutput
                  + "); its stderr:\n"
                  + stderr());
        }
        wait(left);
      }
    }

    /** SIGKILLs the child, then returns every ACK it managed to print. */
    List<Ack> kill() throws InterruptedException {
      // SIGKILL on Linux: no shutdown hooks, no RocksDB close. Through the ProcessHandle because
      // Process.destroyForcibly() also closes our end of stdout, losing ACKs still in the pipe.
      // A process the child started inherits its stdout until it execs: it would hold the
      // pipe open after the kill. The child starts none once READY; listed if that changes.
      List<String> started =
          process
              .descendants()
              .map(p -> p.pid() + " " + p.info().commandLine().orElse("?"))
              .toList();
      process.toHandle().destroyForcibly();
      process.waitFor();
      reader.join(CHILD_TIMEOUT_MS); // drains the lines still in the pipe
      synchronized (this) {
        assertThat(eof)
            .as(
                "stdout of the killed child was read to its end within %d ms;"
                    + " processes the child had started: %s",
                CHILD_TIMEOUT_MS, started)
            .isTrue();
        assertThat(readFailure).as("reading the child's stdout").isNull();
        return List.copyOf(acks);
      }
    }

    String stderr() {
      try {
        return Files.exists(stderrFile) ? Files.readString(stderrFile) : "";
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public void close() throws InterruptedException {
      // Also runs after a failed assertion: never leave a child holding the catalog's lock.
      process.destroyForcibly();
      process.waitFor(CHILD_TIMEOUT_MS, TimeUnit.MILLISECONDS);
    }
  }
}
