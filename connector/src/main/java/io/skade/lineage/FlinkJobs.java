package io.skade.lineage;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Flink jobs this JVM saw submitted, with the datasets they read and write, so the commits
 * their sinks make can be described with the job's name and inputs: a sink's commit carries only
 * the job id ({@code flink.job-id} in the snapshot summary). Bounded: the oldest jobs are
 * forgotten first.
 */
public final class FlinkJobs {
  /** Jobs remembered at most. */
  static final int MAX_JOBS = 1000;

  /** A submitted job: its name and the datasets of its lineage graph. */
  public record Job(String id, String name, List<LineageDataset> inputs,
      List<LineageDataset> outputs) {
    public Job {
      inputs = List.copyOf(inputs);
      outputs = List.copyOf(outputs);
    }

    /** The actor of the job's commits: {@code name (id)}. */
    public String actor() {
      return name + " (" + id + ")";
    }
  }

  private static final Map<String, Job> JOBS = new LinkedHashMap<>() {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Job> eldest) {
      return size() > MAX_JOBS;
    }
  };

  private FlinkJobs() {}

  /** Remembers a submitted job. */
  public static void submitted(Job job) {
    synchronized (JOBS) {
      JOBS.put(job.id(), job);
    }
  }

  /** The job with Flink job id {@code id}, if this JVM saw it submitted. */
  public static Optional<Job> job(String id) {
    synchronized (JOBS) {
      return Optional.ofNullable(JOBS.get(id));
    }
  }
}
