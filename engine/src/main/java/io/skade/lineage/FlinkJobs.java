package io.skade.lineage;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.SkadeRuntime;
import java.util.List;
import java.util.Optional;

/**
 * The Flink jobs this JVM saw submitted, with the datasets they read and write, so the commits
 * their sinks make can be described with the job's name and inputs: a sink's commit carries only
 * the job id ({@code flink.job-id} in the snapshot summary). Bounded: the jobs least recently seen
 * are forgotten first. The jobs are the current {@link SkadeRuntime}'s.
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

  /** The jobs a {@link SkadeRuntime} saw submitted, by Flink job id. */
  private static final class Jobs {
    final Cache<String, Job> jobs = Caffeine.newBuilder().maximumSize(MAX_JOBS).build();
  }

  private FlinkJobs() {}

  private static Cache<String, Job> jobs() {
    return SkadeRuntime.get().component(Jobs.class, Jobs::new).jobs;
  }

  /** Remembers a submitted job. */
  public static void submitted(Job job) {
    jobs().put(job.id(), job);
  }

  /** The job with Flink job id {@code id}, if this JVM saw it submitted. */
  public static Optional<Job> job(String id) {
    return Optional.ofNullable(jobs().getIfPresent(id));
  }
}
