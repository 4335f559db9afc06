package io.skade.table;

import org.apache.flink.core.execution.JobStatusChangedListener;
import org.apache.flink.core.execution.JobStatusChangedListenerFactory;

/**
 * skade's job-status listener under the SQL connector's package: configurations that register
 * {@code execution.job-status-changed-listeners: io.skade.table.SkadeJobListenerFactory} get the
 * same listener as {@link io.skade.lineage.flink.SkadeJobListenerFactory}.
 *
 * @deprecated register {@link io.skade.lineage.flink.SkadeJobListenerFactory} instead
 */
@Deprecated
public final class SkadeJobListenerFactory implements JobStatusChangedListenerFactory {
  private final io.skade.lineage.flink.SkadeJobListenerFactory listener =
      new io.skade.lineage.flink.SkadeJobListenerFactory();

  @Override
  public JobStatusChangedListener createListener(Context context) {
    return listener.createListener(context);
  }
}
