package io.skade.sink;

import io.skade.maintenance.IcebergInternals;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.CheckpointConfig;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.actions.BinPackRewriteFilePlanner;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.maintenance.api.DeleteOrphanFiles;
import org.apache.iceberg.flink.maintenance.api.ExpireSnapshots;
import org.apache.iceberg.flink.maintenance.api.MaintenanceTaskBuilder;
import org.apache.iceberg.flink.maintenance.api.TableMaintenance;
import org.apache.iceberg.flink.maintenance.api.TriggerLockFactory;
import org.apache.iceberg.flink.maintenance.operator.TableChange;

/**
 * The table maintenance a {@link SkadeSink} runs after its commits, on Iceberg's own Flink
 * maintenance ({@link TableMaintenance}): compaction (Iceberg's {@code RewriteDataFiles} with rows
 * written in the table's order, {@link IcebergInternals#sortedCompaction}; a {@code replace}
 * snapshot that also removes the delete files it leaves dangling, so deletes are folded into the
 * data files), snapshot expiry ({@link ExpireSnapshots}, through the catalog, which keeps the
 * snapshots a live consumer still needs) and orphan cleanup of the data location ({@link
 * DeleteOrphanFiles}). Iceberg's maintenance runs at most one task at a time and at most once per
 * {@link #interval()}; expiry runs every 10 commits or 10 intervals, orphan cleanup hourly. Each
 * task takes the table's lock in the catalog ({@link io.skade.maintenance.CatalogLockFactory}), so
 * no two jobs maintain one table at once.
 *
 * <p>Expiry stops short of the oldest snapshot a stored consumer of the table still needs, so it
 * goes on expiring what may go while a consumer lags (the catalog would refuse it whole).
 *
 * @param enabled whether the sink maintains the table at all
 * @param compactDataFiles compact once this many data files were added since the last time
 * @param compactDeleteFiles compact once this many delete files were added since the last time; a
 *     data file is rewritten when at least this many delete files apply to it, or when it is small
 * @param snapshotMaxAge expire snapshots older than this (the newest {@code retainLast} stay)
 * @param retainLast the snapshots kept whatever their age, at least 1
 * @param orphanMinAge delete files no snapshot references once they are this old; at least an hour,
 *     so a file of a commit still in flight is never taken for an orphan
 * @param interval the least time between two maintenance tasks
 */
