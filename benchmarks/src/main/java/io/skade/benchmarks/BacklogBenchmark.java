package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.sink.SkadeTableLoader;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Backlog catch-up of a bucketed primary-key table: {@code commits} commits of {@code rows} new
 * keys each into a table of 8 buckets on its key, then bounded jobs count every row: skade's source
 * from the first snapshot (each commit's changes, each bucket an ordering unit) and Iceberg's
 * {@code IcebergSource} bounded read of the last snapshot, each at parallelism 1 and 2, side by
 * side in one run. Each is timed by its job's net runtime (planning and deployment included) and,
 * beside it, from its submission to a session cluster all reads share ({@link BoundedCount}).
 * Asserts nothing but the row counts.
 *
 * <p>With {@code skade.bench.storage=s3} the same backlog is then written to an S3 warehouse
 * ({@link ObjectStorage}) and read again at each of {@code skade.bench.s3.delays}, with the
 * requests each read made; the local figures come first, from the same code.
 *
 * <p>System properties: {@code skade.bench.backlog.commits} (200; 100 on S3), {@code .rows}
 * (5,000), {@code .buckets} (8), and {@link ObjectStorage}'s.
 */
public final class BacklogBenchmark {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "ts_nanos", Types.LongType.get()),
              Types.NestedField.optional(3, "payload", Types.StringType.get())),
          Set.of(1));

  private static final TableIdentifier ID = TableIdentifier.of("bench", "backlog");

  private BacklogBenchmark() {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs("org.apache.flink");
    int commits = Integer.getInteger("skade.bench.backlog.commits", ObjectStorage.s3() ? 100 : 200);
    int rows = Integer.getInteger("skade.bench.backlog.rows", 5_000);
    int buckets = Integer.getInteger("skade.bench.backlog.buckets", 8);
    Harness.printHeader("skade backlog benchmark | load average " + Harness.loadAverage());
    long expected = (long) commits * rows;
    System.out.printf(
        "backlog: %d commits x %,d new keys into a primary-key table of %d"
            + " buckets; bounded jobs count %,d rows%n",
        commits, rows, buckets, expected);
    Path root = Files.createTempDirectory("skade-backlog-");
    try {
      Map<String, String> local = Map.of("warehouse", root.resolve("local").toString());
      write(local, commits, rows, buckets);
      System.out.println();
      System.out.println("local disk:");
      read(local, expected, null);
      if (ObjectStorage.s3()) {
        try (ObjectStorage s3 = ObjectStorage.start(root.resolve("s3"))) {
          Map<String, String> properties = s3.catalogProperties("backlog", root.resolve("catalog"));
          long started = System.nanoTime();
          write(properties, commits, rows, buckets); // through the proxy, no delay yet
          System.out.printf(
              "%nbacklog written to S3 in %.1f s (no delay)%n",
              (System.nanoTime() - started) / 1e9);
          for (long delay : ObjectStorage.delays()) {
            s3.delay(delay);
            System.out.println();
            System.out.println(s3.describe() + ":");
            read(properties, expected, s3);
          }
        }
      }
    } finally {
      Harness.deleteTree(root);
    }
    System.out.println(
        "rows/s and vs Iceberg are of the jobs' net runtimes (job s); total s and total vs"
            + " are from each job's submission to the session cluster. target: skade's rows/s >= 1.2x"
            + " IcebergSource's on local disk, >= 1.0x on object storage."
            + " load average at the end: "
            + Harness.loadAverage());
  }

  private static void write(Map<String, String> properties, int commits, int rows, int buckets) {
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of("bench"));
      Table table =
          catalog.createTable(
              ID,
              SCHEMA,
              PartitionSpec.builderFor(SCHEMA).bucket("id", buckets).build(),
              Map.of("format-version", "2"));
      TableWriter writer = new TableWriter(table);
      for (int c = 0; c < commits; c++) {
        List<Record> batch = new ArrayList<>(rows);
        for (int i = 0; i < rows; i++) {
          GenericRecord row = GenericRecord.create(SCHEMA);
          row.set(0, (long) c * rows + i);
          row.set(1, System.nanoTime());
          row.set(2, "row-" + i);
          batch.add(row);
        }
        writer.append(batch);
      }
    }
  }

  /**
   * Reads the backlog with both sources at parallelism 1 and 2 and prints their figures; on S3
   * ({@code s3} not null) the requests each read made too.
   */
  private static void read(Map<String, String> properties, long expected, ObjectStorage s3)
      throws Exception {
    System.out.printf(
        "%-48s %11s %8s %8s %12s %10s %10s %s%n",
        "reader",
        "parallelism",
        "job s",
        "total s",
        "rows/s",
        "vs Iceberg",
        "total vs",
        s3 == null ? "" : " requests");
    try (BoundedCount session = BoundedCount.start()) {
      for (int parallelism : new int[] {1, 2}) {
        read(session, properties, expected, s3, parallelism);
      }
    }
  }

  /** Reads the backlog with both sources at {@code parallelism}, on {@code session}'s cluster. */
  private static void read(
      BoundedCount session,
      Map<String, String> properties,
      long expected,
      ObjectStorage s3,
      int parallelism)
      throws Exception {
    Function<StreamExecutionEnvironment, DataStream<RowData>> skadeRead =
        env -> BoundedCount.skadeFromEarliest(env, properties, ID);
    count(session, parallelism, expected, skadeRead); // warms the JVM's code, unmeasured
    ObjectStorage.Requests before = s3 == null ? null : s3.requests();
    BoundedCount.Result skade = count(session, parallelism, expected, skadeRead);
    ObjectStorage.Requests mid = s3 == null ? null : s3.requests();
    BoundedCount.Result iceberg =
        count(
            session,
            parallelism,
            expected,
            env -> SourceLatencyRun.icebergStream(env, new SkadeTableLoader(properties, ID), null));
    ObjectStorage.Requests after = s3 == null ? null : s3.requests();
    print(
        "skade bounded, earliest (each commit's changes)",
        parallelism,
        skade,
        iceberg,
        s3 == null ? "" : requests(mid.minus(before)));
    print(
        "IcebergSource bounded read",
        parallelism,
        iceberg,
        iceberg,
        s3 == null ? "" : requests(after.minus(mid)));
    double ratio = iceberg.jobSeconds() / skade.jobSeconds();
    double target = s3 == null ? 1.2 : 1.0;
    System.out.printf(
        Locale.ROOT,
        "  target%s, parallelism %d: skade / IcebergSource = %.2fx (target >= %.1fx): %s;"
            + " from submission %.2fx%n",
        s3 == null ? "" : " at " + s3.delay() + " ms",
        parallelism,
        ratio,
        target,
        ratio >= target ? "met" : "missed",
        iceberg.seconds() / skade.seconds());
  }

  private static String requests(ObjectStorage.Requests r) {
    return " " + r.counts();
  }

  private static void print(
      String reader,
      int parallelism,
      BoundedCount.Result read,
      BoundedCount.Result iceberg,
      String requests) {
    System.out.printf(
        Locale.ROOT,
        "%-48s %11d %8.2f %8.2f %12.0f %9.2fx %9.2fx %s%n",
        reader,
        parallelism,
        read.jobSeconds(),
        read.seconds(),
        read.rows() / read.jobSeconds(),
        iceberg.jobSeconds() / read.jobSeconds(),
        iceberg.seconds() / read.seconds(),
        requests);
  }

  /**
   * Runs a bounded job of {@code reading} on {@code session}'s cluster: its net runtime's seconds
   * and its seconds from submission.
   */
  private static BoundedCount.Result count(
      BoundedCount session,
      int parallelism,
      long expected,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    BoundedCount.Result counted = session.run("backlog", parallelism, reading);
    if (counted.rows() != expected) {
      throw new IllegalStateException("counted " + counted.rows() + " rows, expected " + expected);
    }
    return counted;
  }
}
