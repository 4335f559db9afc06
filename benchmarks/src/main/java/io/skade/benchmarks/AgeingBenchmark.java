package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.lookup.LookupCaches;
import io.skade.lookup.PointLookup;
import io.skade.maintenance.MaintainedTable;
import io.skade.sink.TableCompaction;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * How a primary-key table ages under a streaming upsert, with and without maintenance, side by side
 * in one run: two tables get the same commits, each an upsert of a share of the keys (a data file
 * and an equality-delete file, as a Flink upsert writer's checkpoint commits); the maintained one
 * is compacted ({@link TableCompaction}: Iceberg's Flink planner and committer, skade's rewriters
 * writing the rows in key order, deletes folded) every {@code compactEvery} commits and its
 * snapshots expired (keeping 10) every 10. At commit 100 and every {@code every} commits after:
 * lookup p50 / p99 and probes/s (one thread, warm caches, random keys; 20,000 probes after as many
 * to warm up, each phase cut at a minute, and the probes timed), commit → rows read p50 / p99 (the
 * changelog engine planning and reading each of the last {@code timed} commits, as a CDC reader
 * does after a commit), live data and delete files, the metadata a reader loads (metadata file and
 * manifests), and the minutes since the start. Asserts nothing.
 *
 * <p>System properties: {@code skade.bench.ageing.rows} (1,000,000), {@code .share} (0.01 of the
 * keys per commit), {@code .commits} (3,000), {@code .every} (500), {@code .compactEvery} (20),
 * {@code .timed} (5), and for the table without maintenance, whose reads of a commit take minutes
 * at full scale, {@code .plainCommits} (its last commit; default {@code .commits}) and {@code
 * .plainTimed} (its commits timed per report; default {@code .timed}).
 */
public final class AgeingBenchmark {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "amount", Types.LongType.get()),
              Types.NestedField.optional(3, "note", Types.StringType.get())),
          Set.of(1));
  private static final int PROBES = 20_000;

  /**
   * Each probing phase (warm-up, timed) stops after this long even with fewer probes: without
   * maintenance a probe checks a found row against every later equality delete file, which at a few
   * hundred commits no longer fit the lookup caches and are read again per probe.
   */
  private static final long PROBING_NANOS = 60_000_000_000L;

  private AgeingBenchmark() {}

  public static void main(String[] args) throws Exception {
    long rows = Long.getLong("skade.bench.ageing.rows", 1_000_000L);
    double share = Double.parseDouble(System.getProperty("skade.bench.ageing.share", "0.01"));
    int commits = Integer.getInteger("skade.bench.ageing.commits", 3_000);
    int every = Integer.getInteger("skade.bench.ageing.every", 500);
    int compactEvery = Integer.getInteger("skade.bench.ageing.compactEvery", 20);
    int timedCommits = Integer.getInteger("skade.bench.ageing.timed", 5);
    int plainCommits = Integer.getInteger("skade.bench.ageing.plainCommits", commits);
    int plainTimed = Integer.getInteger("skade.bench.ageing.plainTimed", timedCommits);
    int perCommit = (int) Math.max(1, rows * share);
    Path warehouse = Files.createTempDirectory("skade-ageing-");
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
    System.out.printf(
        "ageing: %,d rows, %,d upserted per commit, %,d commits (without"
            + " maintenance: %,d); maintained: compacted every %d commits, snapshots expired (10 kept)"
            + " every 10%n",
        rows, perCommit, commits, plainCommits, compactEvery);
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("bench", properties);
      catalog.createNamespace(Namespace.of("db"));
      Aged plain = new Aged(catalog, "plain", rows);
      Aged maintained = new Aged(catalog, "maintained", rows);
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(2);
      SplittableRandom random = new SplittableRandom(7);
      System.out.printf(
          "%-10s %6s %9s %9s %9s %6s %10s %10s %7s %7s %10s %6s%n",
          "table",
          "commit",
          "lookupP50",
          "lookupP99",
          "probes/s",
          "probes",
          "readP50ms",
          "readP99ms",
          "data",
          "deletes",
          "metaKB",
          "min");
      long started = System.nanoTime();
      for (int commit = 1; commit <= commits; commit++) {
        List<Record> batch = batch(random, rows, perCommit, commit);
        boolean report = commit == 100 || commit % every == 0 || commit == commits;
        boolean plainToo = commit <= plainCommits;
        if (plainToo) {
          plain.commit(batch, report || timed(commit, every, plainTimed));
        }
        maintained.commit(batch, report || timed(commit, every, timedCommits));
        if (commit % compactEvery == 0) {
          TableCompaction.run(env, properties, maintained.id);
          maintained.table.refresh();
        }
        if (commit % 10 == 0) {
          MaintainedTable.of(maintained.table, List::of)
              .expireSnapshots()
              .retainLast(10)
              .expireOlderThan(System.currentTimeMillis())
              .commit();
        }
        if (report) {
          if (plainToo) {
            plain.report(commit, random, rows, started);
          }
          maintained.report(commit, random, rows, started);
        }
      }
    } finally {
      Harness.deleteTree(warehouse);
    }
  }

  /** Whether a commit is one of the {@code count} timed before a report (or the report's). */
  private static boolean timed(int commit, int every, int count) {
    int untilReport = commit <= 100 ? 100 - commit : (every - commit % every) % every;
    return untilReport < count;
  }

  private static List<Record> batch(SplittableRandom random, long rows, int count, int commit) {
    Map<Long, Record> batch = new HashMap<>();
    while (batch.size() < count) {
      long id = random.nextLong(rows);
      batch.put(id, row(id, commit, "c" + commit));
    }
    return new ArrayList<>(batch.values());
  }

  private static Record row(long id, long amount, String note) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.set(0, id);
    row.set(1, amount);
    row.set(2, note);
    return row;
  }

  /** One of the two tables, with the commit → read times of its recent commits. */
  private static final class Aged {
    final TableIdentifier id;
    final Table table;
    final TableWriter writer;
    final List<Long> readNanos = new ArrayList<>();

    Aged(SkadeCatalog catalog, String name, long rows) {
      this.id = TableIdentifier.of("db", name);
      this.table =
          catalog
              .buildTable(id, SCHEMA)
              .withProperties(PointLookup.LOOKUP_FILE_PROPERTIES)
              .create();
      this.writer = new TableWriter(table);
      List<Record> initial = new ArrayList<>();
      for (long i = 0; i < rows; i++) {
        initial.add(row(i, 0, "initial"));
      }
      writer.append(initial);
      table.refresh();
    }

    void commit(List<Record> batch, boolean timed) {
      Snapshot before = table.currentSnapshot();
      Snapshot after = writer.upsert(batch);
      if (timed) {
        long started = System.nanoTime();
        long read =
            new ChangelogReader(table, ChangelogOptions.defaults())
                .read(before.snapshotId(), after.snapshotId())
                .size();
        readNanos.add(System.nanoTime() - started);
        if (read < batch.size()) {
          throw new IllegalStateException(id + ": read " + read + " changes of " + batch.size());
        }
      }
    }

    void report(int commit, SplittableRandom random, long rows, long started)
        throws InterruptedException {
      table.refresh();
      // The compaction job just before a report leaves threads winding down and garbage: let
      // them settle, so the probes time the lookups rather than the job's teardown.
      System.gc();
      Thread.sleep(2_000);
      long[] probes = new long[PROBES];
      int probed = 0;
      double probesPerSecond;
      try (LookupCaches.Handle caches = LookupCaches.acquire()) {
        PointLookup lookup =
            new PointLookup(table, List.of("id"), caches.caches(), new PointLookup.Counters());
        long warming = System.nanoTime();
        for (int i = 0; i < PROBES && System.nanoTime() - warming < PROBING_NANOS; i++) {
          lookup.lookup(null, List.of(random.nextLong(rows))); // warm the caches and the code
        }
        long probing = System.nanoTime();
        while (probed < PROBES && System.nanoTime() - probing < PROBING_NANOS) {
          long start = System.nanoTime();
          if (lookup.lookup(null, List.of(random.nextLong(rows))).size() != 1) {
            throw new IllegalStateException(id + ": a key of the table was not found");
          }
          probes[probed++] = System.nanoTime() - start;
        }
        probesPerSecond = probed / ((System.nanoTime() - probing) / 1e9);
      }
      probes = Arrays.copyOf(probes, probed);
      Arrays.sort(probes);
      long[] reads = readNanos.stream().mapToLong(Long::longValue).sorted().toArray();
      readNanos.clear();
      Snapshot current = table.currentSnapshot();
      long metadataBytes =
          table
              .io()
              .newInputFile(
                  ((HasTableOperations) table).operations().current().metadataFileLocation())
              .getLength();
      long dataFiles = 0;
      long deleteFiles = 0;
      for (ManifestFile manifest : current.allManifests(table.io())) {
        metadataBytes += manifest.length();
        if (manifest.content() == ManifestContent.DATA) {
          dataFiles += manifest.addedFilesCount() + manifest.existingFilesCount();
        } else {
          deleteFiles += manifest.addedFilesCount() + manifest.existingFilesCount();
        }
      }
      System.out.printf(
          "%-10s %6d %8.1fus %8.1fus %9.0f %6d %10.2f %10.2f %7d %7d %10.1f %6.1f%n",
          id.name(),
          commit,
          probes[probed / 2] / 1e3,
          probes[(int) (probed * 0.99)] / 1e3,
          probesPerSecond,
          probed,
          reads[reads.length / 2] / 1e6,
          reads[Math.min(reads.length - 1, (int) (reads.length * 0.99))] / 1e6,
          dataFiles,
          deleteFiles,
          metadataBytes / 1024.0,
          (System.nanoTime() - started) / 6e10);
    }
  }
}
