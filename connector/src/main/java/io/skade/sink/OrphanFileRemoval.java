package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.maintenance.CatalogLockFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.MetadataTableType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.actions.DeleteOrphanFiles.PrefixMismatchMode;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.maintenance.api.DeleteOrphanFiles;
import org.apache.iceberg.flink.maintenance.api.Trigger;
import org.apache.iceberg.flink.maintenance.operator.DeleteFilesProcessor;
import org.apache.iceberg.flink.maintenance.operator.FileNameReader;
import org.apache.iceberg.flink.maintenance.operator.FileUriKeySelector;
import org.apache.iceberg.flink.maintenance.operator.ListFileSystemFiles;
import org.apache.iceberg.flink.maintenance.operator.ListMetadataFiles;
import org.apache.iceberg.flink.maintenance.operator.MetadataTablePlanner;
import org.apache.iceberg.flink.maintenance.operator.OrphanFilesDetector;
import org.apache.iceberg.flink.maintenance.operator.SkipOnError;
import org.apache.iceberg.flink.source.ScanContext;

/**
 * Removes a skade table's orphan files once, now, in a bounded Flink job of Iceberg's own
 * orphan-file operators (those of {@code DeleteOrphanFiles}): every file under the table's location
 * older than a minimum age that no live snapshot and no metadata file references is deleted.
 *
 * <p>skade adds one set of references Iceberg cannot know: the metadata files of the catalog's
 * commit log. A changelog reader plans and reads a window from the metadata file of the window's
 * last commit, which for a reader behind by more than the table's metadata log ({@code
 * write.metadata.previous-versions-max}) Iceberg no longer lists. So the metadata file of every
 * logged commit from the one that added the oldest live snapshot on is kept; those of older
 * commits, whose snapshots are expired, can no longer be read from anyway and may go.
 *
 * <p>A file younger than the minimum age (at least {@link SinkMaintenance#MIN_ORPHAN_AGE}) may
 * belong to a commit still in flight and is never taken: give a minimum age above the checkpoint
 * interval plus the checkpoint timeout of every job writing the table.
 */
public final class OrphanFileRemoval {
  private static final String TASK = "remove orphan files";
  private static final Schema FILE_PATH = new Schema(DataFile.FILE_PATH);
  private static final ScanContext FILE_PATH_SCAN =
      ScanContext.builder().streaming(true).project(FILE_PATH).build();

  private OrphanFileRemoval() {}

  /**
   * What a removal found; with {@code dryRun}, the orphans were only listed.
   *
   * @param orphans the orphan files, deleted unless {@code dryRun}
   */
  public record Result(List<String> orphans, boolean dryRun) {}

  /**
   * Removes the orphan files of {@code table} of the skade catalog {@code catalogProperties} name
   * older than {@code minAge}, with the job run on {@code env}; or with {@code dryRun} only lists
   * them, holding the table's maintenance lock. Nothing is deleted when any part of the listing
   * failed.
   *
   * @throws IllegalArgumentException naming the minimum age when it is below {@link
   *     SinkMaintenance#MIN_ORPHAN_AGE}, before any I/O
   * @throws IllegalStateException naming the table and the failure when the listing failed, or the
   *     holder when other maintenance holds the table's lock
   */
  public static Result run(
      StreamExecutionEnvironment env,
      Map<String, String> catalogProperties,
      TableIdentifier table,
      Duration minAge,
      boolean dryRun)
      throws Exception {
    SinkMaintenance.requireOrphanAge("minimum age", minAge);
    return CatalogLockFactory.whileHolding(
        catalogProperties,
        table,
        "an orphan-file call",
        () -> remove(env, catalogProperties, table, minAge, dryRun));
  }

