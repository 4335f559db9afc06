package io.skade.benchmarks;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.sink.SkadeTableLoader;
import io.skade.write.TableWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
 * side in one run; times include each job's MiniCluster start and planning. Asserts nothing but the
 * row counts.
 *
 * <p>System properties: {@code skade.bench.backlog.commits} (200), {@code .rows} (5,000), {@code
 * .buckets} (8).
 */
public final class BacklogBenchmark {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "ts_nanos", Types.LongType.get()),
              Types.NestedField.optional(3, "payload", Types.StringType.get())),
          Set.of(1));

  private BacklogBenchmark() {}

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.log.org.apache.flink", "error");
    int commits = Integer.getInteger("skade.bench.backlog.commits", 200);
    int rows = Integer.getInteger("skade.bench.backlog.rows", 5_000);
    int buckets = Integer.getInteger("skade.bench.backlog.buckets", 8);
    Path warehouse = Files.createTempDirectory("skade-backlog-");
    Map<String, String> properties = Map.of("warehouse", warehouse.toString());
    try (SharedCatalogs.Handle handle = SharedCatalogs.acquire(properties)) {
      SkadeCatalog catalog = handle.catalog();
      catalog.createNamespace(Namespace.of("bench"));
      TableIdentifier id = TableIdentifier.of("bench", "backlog");
      Table table =
          catalog.createTable(
              id,
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
      long expected = (long) commits * rows;
      System.out.printf(
          "backlog: %d commits x %,d new keys into a primary-key table of %d"
              + " buckets; bounded jobs count %,d rows%n",
          commits, rows, buckets, expected);
      System.out.printf(
          "%-44s %11s %9s %12s %9s%n", "reader", "parallelism", "seconds", "rows/s", "vs Iceberg");
      for (int parallelism : new int[] {1, 2}) {
        // Warm the JVM's code once at each parallelism, unmeasured.
        count(parallelism, expected, env -> BoundedCount.skadeFromEarliest(env, properties, id));
        double skade =
            count(
                parallelism, expected, env -> BoundedCount.skadeFromEarliest(env, properties, id));
        double iceberg =
            count(
                parallelism,
                expected,
                env ->
                    SourceLatencyRun.icebergStream(
                        env, new SkadeTableLoader(properties, id), null));
        print(
            "skade bounded, earliest (each commit's changes)",
            parallelism,
            expected,
            skade,
            iceberg);
        print("IcebergSource bounded read", parallelism, expected, iceberg, iceberg);
      }
    } finally {
      Harness.deleteTree(warehouse);
    }
  }

  private static void print(
      String reader, int parallelism, long rows, double seconds, double icebergSeconds) {
    System.out.printf(
        "%-44s %11d %9.2f %12.0f %8.2fx%n",
        reader, parallelism, seconds, rows / seconds, icebergSeconds / seconds);
  }

  /** Runs a bounded job of {@code reading} and returns its seconds, MiniCluster start included. */
  private static double count(
      int parallelism,
      long expected,
      Function<StreamExecutionEnvironment, DataStream<RowData>> reading)
      throws Exception {
    BoundedCount.Result counted = BoundedCount.run("backlog", parallelism, reading);
    if (counted.rows() != expected) {
      throw new IllegalStateException("counted " + counted.rows() + " rows, expected " + expected);
    }
    return counted.seconds();
  }
}
