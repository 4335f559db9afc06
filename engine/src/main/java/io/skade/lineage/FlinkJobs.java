package io.skade.lineage;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.util.List;
import java.util.Optional;

/**
 * The Flink jobs this JVM saw submitted, with the datasets they read and write, so the commits
 * their sinks make can be described with the job's name and inputs: a sink's commit carries only
 * the job id ({@code flink.job-id} in the snapshot summary). Bounded: the jobs least recently seen
 * are forgotten first.
 */
public final class FlinkJobs {
  /** Jobs remembered at most. */
  static final int MAX_JOBS = 1000;

  /** A submitted job: its name and the datasets of its lineage graph. */
  public record Job(
      String id, String name, List<LineageDataset> inputs, List<LineageDataset> outputs) {
    public Job {
      inputs = List.copyOf(inputs);
      outputs = List.copyOf(outputs);
    }

    /** The actor of the job's commits: {@code name (id)}. */
    public String actor() {
      return name + " (" + id + ")";
    }
  }

  // A JVM-wide registry: why it must be one is in docs/internals.md, "Process-wide state".
  private static final Cache<String, Job> JOBS =
      Caffeine.newBuilder().maximumSize(MAX_JOBS).build();

  private FlinkJobs() {}

  /** Remembers a submitted job. */
  public static void submitted(Job job) {
    JOBS.put(job.id(), job);
  }

  /** The job with Flink job id {@code id}, if this JVM saw it submitted. */
  public static Optional<Job> job(String id) {
    return Optional.ofNullable(JOBS.getIfPresent(id));
  }
}