public record SinkMaintenance(
    boolean enabled,
    int compactDataFiles,
    int compactDeleteFiles,
    Duration snapshotMaxAge,
    int retainLast,
    Duration orphanMinAge,
    Duration interval) {

  /** The least {@link #orphanMinAge()}. */
  public static final Duration MIN_ORPHAN_AGE = Duration.ofHours(1);

  /** No maintenance (the default). */
  public static final SinkMaintenance NONE =
      new SinkMaintenance(
          false, 20, 20, Duration.ofDays(1), 100, Duration.ofDays(3), Duration.ofMinutes(1));

  // Expiry runs after this many commits; orphan cleanup once in this long.
  private static final int EXPIRE_EVERY_COMMITS = 10;
  private static final Duration ORPHAN_EVERY = Duration.ofHours(1);

  public SinkMaintenance {
    positive("maintenance.compact.data-files", compactDataFiles);
    positive("maintenance.compact.delete-files", compactDeleteFiles);
    positive("maintenance.snapshot.retain-last", retainLast);
    if (snapshotMaxAge == null || snapshotMaxAge.isNegative()) {
      throw new IllegalArgumentException(
          "maintenance.snapshot.max-age must be a duration of 0"
              + " or more, got "
              + snapshotMaxAge);
    }
    requireOrphanAge("maintenance.orphan.min-age", orphanMinAge);
    if (interval == null || interval.isNegative() || interval.isZero()) {
      throw new IllegalArgumentException(
          "maintenance.interval must be a positive duration," + " got " + interval);
    }
  }

  /** Refuses an orphan age below {@link #MIN_ORPHAN_AGE}, naming {@code what}. */
  static void requireOrphanAge(String what, Duration age) {
    if (age == null || age.compareTo(MIN_ORPHAN_AGE) < 0) {
      throw new IllegalArgumentException(
          what
              + " must be at least "
              + MIN_ORPHAN_AGE.toMinutes()
              + " min, got "
              + age
              + ": a younger file may"
              + " belong to a commit still in flight");
    }
  }

  private static void positive(String option, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException(option + " must be positive, got " + value);
    }
  }

  /** Maintenance on, with the default thresholds. */
  public static SinkMaintenance defaults() {
    return NONE.withEnabled(true);
  }

  public SinkMaintenance withEnabled(boolean on) {
    return new SinkMaintenance(
        on,
        compactDataFiles,
        compactDeleteFiles,
        snapshotMaxAge,
        retainLast,
        orphanMinAge,
        interval);
  }

  public SinkMaintenance withCompaction(int dataFiles, int deleteFiles) {
    return new SinkMaintenance(
        enabled, dataFiles, deleteFiles, snapshotMaxAge, retainLast, orphanMinAge, interval);
  }

  public SinkMaintenance withSnapshotExpiry(Duration maxAge, int keepLast) {
    return new SinkMaintenance(
        enabled, compactDataFiles, compactDeleteFiles, maxAge, keepLast, orphanMinAge, interval);
  }

  public SinkMaintenance withOrphanMinAge(Duration minAge) {
    return new SinkMaintenance(
        enabled,
        compactDataFiles,
        compactDeleteFiles,
        snapshotMaxAge,
        retainLast,
        minAge,
        interval);
  }

  public SinkMaintenance withInterval(Duration least) {
    return new SinkMaintenance(
        enabled,
        compactDataFiles,
        compactDeleteFiles,
        snapshotMaxAge,
        retainLast,
        orphanMinAge,
        least);
  }

  /**
   * Adds Iceberg's maintenance of the table {@code loader} loads, fed by its commits.
   *
   * <p>Orphan cleanup here looks only under the table's data location: the metadata files the
   * catalog's commit log references, which a lagging changelog reader still reads, are known only
   * to a one-shot {@link OrphanFileRemoval}, which also removes orphan metadata.
   *
   * @throws IllegalArgumentException when the orphan age is not above the job's checkpoint interval
   *     plus its checkpoint timeout, the longest a file of a commit can be in flight
   */
  @SuppressWarnings("deprecation") // Iceberg 1.11's only hook for a lock shared across jobs
  void appendTo(
      DataStream<TableChange> commits,
      TableLoader loader,
      TriggerLockFactory lock,
      String uidSuffix) {
    CheckpointConfig checkpoints = commits.getExecutionEnvironment().getCheckpointConfig();
    if (checkpoints.isCheckpointingEnabled()) {
      Duration inFlight =
          Duration.ofMillis(
              checkpoints.getCheckpointInterval() + checkpoints.getCheckpointTimeout());
      if (orphanMinAge.compareTo(inFlight) <= 0) {
        throw new IllegalArgumentException(
            "maintenance.orphan.min-age = "
                + orphanMinAge
                + " must be above the checkpoint interval plus the checkpoint timeout ("
                + inFlight
                + "), the longest a written file waits for its commit; raise it");
      }
    }
    try {
      TableMaintenance.forChangeStream(commits, loader, lock)
          .uidSuffix("skade maintenance " + uidSuffix)
          .rateLimit(interval)
          .lockCheckDelay(interval)
          .parallelism(1)
          .add(compaction(compactDataFiles, compactDeleteFiles))
          .add(
              ExpireSnapshots.builder()
                  .scheduleOnCommitCount(EXPIRE_EVERY_COMMITS)
                  .scheduleOnInterval(interval.multipliedBy(EXPIRE_EVERY_COMMITS))
                  .maxSnapshotAge(snapshotMaxAge)
                  .retainLast(retainLast))
          .add(
              DeleteOrphanFiles.builder()
                  .location(dataLocation(loader))
                  .scheduleOnInterval(ORPHAN_EVERY)
                  .minAge(orphanMinAge))
          .append();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot add the maintenance of " + loader, e);
    }
  }

  private static String dataLocation(TableLoader loader) throws IOException {
    try (TableLoader open = loader.clone()) {
      open.open();
      Table table = open.loadTable();
      return table
          .properties()
          .getOrDefault(TableProperties.WRITE_DATA_LOCATION, table.location() + "/data");
    }
  }

  /**
   * Iceberg's compaction, started by these counts: small files and files with deletes. A data file
   * is rewritten once {@code deleteFiles} delete files apply to it (as in Iceberg's).
   */
  static MaintenanceTaskBuilder<?> compaction(int dataFiles, int deleteFiles) {
    return IcebergInternals.sortedCompaction(
            Map.of(BinPackRewriteFilePlanner.DELETE_FILE_THRESHOLD, String.valueOf(deleteFiles)))
        .scheduleOnDataFileCount(dataFiles)
        .scheduleOnEqDeleteFileCount(deleteFiles)
        .scheduleOnPosDeleteFileCount(deleteFiles);
  }
}
