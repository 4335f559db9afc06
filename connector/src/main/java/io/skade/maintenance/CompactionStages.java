package io.skade.maintenance;

import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.maintenance.api.Trigger;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewriteCommitter;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner.PlannedGroup;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewriteRunner.ExecutedGroup;
import org.apache.iceberg.flink.maintenance.operator.TaskResultAggregator;

/**
 * A compaction as skade runs it, in one place for the sink's maintenance and one-shot compactions:
 * Iceberg's Flink planner and committer with skade's {@link SortingRewriteRunner} between them. The
 * planner runs once per trigger on one task, the rewriters in parallel, the committer on one task;
 * callers name the stages (and give them uids) as their job needs.
 *
 * @param planned the file groups planned for each trigger
 * @param rewritten the groups rewritten
 * @param committed a trigger per commit of the rewritten groups
 */
public record CompactionStages(
    SingleOutputStreamOperator<PlannedGroup> planned,
    SingleOutputStreamOperator<ExecutedGroup> rewritten,
    SingleOutputStreamOperator<Trigger> committed) {

  /**
   * The stages of task {@code taskName} (index {@code taskIndex}) compacting {@code tableName},
   * which {@code loader} loads, on each trigger; {@code planOptions} are options of Iceberg's
   * {@code BinPackRewriteFilePlanner}.
   */
  public static CompactionStages append(
      DataStream<Trigger> triggers,
      String tableName,
      String taskName,
      int taskIndex,
      TableLoader loader,
      Map<String, String> planOptions,
      long sortBufferBytes) {
    SingleOutputStreamOperator<PlannedGroup> planned =
        triggers
            .process(
                new DataFileRewritePlanner(
                    tableName,
                    taskName,
                    taskIndex,
                    loader,
                    1,
                    Long.MAX_VALUE,
                    planOptions,
                    Expressions::alwaysTrue,
                    SnapshotRef.MAIN_BRANCH))
            .forceNonParallel();
    SingleOutputStreamOperator<ExecutedGroup> rewritten =
        planned
            .rebalance()
            .process(new SortingRewriteRunner(tableName, taskName, taskIndex, sortBufferBytes));
    SingleOutputStreamOperator<Trigger> committed =
        rewritten
            .transform(
                "commit",
                TypeInformation.of(Trigger.class),
                new DataFileRewriteCommitter(
                    tableName, taskName, taskIndex, loader, SnapshotRef.MAIN_BRANCH))
            .forceNonParallel();
    return new CompactionStages(planned, rewritten, committed);
  }

  /** The errors of every stage, as Iceberg's operators report them. */
  public DataStream<Exception> errors() {
    return planned
        .getSideOutput(TaskResultAggregator.ERROR_STREAM)
        .union(
            rewritten.getSideOutput(TaskResultAggregator.ERROR_STREAM),
            committed.getSideOutput(TaskResultAggregator.ERROR_STREAM));
  }
}
