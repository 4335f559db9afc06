package org.apache.iceberg.flink.maintenance.operator;

import java.util.Set;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.MetricGroup;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.SerializableTable;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewritePlanner.PlannedGroup;
import org.apache.iceberg.flink.maintenance.operator.DataFileRewriteRunner.ExecutedGroup;

/**
 * Part of skade, not of Iceberg, and reached only through {@code
 * io.skade.maintenance.IcebergInternals} (its seam {@code REWRITE}, which says why skade needs each
 * part and checks their shape while a job is planned): the package-private parts of Iceberg 1.11's
 * Flink rewrite that skade's rewriter needs, a planned group's table and files in, an executed
 * group out for Iceberg's committer, and the maintenance metric group. It lives in Iceberg's
 * package only because package-private access needs the package, and does nothing else; it must
 * therefore be loaded by the class loader of Iceberg's Flink classes (it is, when both come from
 * one jar or one class path, as in skade's SQL connector jar).
 */
public final class RewriteGroups {
  private RewriteGroups() {}

  /** The table as the planner saw it. */
  public static SerializableTable table(PlannedGroup planned) {
    return planned.table();
  }

  /** The files to rewrite and the output sizes the planner chose. */
  public static RewriteFileGroup group(PlannedGroup planned) {
    return planned.group();
  }

  /** {@code planned}, rewritten into {@code written}, for Iceberg's committer. */
  public static ExecutedGroup executed(PlannedGroup planned, Set<DataFile> written) {
    planned.group().setOutputFiles(written);
    return new ExecutedGroup(
        planned.table().snapshot(planned.branch()).snapshotId(),
        planned.groupsPerCommit(),
        planned.group());
  }

  /** The metric group of a maintenance task, where Iceberg's rewriter counts its errors. */
  public static MetricGroup metrics(
      RuntimeContext context, String tableName, String taskName, int taskIndex) {
    return TableMaintenanceMetrics.groupFor(context, tableName, taskName, taskIndex);
  }
}
