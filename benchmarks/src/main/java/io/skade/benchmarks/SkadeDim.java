package io.skade.benchmarks;

import io.skade.catalog.SkadeCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * The dimension table of {@link LookupJoinBenchmark} in a skade warehouse: {@code bench.dim} {@code
 * (id bigint key, name string, city string, score int)}, written by {@code TableWriter} in {@code
 * files} appends of consecutive id ranges (one Parquet data file each). Runs only in the
 * benchmark's skade JVM, whose classpath holds skade's stack.
 */
final class SkadeDim {
  static final String NAMESPACE = "bench";
  static final String TABLE = "dim";

  private SkadeDim() {}

  /**
   * Writes the table into the catalog of {@code properties} (a local warehouse, or one on object
   * storage); returns what it holds (data files, bytes, seconds).
   */
  static Properties prepare(Map<String, String> properties, long rows, int files) {
    org.apache.iceberg.Schema schema =
        new org.apache.iceberg.Schema(
            List.of(
                Types.NestedField.required(1, "id", Types.LongType.get()),
                Types.NestedField.optional(2, "name", Types.StringType.get()),
                Types.NestedField.optional(3, "city", Types.StringType.get()),
                Types.NestedField.optional(4, "score", Types.IntegerType.get())),
            Set.of(1));
    long started = System.nanoTime();
    Properties out = new Properties();
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("bench", properties);
      catalog.createNamespace(Namespace.of(NAMESPACE));
      // As skade's SQL sink creates a keyed table: sorted by the key, bloom filters on it,
      // Parquet pages and dictionaries sized for point lookups.
      Table table =
          catalog
              .buildTable(TableIdentifier.of(NAMESPACE, TABLE), schema)
              .withSortOrder(org.apache.iceberg.SortOrder.builderFor(schema).asc("id").build())
              .withProperty("format-version", "2")
              .withProperty("write.parquet.bloom-filter-enabled.column.id", "true")
              .withProperties(io.skade.lookup.PointLookup.LOOKUP_FILE_PROPERTIES)
              .create();
      TableWriter writer = new TableWriter(table);
      GenericRecord template = GenericRecord.create(schema);
      for (int f = 0; f < files; f++) {
        long from = LookupJoinBenchmark.rangeStart(rows, files, f);
        long to = LookupJoinBenchmark.rangeStart(rows, files, f + 1);
        List<Record> batch = new ArrayList<>((int) (to - from));
        for (long id = from; id < to; id++) {
          GenericRecord row = template.copy();
          row.setField("id", id);
          row.setField("name", LookupJoinBenchmark.name(id));
          row.setField("city", LookupJoinBenchmark.city(id));
          row.setField("score", LookupJoinBenchmark.score(id));
          batch.add(row);
        }
        writer.append(batch);
      }
      table.refresh();
      Snapshot snapshot = table.currentSnapshot();
      out.setProperty("dataFiles", snapshot.summary().getOrDefault("total-data-files", "?"));
      out.setProperty("dataBytes", snapshot.summary().getOrDefault("total-files-size", "0"));
      out.setProperty("rows", snapshot.summary().getOrDefault("total-records", "?"));
      out.setProperty(
          "layout",
          "Iceberg format v2, Parquet sorted by id with bloom filters and"
              + " 250-row pages, one append per id range");
    } catch (Exception e) {
      throw new IllegalStateException("writing the skade dimension table failed", e);
    }
    out.setProperty("seconds", Double.toString((System.nanoTime() - started) / 1e9));
    return out;
  }
}
