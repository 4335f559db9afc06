package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogBatch;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.ChangelogReader;
import io.skade.source.reader.FlinkChanges;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.source.IcebergSource;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.types.Types;

/**
 * Prints the changelog engine's throughput and peak heap side by side with Iceberg's own Flink
 * bounded read of the same files, in one run: (a) a per-snapshot window of appended rows (all
 * inserts), (b) a collapsed window of 10% upserts spread over every file, with full before-images,
 * (c) the same with key-only before-images, and as peers on the appended snapshot Iceberg's generic
 * reader in this JVM and Iceberg's {@code IcebergSource} at parallelism 1 and 2 (which pays a
 * MiniCluster start). It asserts nothing.
 *
 * <p>System properties: {@code skade.bench.rows} (1,000,000) rows in {@code skade.bench.files} (10)
 * files.
 */
public final class ChangelogBenchmark {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "amount", Types.DoubleType.get())),
          Set.of(1));

  private record Figure(
      String workload, long windowRows, long rowsOut, double seconds, long peakHeapBytes) {
    double rowsPerSecond() {
      return rowsOut / seconds;
    }
  }

  private ChangelogBenchmark() {}

  public static void main(String[] args) throws Exception {
    Harness.quietLogs();
    int rows = Integer.getInteger("skade.bench.rows", 1_000_000);
    int files = Integer.getInteger("skade.bench.files", 10);
    Harness.printHeader("skade changelog benchmark");
    System.out.printf(
        "table: %d narrow rows (id bigint key, name string, amount double) in %d"
            + " Parquet files; then 10%% of the keys upserted in one commit.%n",
        rows, files);

    Path warehouse = Files.createTempDirectory("skade-changelog-bench-");
    List<Figure> figures = new ArrayList<>();
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("bench", Map.of("warehouse", warehouse.toString()));
      catalog.createNamespace(Namespace.of("bench"));
      Table table =
          catalog.createTable(
              TableIdentifier.of("bench", "t"),
              SCHEMA,
              org.apache.iceberg.PartitionSpec.unpartitioned(),
              Map.of("format-version", "2"));
      TableWriter writer = new TableWriter(table);
      GenericRecord template = GenericRecord.create(SCHEMA);
      int perFile = rows / files;
      for (int f = 0; f < files; f++) {
        List<Record> batch = new ArrayList<>(perFile);
        for (int i = 0; i < perFile; i++) {
          long id = (long) f * perFile + i;
          batch.add(template.copy(Map.of("id", id, "name", "name-" + id, "amount", id * 0.5)));
        }
        writer.append(batch);
      }
      long appended = table.currentSnapshot().snapshotId();
      String appendedMetadata =
          ((HasTableOperations) table).operations().current().metadataFileLocation();
      List<Record> upserts = new ArrayList<>(rows / 10);
      for (long id = 0; id < rows; id += 10) {
        upserts.add(template.copy(Map.of("id", id, "name", "renamed-" + id, "amount", -1.0)));
      }
      long upserted = writer.upsert(upserts).snapshotId();

      ChangelogOptions perSnapshot = ChangelogOptions.defaults();
      ChangelogOptions collapsed = perSnapshot.withMode(Mode.COLLAPSED);
      // Warm-up (JIT, class loading, a first MiniCluster), then the measured runs.
      count(new ChangelogReader(table, perSnapshot), null, appended);
      icebergGenericRead(table, appended);
      icebergSourceRead(appendedMetadata, rows, 1);
      figures.add(
          measure(
              "(a) per-snapshot window of appends",
              rows,
              () -> count(new ChangelogReader(table, perSnapshot), null, appended)));
      figures.add(
          measure(
              "(a) the same as Arrow batches, read as RowData",
              rows,
              () -> countBatches(new ChangelogReader(table, perSnapshot), null, appended)));
      figures.add(
          measure(
              "(b) collapsed, 10% upserts, full before-image",
              rows, () -> count(new ChangelogReader(table, collapsed), appended, upserted)));
      figures.add(
          measure(
              "(c) collapsed, 10% upserts, key-only",
              rows,
              () ->
                  count(
                      new ChangelogReader(table, collapsed.withBeforeImage(BeforeImage.KEY_ONLY)),
                      appended,
                      upserted)));
      figures.add(
          measure(
              "Iceberg generic reader, in process (no Flink)",
              rows,
              () -> icebergGenericRead(table, appended)));
      for (int parallelism : new int[] {1, 2}) {
        figures.add(
            measure(
                "Iceberg IcebergSource bounded read, parallelism " + parallelism,
                rows,
                () -> icebergSourceRead(appendedMetadata, rows, parallelism)));
      }
    } finally {
      Harness.deleteTree(warehouse);
    }
    print(figures);
  }

  /** Streams a window's changes, as a consumer would, and counts them. */
  private static long count(ChangelogReader reader, Long from, long to) {
    long changes = 0;
    try (CloseableIterator<ChangeRow> stream = reader.changes(from, to)) {
      while (stream.hasNext()) {
        stream.next();
        changes++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return changes;
  }

  /**
   * Streams a window as Arrow batches of 4,096 changes and reads every row as Flink {@code RowData}
   * with its {@code RowKind}, as a Flink source would emit it.
   */
  private static long countBatches(ChangelogReader reader, Long from, long to) {
    long changes = 0;
    try (BufferAllocator allocator = new RootAllocator();
        CloseableIterator<ChangelogBatch> batches = reader.readBatches(from, to, allocator, 4096)) {
      while (batches.hasNext()) {
        try (ChangelogBatch batch = batches.next()) {
          for (int i = 0; i < batch.rowCount(); i++) {
            RowData row = FlinkChanges.rowData(batch, i);
            if (row.getRowKind() != null && row.getArity() > 0) {
              changes++;
            }
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return changes;
  }

  /** Iceberg's generic reader over the table at a snapshot, in this JVM; returns its rows. */
  private static long icebergGenericRead(Table table, long snapshotId) {
    long rows = 0;
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).build()) {
      for (Record ignored : records) {
        rows++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  /**
   * Iceberg's own Flink source over the appended snapshot, in a local MiniCluster, into a
   * discarding sink; returns the rows the table holds there.
   */
  private static long icebergSourceRead(String metadataLocation, long rows, int parallelism) {
    try {
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(parallelism);
      IcebergSource<RowData> source =
          IcebergSource.forRowData()
              .tableLoader(new StaticTableLoader(metadataLocation))
              .streaming(false)
              .build();
      env.fromSource(
              source,
              WatermarkStrategy.noWatermarks(),
              "iceberg",
              InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)))
          .sinkTo(new DiscardingSink<>());
      env.execute("IcebergSource bounded read, parallelism " + parallelism);
      return rows;
    } catch (Exception e) {
      throw new IllegalStateException("IcebergSource read failed", e);
    }
  }

  private static Figure measure(String workload, long windowRows, LongSupplier run) {
    List<MemoryPoolMXBean> heap =
        ManagementFactory.getMemoryPoolMXBeans().stream()
            .filter(pool -> pool.getType() == MemoryType.HEAP)
            .toList();
    System.gc();
    heap.forEach(MemoryPoolMXBean::resetPeakUsage);
    long start = System.nanoTime();
    long rowsOut = run.getAsLong();
    double seconds = (System.nanoTime() - start) / 1e9;
    long peak = heap.stream().mapToLong(pool -> pool.getPeakUsage().getUsed()).sum();
    return new Figure(workload, windowRows, rowsOut, seconds, peak);
  }

  private static void print(List<Figure> figures) {
    Figure baseline =
        figures.stream()
            .filter(f -> f.workload().contains("parallelism 1"))
            .findFirst()
            .orElseThrow();
    System.out.println();
    String format = "%-50s %12s %12s %9s %12s %18s %15s%n";
    System.out.printf(
        format,
        "workload",
        "window rows",
        "rows out",
        "seconds",
        "rows/s",
        "vs IcebergSource p1",
        "peak heap MiB");
    System.out.println("-".repeat(134));
    for (Figure f : figures) {
      System.out.printf(
          format,
          f.workload(),
          f.windowRows(),
          f.rowsOut(),
          String.format(Locale.ROOT, "%.2f", f.seconds()),
          String.format(Locale.ROOT, "%.0f", f.rowsPerSecond()),
          String.format(Locale.ROOT, "%.2fx", f.rowsPerSecond() / baseline.rowsPerSecond()),
          f.peakHeapBytes() >> 20);
    }
    System.out.println(
        "peak heap: the sum of the heap pools' peaks during the run (after a GC"
            + " and a reset), an upper bound of the live set. IcebergSource times include its job's"
            + " MiniCluster start and planning, as a bounded job pays them.");
  }
}