  private static Result remove(
      StreamExecutionEnvironment env,
      Map<String, String> catalogProperties,
      TableIdentifier table,
      Duration minAge,
      boolean dryRun)
      throws Exception {
    SkadeTableLoader loader = SkadeTableLoader.forMaintenance(catalogProperties, table);
    Table loaded;
    List<String> logged;
    try (CatalogConnection connection = CatalogConnection.open(catalogProperties)) {
      loaded = connection.catalog().loadTable(table);
      logged = loggedMetadataFiles(loaded, connection.feed(), table);
    }
    long now = System.currentTimeMillis();
    WatermarkStrategy<Trigger> atTrigger =
        WatermarkStrategy.<Trigger>noWatermarks()
            .withTimestampAssigner((trigger, previous) -> trigger.timestamp());
    // Only the end of input moves event time, so the detector below decides once every
    // reference and every listed file has reached it.
    DataStream<Trigger> trigger =
        env.fromData(TypeInformation.of(Trigger.class), Trigger.create(now, 0))
            .assignTimestampsAndWatermarks(atTrigger)
            .name("remove orphan files of " + table);

    SingleOutputStreamOperator<MetadataTablePlanner.SplitInfo> splits =
        trigger
            .process(
                new MetadataTablePlanner(
                    TASK, 0, loader, FILE_PATH_SCAN, MetadataTableType.ALL_FILES, 1))
            .name("plan the files of " + table)
            .forceNonParallel();
    SingleOutputStreamOperator<String> tableFiles =
        splits
            .rebalance()
            .process(
                new FileNameReader(
                    TASK, 0, loader, FILE_PATH, FILE_PATH_SCAN, MetadataTableType.ALL_FILES))
            .name("read the files of " + table);
    SingleOutputStreamOperator<String> metadataFiles =
        trigger
            .process(new ListMetadataFiles(TASK, 0, loader))
            .name("list the metadata files of " + table)
            .forceNonParallel();
    DataStream<String> loggedFiles =
        env.fromData(Types.STRING, logged.toArray(String[]::new))
            .assignTimestampsAndWatermarks(
                WatermarkStrategy.<String>noWatermarks()
                    .withTimestampAssigner((file, previous) -> now))
            .name("metadata files of the commit log of " + table);
    SingleOutputStreamOperator<String> fileSystemFiles =
        trigger
            .process(new ListFileSystemFiles(TASK, 0, loader, null, minAge.toMillis(), true))
            .name("list the files under " + table)
            .forceNonParallel();

    // Mutable maps: Iceberg looks a location without a scheme up by a null key.
    Map<String, String> schemes = new HashMap<>(Map.of("s3n", "s3", "s3a", "s3"));
    Map<String, String> authorities = new HashMap<>();
    FileUriKeySelector byUri = new FileUriKeySelector(schemes, authorities);
    SingleOutputStreamOperator<String> orphans =
        metadataFiles
            .union(tableFiles, loggedFiles)
            .keyBy(byUri)
            .connect(fileSystemFiles.keyBy(byUri))
            .process(new OrphanFilesDetector(PrefixMismatchMode.ERROR, schemes, authorities))
            .name("find the orphans of " + table);
    DataStream<Exception> errors =
        metadataFiles
            .getSideOutput(DeleteOrphanFiles.ERROR_STREAM)
            .union(
                fileSystemFiles.getSideOutput(DeleteOrphanFiles.ERROR_STREAM),
                tableFiles.getSideOutput(DeleteOrphanFiles.ERROR_STREAM),
                splits.getSideOutput(DeleteOrphanFiles.ERROR_STREAM),
                orphans.getSideOutput(DeleteOrphanFiles.ERROR_STREAM));
    // Any failure of the listing means a reference may be missing: then nothing is deleted.
    SingleOutputStreamOperator<String> safe =
        orphans
            .connect(errors)
            .transform("skip all on an error", Types.STRING, new SkipOnError())
            .forceNonParallel();
    if (!dryRun) {
      safe.transform(
              "delete the orphans of " + table,
              Types.VOID,
              new DeleteFilesProcessor(loaded, TASK, 0, 1000))
          .forceNonParallel();
    }

    TypeInformation<Tuple2<Boolean, String>> outcome = Types.TUPLE(Types.BOOLEAN, Types.STRING);
    List<String> found = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    safe.map(file -> Tuple2.of(true, file))
        .returns(outcome)
        .union(errors.map(error -> Tuple2.of(false, String.valueOf(error))).returns(outcome))
        .executeAndCollect("remove orphan files of " + table)
        .forEachRemaining(row -> (row.f0 ? found : failures).add(row.f1));
    if (!failures.isEmpty()) {
      throw new IllegalStateException(
          "removing the orphan files of "
              + table
              + " failed: "
              + failures.get(0)
              + (failures.size() > 1 ? " (and " + (failures.size() - 1) + " more)" : "")
              + "; nothing was deleted");
    }
    return new Result(List.copyOf(found), dryRun);
  }

  /**
   * The metadata files of the table's logged commits from the one that added its oldest live
   * snapshot on (all of them while it has none); always at least the current one.
   */
  private static List<String> loggedMetadataFiles(
      Table table, CommitFeed feed, TableIdentifier id) {
    String key = feed.commitTableKey(id);
    Set<String> kept = new LinkedHashSet<>();
    boolean reached = table.currentSnapshot() == null;
    for (CommitEvent commit : feed.commitsSince(0)) {
      if (commit.tableKey().equals(key)) {
        reached =
            reached
                || commit.addedSnapshotIds().stream()
                    .anyMatch(snapshot -> table.snapshot(snapshot) != null);
        if (reached) {
          kept.add(commit.metadataLocation());
        }
      }
    }
    kept.add(((HasTableOperations) table).operations().current().metadataFileLocation());
    return List.copyOf(kept);
  }
}
