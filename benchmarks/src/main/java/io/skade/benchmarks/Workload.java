package io.skade.benchmarks;

import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntConsumer;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/** What one committer thread does to its own table, once per commit. */
enum Workload {

  /**
   * The commit path alone: a table rename, back and forth, which moves pointers and takes a {@code
   * commit_seq} in the committer's synced batch but writes no Iceberg file.
   */
  POINTER_ONLY("pointer-only (rename)") {
    @Override
    IntConsumer committerFor(Catalog catalog, TableIdentifier id, Table table, int thread) {
      TableIdentifier renamed = TableIdentifier.of(id.namespace(), id.name() + "_renamed");
      return i -> {
        if (i % 2 == 0) {
          catalog.renameTable(id, renamed);
        } else {
          catalog.renameTable(renamed, id);
        }
      };
    }
  },

  /** A snapshot-less pointer change: new metadata file, no manifests. */
  METADATA_ONLY("metadata-only") {
    @Override
    IntConsumer committerFor(Catalog catalog, TableIdentifier id, Table table, int thread) {
      return i -> table.updateProperties().set("k", String.valueOf(i)).commit();
    }
  },

  /**
   * A full append: write a small Parquet data file, then a fast append (manifest, manifest list,
   * metadata file, pointer swap). Writing the data file is timed too, as a real ingest pays it.
   */
  APPEND("append (small Parquet file)") {
    @Override
    IntConsumer committerFor(Catalog catalog, TableIdentifier id, Table table, int thread) {
      TableWriter tableWriter = new TableWriter(table);
      GenericRecord template = GenericRecord.create(SCHEMA);
      return i -> {
        List<Record> rows = new ArrayList<>(ROWS_PER_FILE);
        for (int row = 0; row < ROWS_PER_FILE; row++) {
          Record record = template.copy();
          record.setField("id", (long) i * ROWS_PER_FILE + row);
          record.setField("name", "row-" + row);
          rows.add(record);
        }
        tableWriter.append(rows);
      };
    }
  };

  /** Every benchmark table's schema. */
  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()));

  static final int ROWS_PER_FILE = 10;

  private final String label;

  Workload(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  /**
   * Prepares thread {@code thread}'s commits to {@code table} of {@code catalog} (untimed) and
   * returns the action that makes commit number {@code i}, one commit of the table.
   */
  abstract IntConsumer committerFor(Catalog catalog, TableIdentifier id, Table table, int thread);
}
