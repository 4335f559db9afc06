package io.skade.lineage;

import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;

/**
 * Keeps lineage as rows of the catalog's reserved Iceberg table {@link #TABLE}, readable with SQL
 * and streamable with skade's own source. Events are appended in batches (one commit per burst),
 * each commit recording the last {@code commit_seq} it holds, so that after a restart lineage
 * resumes right after it from the commit log: no commit is lost or recorded twice. Its own commits
 * are never described ({@link CommitLineage} is told to skip the table).
 */
public final class WarehouseLineageSink implements LineageSink {
  /** The reserved table lineage is kept in. */
  public static final TableIdentifier TABLE = TableIdentifier.of("skade_system", "lineage_events");

  /** Its columns. */
  public static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "event_id", Types.StringType.get()),
              Types.NestedField.required(2, "commit_seq", Types.LongType.get()),
              Types.NestedField.required(3, "event_time", Types.TimestampType.withZone()),
              Types.NestedField.required(4, "actor", Types.StringType.get()),
              Types.NestedField.required(5, "operation", Types.StringType.get()),
              Types.NestedField.required(6, "output_table", Types.StringType.get()),
              Types.NestedField.optional(7, "output_snapshot_id", Types.LongType.get()),
              Types.NestedField.optional(8, "output_location", Types.StringType.get()),
              Types.NestedField.required(
                  9, "inputs", Types.ListType.ofRequired(10, Types.StringType.get())),
              Types.NestedField.required(
                  11, "outputs", Types.ListType.ofRequired(12, Types.StringType.get()))),
          Set.of(1));

  /** Snapshot summary property: the last {@code commit_seq} the table holds lineage of. */
  static final String RECORDED = "skade.lineage.recorded-commit-seq";

  /** Events per commit at most. */
  static final int MAX_BATCH = 1000;

  /**
   * Events kept while the table cannot be written; from then on events are dropped, to be recorded
   * from the commit log after a restart (the table's recorded cursor stays below them).
   */
  static final int MAX_WAITING = 10 * MAX_BATCH;

  private final Table table;
  private final GenericFileWriterFactory writers;
  private final OutputFileFactory files;
  private final List<Record> batch = new ArrayList<>();
  private long batchSeq = -1;
  private boolean dropping;

  /** Appends to {@code table}, a catalog's lineage table as {@link #open} gives it. */
  public WarehouseLineageSink(Table table) {
    this.table = table;
    // One unpartitioned, unsorted Parquet file per batch: the table is skade's own, made by open.
    this.writers =
        new GenericFileWriterFactory.Builder(table).dataFileFormat(FileFormat.PARQUET).build();
    this.files = OutputFileFactory.builderFor(table, 0, 0).format(FileFormat.PARQUET).build();
  }

  /** The lineage table of {@code catalog}, created (with its namespace) when missing. */
  public static Table open(SkadeCatalog catalog) {
    if (!catalog.namespaceExists(TABLE.namespace())) {
      try {
        catalog.createNamespace(TABLE.namespace(), Map.of());
      } catch (AlreadyExistsException raced) {
        // created meanwhile
      }
    }
    if (!catalog.tableExists(TABLE)) {
      try {
        return catalog.buildTable(TABLE, SCHEMA).withProperty("format-version", "2").create();
      } catch (AlreadyExistsException raced) {
        // created meanwhile
      }
    }
    return catalog.loadTable(TABLE);
  }

  /**
   * The last {@code commit_seq} {@code table} holds lineage of, or -1 when it holds none yet
   * (lineage then starts with the commits after it was enabled).
   */
  public static long recorded(Table table) {
    Snapshot current = table.currentSnapshot();
    if (current == null || current.summary() == null || !current.summary().containsKey(RECORDED)) {
      return -1;
    }
    return Long.parseLong(current.summary().get(RECORDED));
  }

  @Override
  public void commit(LineageEvent event) throws Exception {
    // Once one is dropped, every later one is too: the recorded cursor must stay below the
    // first dropped commit, so that a restart records them all from the log.
    dropping |= batch.size() >= MAX_WAITING;
    if (dropping) {
      throw new IllegalStateException(
          MAX_WAITING
              + " lineage events waited for "
              + TABLE
              + ", which could not be written; commit_seq "
              + event.commitSeq()
              + " is dropped"
              + " here and recorded from the commit log after a restart");
    }
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("event_id", event.eventId().toString());
    row.setField("commit_seq", event.commitSeq());
    row.setField("event_time", DateTimeUtil.timestamptzFromMicros(event.tsMicros()));
    row.setField("actor", event.actor());
    row.setField("operation", event.operation().name());
    row.setField("output_table", event.output().name());
    row.setField("output_snapshot_id", event.snapshotId());
    row.setField("output_location", event.output().location());
    row.setField("inputs", event.inputs().stream().map(WarehouseLineageSink::named).toList());
    row.setField("outputs", event.outputs().stream().map(WarehouseLineageSink::named).toList());
    batch.add(row);
    batchSeq = Math.max(batchSeq, event.commitSeq());
    if (batch.size() >= MAX_BATCH) {
      flush();
    }
  }

  /**
   * A dataset as the lineage table names it: {@code db.table}, or {@code system:namespace/name}.
   */
  static String named(LineageDataset dataset) {
    return dataset.isSkadeTable()
        ? dataset.name()
        : dataset.system() + ":" + dataset.namespace() + "/" + dataset.name();
  }

  /** Appends the waiting events in one commit, with the last {@code commit_seq} they hold. */
  @Override
  public void flush() {
    if (batch.isEmpty()) {
      return;
    }
    DataWriter<Record> file = writers.newDataWriter(files.newOutputFile(), table.spec(), null);
    try (file) {
      batch.forEach(file::write);
    } catch (IOException e) {
      throw new UncheckedIOException("could not write lineage events to " + TABLE, e);
    }
    AppendFiles append = table.newAppend();
    append.appendFile(file.toDataFile());
    append.set(RECORDED, Long.toString(batchSeq));
    append.commit();
    batch.clear();
  }
}
