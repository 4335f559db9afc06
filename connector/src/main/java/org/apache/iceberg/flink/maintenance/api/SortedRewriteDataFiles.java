package org.apache.iceberg.flink.maintenance.api;

import io.skade.maintenance.CompactionStages;
import io.skade.maintenance.SortingRewriteRunner;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.iceberg.flink.maintenance.operator.TaskResultAggregator;

/**
 * Part of skade, not of Iceberg, and reached only through {@code
 * io.skade.maintenance.IcebergInternals#sortedCompaction} (its seam {@code MAINTENANCE_TASK}, which
 * says why skade needs it and checks its shape while a job is planned): Iceberg's {@link
 * RewriteDataFiles} maintenance task, scheduled and planned and committed by Iceberg's own
 * operators, whose rewriter writes each group in the table's order ({@link SortingRewriteRunner}),
 * which Iceberg's Flink rewriter does not. It lives in Iceberg's package only because {@link
 * TableMaintenance} takes only tasks of this package (their {@code append} is package-private in
 * Iceberg 1.11), and does no more than wire {@link CompactionStages} into the task; it must
 * therefore be loaded by the class loader of Iceberg's Flink classes, as it is when both come from
 * one jar or one class path. Its operators take the names and uids of {@link RewriteDataFiles}'
 * operators, so that what a savepoint holds of Iceberg's planner and committer maps onto the same
 * operators here.
 */
public final class SortedRewriteDataFiles extends MaintenanceTaskBuilder<SortedRewriteDataFiles> {
  private final Map<String, String> planOptions;

  private SortedRewriteDataFiles(Map<String, String> planOptions) {
    this.planOptions = new HashMap<>(planOptions);
  }

  /**
   * A new task whose planner takes {@code planOptions} (options of Iceberg's {@code
   * BinPackRewriteFilePlanner}); schedule it with the {@code scheduleOn...} methods.
   */
  public static SortedRewriteDataFiles builder(Map<String, String> planOptions) {
    return new SortedRewriteDataFiles(planOptions);
  }

  @Override
  String maintenanceTaskName() {
    return "RewriteDataFiles";
  }

  @Override
  DataStream<TaskResult> append(DataStream<Trigger> trigger) {
    CompactionStages stages =
        CompactionStages.append(
            trigger,
            tableName(),
            taskName(),
            index(),
            tableLoader(),
            planOptions,
            SortingRewriteRunner.DEFAULT_SORT_BUFFER_BYTES);
    setSlotSharingGroup(
        stages
            .planned()
            .name(operatorName(RewriteDataFiles.PLANNER_TASK_NAME))
            .uid(RewriteDataFiles.PLANNER_TASK_NAME + uidSuffix()));
    setSlotSharingGroup(
        stages
            .rewritten()
            .name(operatorName(RewriteDataFiles.REWRITE_TASK_NAME))
            .uid(RewriteDataFiles.REWRITE_TASK_NAME + uidSuffix())
            .setParallelism(parallelism()));
    setSlotSharingGroup(
        stages
            .committed()
            .name(operatorName(RewriteDataFiles.COMMIT_TASK_NAME))
            .uid(RewriteDataFiles.COMMIT_TASK_NAME + uidSuffix()));
    return setSlotSharingGroup(
        trigger
            .union(stages.committed())
            .connect(stages.errors())
            .transform(
                operatorName(RewriteDataFiles.AGGREGATOR_TASK_NAME),
                TypeInformation.of(TaskResult.class),
                new TaskResultAggregator(tableName(), taskName(), index()))
            .uid(RewriteDataFiles.AGGREGATOR_TASK_NAME + uidSuffix())
            .forceNonParallel());
  }
}
