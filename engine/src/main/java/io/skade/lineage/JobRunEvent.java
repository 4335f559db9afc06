package io.skade.lineage;

import java.util.List;
import java.util.Objects;

/**
 * A Flink job's run changed state: it started, completed, failed or was cancelled, with the
 * datasets it reads and writes.
 *
 * @param jobId the Flink job id
 * @param jobName the Flink job name
 * @param state what happened to the run
 * @param inputs the datasets the job reads
 * @param outputs the datasets the job writes
 * @param tsMicros when it happened, microseconds since the epoch
 * @param error why the job failed (for {@link State#FAIL}), else null
 */
public record JobRunEvent(
    String jobId,
    String jobName,
    State state,
    List<LineageDataset> inputs,
    List<LineageDataset> outputs,
    long tsMicros,
    String error) {

  /** What happened to a run. */
  public enum State {
    START,
    COMPLETE,
    FAIL,
    /** Cancelled. */
    ABORT
  }

  public JobRunEvent {
    Objects.requireNonNull(jobId, "jobId");
    Objects.requireNonNull(jobName, "jobName");
    Objects.requireNonNull(state, "state");
    inputs = List.copyOf(inputs);
    outputs = List.copyOf(outputs);
  }
}
