package io.skade.lineage;

/**
 * Where lineage goes. Sinks are called from one thread at a time by {@link BestEffortLineage},
 * which keeps a slow or failing sink from ever delaying or failing a commit or a job; a sink may
 * therefore block and throw.
 */
public interface LineageSink extends AutoCloseable {

  /** Records one commit's lineage. */
  void commit(LineageEvent event) throws Exception;

  /** Records a job run's change of state; sinks that keep commits only ignore it. */
  default void jobRun(JobRunEvent event) throws Exception {}

  /**
   * Makes what was recorded so far durable or visible; called when no event is waiting, so a sink
   * may batch the events of a burst.
   */
  default void flush() throws Exception {}

  @Override
  default void close() throws Exception {}
}
