package io.skade.testing;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.StreamSupport;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A Flink MiniCluster in the test's JVM that several jobs run on one after another: submitted
 * (restored from a savepoint or not), stopped with a savepoint, cancelled. Started once per test
 * class, since starting a cluster costs more than a short job. Jobs never restart unless they
 * configure a restart strategy of their own: the first failure fails the job, and {@link
 * #requireNotFailed} reports it. A job may also be submitted as a client submits it, through {@link
 * #restAddress}.
 *
 * <p>A test class registers it as a static extension, {@code @RegisterExtension static final
 * LocalCluster cluster = new LocalCluster(4);}: it starts before the class's first test and closes
 * after its last.
 */
public final class LocalCluster implements BeforeAllCallback, AfterAllCallback, AutoCloseable {
  private static final Duration TIMEOUT = Duration.ofSeconds(120);
  private final int slots;
  private MiniCluster cluster;

  /** A cluster of one task manager with {@code slots} slots, not started yet. */
  public LocalCluster(int slots) {
    this.slots = slots;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    conf.set(RestOptions.BIND_PORT, "0"); // any free port: other JVMs on the machine run tests
    cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .build());
    cluster.start();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    close();
  }

  /** A new environment to build one job in, at {@code parallelism}, without restarts. */
  public static StreamExecutionEnvironment environment(int parallelism) {
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
    env.setParallelism(parallelism);
    env.setMaxParallelism(128); // the same at every parallelism, so savepoints can be rescaled
    return env;
  }

  /**
   * Submits the job built in {@code env}, restored from {@code savepoint} unless it is null (every
   * operator's state must be claimed); returns its id.
   */
  public JobID submit(StreamExecutionEnvironment env, String name, String savepoint)
      throws Exception {
    StreamGraph graph = env.getStreamGraph();
    graph.setJobName(name);
    if (savepoint != null) {
      graph.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(savepoint, false));
    }
    return cluster
        .submitJob(graph.getJobGraph())
        .get(TIMEOUT.toSeconds(), TimeUnit.SECONDS)
        .getJobID();
  }

  /** Stops the job with a savepoint in {@code directory} and waits for its end; the path. */
  public String stopWithSavepoint(JobID job, Path directory) throws Exception {
    String path =
        cluster
            .stopWithSavepoint(
                job, directory.toUri().toString(), false, SavepointFormatType.CANONICAL)
            .get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    cluster.requestJobResult(job).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    return path;
  }

  /** Cancels the job, if it still runs, and waits until it ended. */
  public void cancel(JobID job) throws Exception {
    if (!cluster.getJobStatus(job).get().isGloballyTerminalState()) {
      cluster.cancelJob(job).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }
    cluster.requestJobResult(job).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }

  /** The address of the cluster's REST endpoint, where a remote environment submits jobs. */
  public URI restAddress() throws Exception {
    return cluster.getRestAddress().get();
  }

  /** The job's status now. */
  public JobStatus status(JobID job) throws Exception {
    return cluster.getJobStatus(job).get();
  }

  /** The job's execution graph now: its tasks' states, its checkpoint statistics. */
  public AccessExecutionGraph executionGraph(JobID job) throws Exception {
    return cluster.getExecutionGraph(job).get();
  }

  /** The error a failed job ended with; waits for its end. */
  public Throwable failure(JobID job) throws Exception {
    JobResult result = cluster.requestJobResult(job).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    return result
        .getSerializedThrowable()
        .map(t -> t.deserializeError(getClass().getClassLoader()))
        .orElseThrow(() -> new AssertionError("job " + job + " ended without an error"));
  }

  /** Waits for the job's end; throws, with the job's own error as the cause, unless it finished. */
  public void awaitFinished(JobID job) throws Exception {
    JobResult result = cluster.requestJobResult(job).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    if (!result.isSuccess()) {
      throw new AssertionError(
          "job " + job + " did not finish: " + result.getApplicationStatus(),
          result
              .getSerializedThrowable()
              .map(t -> t.deserializeError(getClass().getClassLoader()))
              .orElse(null));
    }
  }

  /** Whether every task of the job is running (its sources' enumerators started before). */
  public boolean allTasksRunning(JobID job) throws Exception {
    AccessExecutionGraph graph = cluster.getExecutionGraph(job).get();
    return graph.getState() == JobStatus.RUNNING
        && StreamSupport.stream(graph.getAllExecutionVertices().spliterator(), false)
            .allMatch(vertex -> vertex.getExecutionState() == ExecutionState.RUNNING);
  }

  /** Throws, with the job's own error as the cause, when the job failed. */
  public void requireNotFailed(JobID job) throws Exception {
    JobStatus status = cluster.getJobStatus(job).get();
    if (status == JobStatus.FAILED) {
      JobResult result = cluster.requestJobResult(job).get();
      throw new AssertionError(
          "job " + job + " failed",
          result
              .getSerializedThrowable()
              .map(t -> t.deserializeError(getClass().getClassLoader()))
              .orElse(null));
    }
  }

  @Override
  public void close() throws Exception {
    if (cluster != null) {
      cluster.close();
      cluster = null;
    }
  }
}
