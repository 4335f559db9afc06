package io.skade.sink;

import io.skade.maintenance.CatalogLockFactory;
import io.skade.maintenance.CompactionStages;
import io.skade.maintenance.IcebergInternals;
import io.skade.maintenance.SortingRewriteRunner;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.actions.BinPackRewriteFilePlanner;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.maintenance.api.Trigger;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * Compacts a skade table once, now, in a bounded Flink job of Iceberg's own rewrite operators (the
 * planner and committer of {@code RewriteDataFiles}, with rewriters that write the rows in the
 * table's order, {@link CompactionStages}): small data files and data files with deletes are
 * rewritten, and the delete files left dangling are removed in the same {@code replace} snapshot
 * ({@link io.skade.maintenance.MaintainedTable}). A {@code replace} snapshot changes no row, so no
 * changelog reader emits anything for it.
 *
 * <p>For a table written by a streaming job, prefer the sink's own maintenance ({@link
 * SkadeSinkBuilder#maintenance}), which compacts as the job commits.
 */
public final class TableCompaction {
  private static final String TASK = "compact";

  private TableCompaction() {}

  /** What a compaction did; {@code snapshotId} is null when there was nothing to compact. */
  public record Result(
      Long snapshotId, int rewrittenDataFiles, int addedDataFiles, int removedDeleteFiles) {}

  /**
   * Compacts {@code table} of the skade catalog {@code catalogProperties} name, with the job run on
   * {@code env}, holding the table's maintenance lock; returns when the compaction is committed.
   *
   * @throws IllegalStateException naming the table and the failure when the rewrite failed, or the
   *     holder when other maintenance holds the table's lock, or naming the iceberg-flink version
   *     when its rewrite has not the internals skade's compaction relies on
   */
  public static Result run(
      StreamExecutionEnvironment env, Map<String, String> catalogProperties, TableIdentifier table)
      throws Exception {
    IcebergInternals.requireSeams("compaction of " + table, IcebergInternals.Seam.REWRITE);
    return CatalogLockFactory.whileHolding(
        catalogProperties,
        table,
        "a compaction call",
        () -> compact(env, catalogProperties, table));
  }

  private static Result compact(
      StreamExecutionEnvironment env, Map<String, String> catalogProperties, TableIdentifier table)
      throws Exception {
    SkadeTableLoader loader = SkadeTableLoader.forMaintenance(catalogProperties, table);
    Long before = currentSnapshotId(loader);
    // Every file with a delete is rewritten, so all of its deletes are folded.
    Map<String, String> options = Map.of(BinPackRewriteFilePlanner.DELETE_FILE_THRESHOLD, "1");
    DataStream<Trigger> trigger =
        env.fromData(
                TypeInformation.of(Trigger.class), Trigger.create(System.currentTimeMillis(), 0))
            .name("compact " + table);
    CompactionStages stages =
        CompactionStages.append(
            trigger,
            table.toString(),
            TASK,
            0,
            loader,
            options,
            SortingRewriteRunner.DEFAULT_SORT_BUFFER_BYTES);
    stages.planned().name("plan compaction of " + table);
    stages.rewritten().name("rewrite " + table);
    stages.committed().name("commit compaction of " + table);
    List<Exception> errors = new ArrayList<>();
    stages.errors().executeAndCollect("compact " + table).forEachRemaining(errors::add);
    if (!errors.isEmpty()) {
      IllegalStateException failure =
          new IllegalStateException(
              "compaction of "
                  + table
                  + " failed: "
                  + errors.get(0).getMessage()
                  + "; nothing of it was committed, and the"
                  + " table is as it was",
              errors.get(0));
      errors.subList(1, errors.size()).forEach(failure::addSuppressed);
      throw failure;
    }
    return result(loader, before);
  }

  private static Long currentSnapshotId(SkadeTableLoader loader) throws Exception {
    try (SkadeTableLoader open = loader.clone()) {
      open.open();
      Snapshot current = open.loadTable().currentSnapshot();
      return current == null ? null : current.snapshotId();
    }
  }

  private static Result result(SkadeTableLoader loader, Long before) throws Exception {
    try (SkadeTableLoader open = loader.clone()) {
      open.open();
      Table table = open.loadTable();
      // The newest replace snapshot since the start: this compaction's (a compaction another
      // job's maintenance committed meanwhile would be taken for it).
      long current = table.currentSnapshot() == null ? -1 : table.currentSnapshot().snapshotId();
      for (Snapshot snapshot : SnapshotUtil.ancestorsBetween(current, before, table::snapshot)) {
        if (DataOperations.REPLACE.equals(snapshot.operation())) {
          Map<String, String> summary = snapshot.summary();
          return new Result(
              snapshot.snapshotId(),
              count(summary, SnapshotSummary.DELETED_FILES_PROP),
              count(summary, SnapshotSummary.ADDED_FILES_PROP),
              count(summary, SnapshotSummary.REMOVED_DELETE_FILES_PROP));
        }
      }
      return new Result(null, 0, 0, 0);
    }
  }

  private static int count(Map<String, String> summary, String key) {
    String value = summary.get(key);
    return value == null ? 0 : Integer.parseInt(value);
  }
}
