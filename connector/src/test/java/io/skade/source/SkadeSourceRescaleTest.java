package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.testing.ChangeLines;
import io.skade.testing.ChangeTap;
import io.skade.testing.ChangeTap.Received;
import io.skade.testing.IcebergWorkers;
import io.skade.testing.IdRows;
import io.skade.testing.LocalCluster;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.transforms.Transforms;
import org.apache.iceberg.types.Types;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A bucketed primary-key table ({@code bucket(id, 8)}) under continuous upserts and deletes of 64
 * keys (heavy churn per key), read by {@link SkadeSource} at parallelism 2 while writes go on,
 * stopped with a savepoint, restored at parallelism 3 (writes going on), stopped with a savepoint
 * again, and restored at parallelism 1 until every write is read.
 *
 * <p>Each change is tagged with the source subtask (reader) that emitted it, and all go to one
 * downstream task. Checked: within each run (between restores) all changes of one key come from one
 * reader; the whole changelog across the runs, applied strictly (an insert or {@code +U} meets no
 * row of its key, a {@code -U} or {@code -D} exactly the row it retracts), never fails and leaves
 * the table as Iceberg reads it at the end; and no change arrives behind the readers' watermark on
 * commit time ({@link SkadeSourceBuilder#commitTimeWatermarks}).
 *
 * <p>The test proves it could catch a split restored onto the wrong reader: a slow operator chained
 * to each reader (back-pressure) and fetches of few rows keep splits unfinished, so each savepoint
 * must leave work outstanding — the next run emits changes of commits made before the savepoint was
 * taken — and at least one savepoint must cut through a split, part of it emitted before and the
 * rest after.
 *
 * <p>Each seed is printed; replay one with {@code -Dskade.rescale.seed=<seed>
 * -Dskade.rescale.seeds=1}. More seeds: {@code mvn -B -pl connector -am
 * -Dtest=SkadeSourceRescaleTest -Dsurefire.failIfNoSpecifiedTests=false -Dskade.rescale.seeds=25
 * test}.
 */
class SkadeSourceRescaleTest {
  private static final Schema SCHEMA = IdRows.keyed("v");
  private static final int BUCKETS = 8;

  /**
   * Keys, and keys per commit: about 20 keys of 8 buckets per commit, so most of a commit's splits
   * (one per bucket) hold several changes and a savepoint nearly always finds a reader inside one.
   */
  private static final int KEYS = 64;

  private static final long BASE_SEED = Long.getLong("skade.rescale.seed", System.nanoTime());
  private static final int SEEDS = Integer.getInteger("skade.rescale.seeds", 2);

  /** The parallelism of each run: the first, then each restore. */
  private static final int[] PARALLELISM = {2, 3, 1};

  /** What the slow operator takes per change before a savepoint. */
  private static final long THROTTLE_NANOS = TimeUnit.MILLISECONDS.toNanos(60);

  /** Changes a run emits, and commits it has not reached yet, before its savepoint. */
  private static final int CHANGES_PER_RUN = 60;

  private static final int BACKLOG_COMMITS = 10;

  /** Commits the last run reads while they are written. */
  private static final int LAST_RUN_COMMITS = 15;

  @RegisterExtension static final LocalCluster cluster = new LocalCluster(3);

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  @TempDir Path savepoints;

  static IntStream seeds() {
    return IntStream.range(0, SEEDS);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  @Timeout(300)
  void eachKeysChangesComeFromOneReaderPerRunAndInCommitOrderAcrossRescales(int index)
      throws Exception {
    long seed = BASE_SEED + index;
    String where =
        "seed " + seed + " (replay with -Dskade.rescale.seed=" + seed + " -Dskade.rescale.seeds=1)";
    System.out.println("SkadeSourceRescaleTest " + where);
    Table table =
        catalog
            .get()
            .buildTable(TableIdentifier.of("db", "churn"), SCHEMA)
            .withPartitionSpec(PartitionSpec.builderFor(SCHEMA).bucket("id", BUCKETS).build())
            .create();
    Churn churn = new Churn(table, seed, where);
    CompletableFuture<Integer> writes = CompletableFuture.supplyAsync(churn::run);
    Changelog changelog = new Changelog(where);
    List<Long> seqAtSavepoint = new ArrayList<>();
    boolean done = false;
    try (ChangeTap tap = new ChangeTap()) {
      await()
          .atMost(Duration.ofSeconds(120))
          .pollInSameThread()
          .until(() -> churn.requireProgress() >= 4); // rows for the first run's full start
      String savepoint = null;
      for (int run = 0; run < PARALLELISM.length; run++) {
        boolean last = run == PARALLELISM.length - 1;
        tap.throttle(last ? 0 : THROTTLE_NANOS);
        JobID job = cluster.submit(job(tap, PARALLELISM[run]), "rescale-" + run, savepoint);
        int thisRun = run;
        try {
          if (!last) {
            // Until this run emitted some changes and commits it has not reached are waiting.
            await()
                .atMost(Duration.ofSeconds(120))
                .pollInSameThread()
                .until(
                    () ->
                        take(tap, job, changelog, thisRun, churn) >= 0
                            && changelog.run(thisRun).size() >= CHANGES_PER_RUN
                            && catalog.get().commitSeq() - changelog.lastSeq(thisRun)
                                >= BACKLOG_COMMITS);
            seqAtSavepoint.add(catalog.get().commitSeq());
            savepoint = cluster.stopWithSavepoint(job, savepoints);
          } else {
            int from = churn.commits.get();
            await()
                .atMost(Duration.ofSeconds(120))
                .pollInSameThread()
                .until(
                    () ->
                        take(tap, job, changelog, thisRun, churn) >= 0
                            && churn.commits.get() >= from + LAST_RUN_COMMITS);
            churn.stop = true;
            writes.get(60, TimeUnit.SECONDS);
            Map<Long, String> expected = ChangeLines.rows(table);
            // Until the changelog holds every write (or went wrong), and nothing more comes.
            await()
                .atMost(Duration.ofSeconds(120))
                .during(Duration.ofMillis(400))
                .pollInterval(Duration.ofMillis(50))
                .pollInSameThread()
                .until(
                    () ->
                        take(tap, job, changelog, thisRun, churn) >= 0
                            && (changelog.failure != null || changelog.rows.equals(expected)));
          }
        } finally {
          cluster.cancel(job);
        }
        take(tap, job, changelog, run, churn);
        System.out.println(
            "SkadeSourceRescaleTest "
                + where
                + ": run "
                + run
                + " at parallelism "
                + PARALLELISM[run]
                + " emitted "
                + changelog.run(run).size()
                + " changes");
        if (run > 0) {
          checkSavepointLeftWork(changelog, run, seqAtSavepoint.get(run - 1), where);
        }
        SoftAssertions checks = new SoftAssertions();
        checks
            .assertThat(changelog.keysOfManyReaders(run))
            .as(
                "%s: in run %d (parallelism %d), the keys whose changes came from more than one"
                    + " reader, with each reader's first change of the key",
                where, run, PARALLELISM[run])
            .isEmpty();
        checks
            .assertThat(changelog.failure)
            .as("%s: the changelog up to run %d, applied strictly", where, run)
            .isNull();
        checks.assertAll();
      }
      done = true;
    } finally {
      churn.stop = true;
      try {
        writes.get(60, TimeUnit.SECONDS);
      } catch (TimeoutException | ExecutionException e) {
        if (done) { // otherwise the test's own failure is what to report
          throw new AssertionError(
              where
                  + ": the writer did not stop; Iceberg's worker pool:\n"
                  + IcebergWorkers.stacks(),
              e);
        }
      }
    }
    Map<Integer, Set<String>> cuts = new TreeMap<>();
    for (int run = 1; run < PARALLELISM.length; run++) {
      cuts.put(run, splitsCut(changelog, run));
    }
    System.out.println(
        "SkadeSourceRescaleTest "
            + where
            + ": the splits that the savepoint"
            + " before each run cut through: "
            + cuts);
    assertThat(cuts.values())
        .as(
            "%s: the splits that the savepoint before each run cut through"
                + " (emitted partly before it and the rest after; none: no split was restored half"
                + " read)",
            where)
        .anySatisfy(cut -> assertThat(cut).isNotEmpty());
    assertThat(changelog.rows)
        .as(
            "%s: the changelog applied to an empty table equals Iceberg's"
                + " read of the table at the end",
            where)
        .isEqualTo(ChangeLines.rows(table));
  }

  /** One job: the source at {@code parallelism}, each change tagged by its reader, one sink. */
  private StreamExecutionEnvironment job(ChangeTap tap, int parallelism) {
    StreamExecutionEnvironment env = LocalCluster.environment(parallelism);
    SkadeSource<String> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.churn")
            .consumerId("rescale-test")
            .batchRows(4)
            .deserializer(new ChangeTap.Lines("churn"))
            .commitTimeWatermarks(Duration.ZERO)
            .build();
    tap.sinkInto(
        tap.tagged(
                env.fromSource(source, source.commitTimeWatermarks(), "churn").uid("source"),
                "reader")
            .process(new MarkLate())
            .setParallelism(1)
            .uid("late"),
        "one-task");
    return env;
  }

  /**
   * Marks a change {@code LATE} when it arrives at or behind the watermark of all readers: the
   * source's watermark on commit time must hold across savepoints and rescales too.
   */
  private static final class MarkLate extends ProcessFunction<String, String> {
    @Override
    public void processElement(String change, Context context, Collector<String> out) {
      long watermark = context.timerService().currentWatermark();
      out.collect(
          context.timestamp() <= watermark
              ? "LATE " + change + " at " + context.timestamp() + " <= " + watermark
              : change);
    }
  }

  /**
   * Applies what the tap received as changes of run {@code run}; how many. Fails if the job did, if
   * the writer stopped making progress, or if a change arrived behind the watermark.
   */
  private static int take(ChangeTap tap, JobID job, Changelog changelog, int run, Churn churn)
      throws Exception {
    cluster.requireNotFailed(job);
    churn.requireProgress();
    List<String> records = tap.drain();
    for (String record : records) {
      if (record.startsWith("LATE ")) {
        throw new AssertionError("run " + run + ": a change behind the watermark: " + record);
      } else {
        changelog.apply(Received.parse(record), run);
      }
    }
    return records.size();
  }

  /**
   * Asserts that the savepoint before run {@code run} left work outstanding: the run emitted
   * changes of commits made before the savepoint was taken.
   */
  private static void checkSavepointLeftWork(
      Changelog changelog, int run, long seqAtSavepoint, String where) {
    long outstanding =
        changelog.run(run).stream().filter(change -> change.commitSeq() <= seqAtSavepoint).count();
    System.out.println(
        "SkadeSourceRescaleTest "
            + where
            + ": the savepoint before run "
            + run
            + " left "
            + outstanding
            + " changes of commits up to commit_seq "
            + seqAtSavepoint
            + " to read");
    assertThat(outstanding)
        .as(
            "%s: changes of commits made before the savepoint before run %d"
                + " that the run emitted (none: the readers had no unfinished split, and the test could"
                + " not catch one restored to the wrong reader)",
            where, run)
        .isPositive();
  }

  /**
   * The splits that the savepoint before run {@code run} cut through: a window one reader of the
   * run before emitted part of, whose other changes in that reader's buckets came after it.
   */
  private static Set<String> splitsCut(Changelog changelog, int run) {
    Map<Integer, Set<Integer>> buckets = new HashMap<>();
    Map<Long, Set<Integer>> readersOfWindow = new HashMap<>();
    for (Received change : changelog.run(run - 1)) {
      buckets.computeIfAbsent(change.reader(), r -> new HashSet<>()).add(bucket(change.id()));
      readersOfWindow
          .computeIfAbsent(change.commitSeq(), s -> new HashSet<>())
          .add(change.reader());
    }
    Set<String> cut = new TreeSet<>();
    for (int later = run; later < changelog.runs.size(); later++) {
      for (Received change : changelog.run(later)) {
        for (int reader : readersOfWindow.getOrDefault(change.commitSeq(), Set.of())) {
          if (buckets.get(reader).contains(bucket(change.id()))) {
            cut.add("commit_seq " + change.commitSeq() + " of reader " + reader);
          }
        }
      }
    }
    return cut;
  }

  private static int bucket(long id) {
    return Transforms.bucket(BUCKETS).bind(Types.LongType.get()).apply(id);
  }

  /**
   * The changes received, by run, applied strictly to the rows of an empty table; the first change
   * that does not apply is described in {@link #failure}, and the rest are applied leniently (so a
   * wait for the end still ends).
   */
  private static final class Changelog {
    final Map<Long, String> rows = new HashMap<>();
    final List<List<Received>> runs = new ArrayList<>();

    /** Each key's changes so far, described with their place in the whole changelog. */
    private final Map<Long, List<String>> byKey = new HashMap<>();

    private int applied;
    private final String where;
    String failure;

    Changelog(String where) {
      this.where = where;
    }

    List<Received> run(int run) {
      while (runs.size() <= run) {
        runs.add(new ArrayList<>());
      }
      return runs.get(run);
    }

    /** The commit_seq of the newest change of run {@code run}, 0 before its first. */
    long lastSeq(int run) {
      return run(run).stream().mapToLong(Received::commitSeq).max().orElse(0);
    }

    void apply(Received change, int run) {
      run(run).add(change);
      List<String> ofKey = byKey.computeIfAbsent(change.id(), k -> new ArrayList<>());
      ofKey.add("#" + applied + " run " + run + " " + change);
      String there = rows.get(change.id());
      boolean applies =
          change.inserts()
              ? !rows.containsKey(change.id())
              : rows.containsKey(change.id()) && Objects.equals(there, change.v());
      if (!applies && failure == null) {
        failure =
            where
                + ": change #"
                + applied
                + " in run "
                + run
                + " ("
                + change
                + ") "
                + (change.inserts()
                    ? "meets a row of its key: " + there
                    : "does not retract the row there: " + (there == null ? "none" : there))
                + "; the key's changes so far: "
                + ofKey.subList(Math.max(0, ofKey.size() - 12), ofKey.size());
      }
      applied++;
      if (change.inserts()) {
        rows.put(change.id(), change.v());
      } else if (Objects.equals(there, change.v())) {
        rows.remove(change.id());
      }
    }

    Map<Long, Set<Integer>> readersPerKey(int run) {
      Map<Long, Set<Integer>> readers = new TreeMap<>();
      run(run)
          .forEach(
              change ->
                  readers.computeIfAbsent(change.id(), k -> new TreeSet<>()).add(change.reader()));
      return readers;
    }

    /** Per key read by several readers in run {@code run}, each reader's first change of it. */
    Map<Long, List<String>> keysOfManyReaders(int run) {
      Map<Long, List<String>> keys = new TreeMap<>();
      readersPerKey(run)
          .forEach(
              (key, readers) -> {
                if (readers.size() > 1) {
                  Set<Integer> seen = new LinkedHashSet<>();
                  List<String> firsts = new ArrayList<>();
                  List<Received> changes = run(run);
                  for (int i = 0; i < changes.size(); i++) {
                    Received change = changes.get(i);
                    if (change.id() == key && seen.add(change.reader())) {
                      firsts.add("#" + i + " of the run: " + change);
                    }
                  }
                  keys.put(key, firsts);
                }
              });
      return keys;
    }
  }

  /** Upserts and deletes of {@link #KEYS} keys, one commit at a time, until stopped. */
  private static final class Churn {
    /** Longer than any commit takes, even on a loaded machine. */
    private static final long STUCK_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final TableWriter writer;
    private final Random random;
    private final String where;
    final AtomicInteger commits = new AtomicInteger();
    private volatile long lastProgress = System.nanoTime();
    volatile boolean stop;

    Churn(Table table, long seed, String where) {
      this.writer = new TableWriter(table);
      this.random = new Random(seed);
      this.where = where;
    }

    /**
     * The commits made so far; fails, naming what Iceberg's worker pool does, when the writer runs
     * and made no commit for a long time.
     */
    int requireProgress() {
      if (!stop && System.nanoTime() - lastProgress > STUCK_NANOS) {
        throw new AssertionError(
            where
                + ": the writer made no commit in "
                + TimeUnit.NANOSECONDS.toSeconds(STUCK_NANOS)
                + " s (after "
                + commits.get()
                + "); Iceberg's worker pool, which writes every commit's manifests:\n"
                + IcebergWorkers.stacks());
      }
      return commits.get();
    }

    /** Commits until stopped; how many commits it made. */
    int run() {
      try {
        while (!stop) {
          commit();
          Thread.sleep(15); // a pace, so the history stays short on a fast machine
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return commits.get();
    }

    /** Upserts 12 to 30 keys with values naming the commit; sometimes deletes one to four. */
    private void commit() {
      int n = commits.get() + 1;
      if (n > 1 && random.nextInt(4) == 0) {
        List<Record> keys = new ArrayList<>();
        for (int i = 1 + random.nextInt(4); i > 0; i--) {
          keys.add(row(random.nextInt(KEYS), null));
        }
        writer.deleteKeys(keys);
      } else {
        Set<Long> keys = new LinkedHashSet<>();
        for (int i = 12 + random.nextInt(19); i > 0; i--) {
          keys.add((long) random.nextInt(KEYS));
        }
        writer.upsert(keys.stream().map(id -> row(id, "c" + n)).toList());
      }
      lastProgress = System.nanoTime();
      commits.set(n);
    }

    private static Record row(long id, String v) {
      return IdRows.row(SCHEMA, id, v);
    }
  }
}
