package io.skade.table;

import org.apache.flink.core.execution.JobStatusChangedListener;
import org.apache.flink.core.execution.JobStatusChangedListenerFactory;

/**
 * The name skade's job-status listener had before it served DataStream jobs too: configurations
 * that register {@code execution.job-status-changed-listeners:
 * io.skade.table.SkadeJobListenerFactory} keep working, with the same listener.
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
