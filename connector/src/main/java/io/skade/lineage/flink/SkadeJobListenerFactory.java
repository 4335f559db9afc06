package io.skade.lineage.flink;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeRuntime;
import io.skade.catalog.remote.RemoteConnection;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.FlinkJobs;
import io.skade.lineage.JobRunEvent;
import io.skade.lineage.JobRunJson;
import io.skade.lineage.LineageDataset;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import org.apache.flink.core.execution.JobExecutionStatusEvent;
import org.apache.flink.core.execution.JobStatusChangedEvent;
import org.apache.flink.core.execution.JobStatusChangedListener;
import org.apache.flink.core.execution.JobStatusChangedListenerFactory;
import org.apache.flink.streaming.api.lineage.LineageGraph;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.runtime.execution.JobCreatedEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * skade's job-status listener (FLIP-314), registered with {@code
 * execution.job-status-changed-listeners: io.skade.lineage.flink.SkadeJobListenerFactory}, for SQL
 * and DataStream jobs alike: when a job is submitted it remembers the job's name and datasets, so
 * the commits its skade sinks make name it and its inputs ({@link FlinkJobs}), and it reports the
 * job's START, COMPLETE, FAIL and ABORT to the lineage of every skade catalog open in this JVM
 * whose tables the job touches, and to the skade server of every remote catalog ({@code uri}) whose
 * tables a SQL planner of this JVM planned ({@link #planned}).
 */
public final class SkadeJobListenerFactory implements JobStatusChangedListenerFactory {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeJobListenerFactory.class);

  /** How long a report of a job run to a server rides through its failures. */
  private static final Duration REPORT_RETRY = Duration.ofSeconds(30);

  /** Entries of each of {@link Registry}'s caches at most. */
  private static final int MAX_ENTRIES = 10_000;

  /** A planned skade table; {@code server} the properties of its server, null if embedded. */
  private record Planned(String warehouse, String table, Map<String, String> server) {}

  /**
   * What the listener of a {@link SkadeRuntime} keeps: the tables planned, the servers of each
   * job's tables, and the thread reporting to them (shut down with the runtime).
   */
  private static final class Registry implements AutoCloseable {
    static final String THREAD = "skade-lineage-job-runs";

    /** The skade tables this JVM planned, by the name Flink's lineage gives them. */
    final Cache<String, Planned> planned = Caffeine.newBuilder().maximumSize(MAX_ENTRIES).build();

    /** Per job id, the skade servers owning tables of the job, whose lineage hears of its runs. */
    final Cache<String, Set<Map<String, String>>> servers =
        Caffeine.newBuilder().maximumSize(MAX_ENTRIES).build();

    /** Reports to servers in order, off the thread that runs Flink's listeners. */
    final ExecutorService toServers =
        Executors.newSingleThreadExecutor(task -> SkadeRuntime.thread(task, THREAD));

    @Override
    public void close() {
      SkadeRuntime.shutDown(toServers, THREAD);
    }
  }

  private static Registry registry() {
    return SkadeRuntime.get().component(Registry.class, Registry::new);
  }

  @Override
  public JobStatusChangedListener createListener(Context context) {
    return SkadeJobListenerFactory::onEvent;
  }

  private static void onEvent(JobStatusChangedEvent event) {
    Registry registry = registry();
    String jobId = event.jobId().toHexString();
    if (event instanceof JobCreatedEvent created) {
      LineageGraph graph = created.lineageGraph();
      List<LineageVertex> vertices = new ArrayList<>();
      if (graph != null) {
        vertices.addAll(graph.sources());
        vertices.addAll(graph.sinks());
      }
      Set<Map<String, String>> servers = new LinkedHashSet<>();
      vertices.forEach(
          vertex ->
              vertex
                  .datasets()
                  .forEach(
                      dataset -> {
                        Planned planned = registry.planned.getIfPresent(dataset.name());
                        if (planned != null && planned.server() != null) {
                          servers.add(planned.server());
                        }
                      }));
      registry.servers.put(jobId, servers);
      FlinkJobs.Job job =
          new FlinkJobs.Job(
              jobId,
              event.jobName(),
              graph == null ? List.of() : datasets(registry, List.copyOf(graph.sources())),
              graph == null ? List.of() : datasets(registry, graph.sinks()));
      FlinkJobs.submitted(job);
      report(registry, job, JobRunEvent.State.START, null);
    } else if (event instanceof JobExecutionStatusEvent status) {
      Optional<FlinkJobs.Job> job = FlinkJobs.job(jobId);
      JobRunEvent.State state =
          switch (status.newStatus()) {
            case FINISHED -> JobRunEvent.State.COMPLETE;
            case FAILED -> JobRunEvent.State.FAIL;
            case CANCELED -> JobRunEvent.State.ABORT;
            default -> null;
          };
      if (state != null && job.isPresent()) {
        Throwable error = status.exception();
        report(registry, job.get(), state, error == null ? null : String.valueOf(error));
      }
    }
  }

  private static List<LineageDataset> datasets(
      Registry registry, List<? extends LineageVertex> vertices) {
    List<LineageDataset> datasets = new ArrayList<>();
    for (LineageVertex vertex : vertices) {
      vertex.datasets().forEach(dataset -> datasets.add(dataset(registry, dataset)));
    }
    return datasets;
  }

  /**
   * Remembers that Flink table {@code flinkName} ({@code catalog.database.table}, as Flink's SQL
   * lineage names it) is skade table {@code table} of the catalog of {@code warehouse}, which the
   * skade server of {@code server} (its catalog properties) owns, or this JVM (null). skade's SQL
   * table factory calls it for each table it plans.
   */
  public static void planned(
      String flinkName, String warehouse, String table, Map<String, String> server) {
    registry()
        .planned
        .put(flinkName, new Planned(warehouse, table, server == null ? null : Map.copyOf(server)));
  }

  /**
   * A dataset of the graph as skade's lineage names it. Flink's SQL planner names a table by its
   * Flink identifier, keeping the namespace of the connector's own dataset (a skade table's
   * warehouse) or none at all; a skade table planned in this JVM is named as skade names it.
   */
  private static LineageDataset dataset(
      Registry registry, org.apache.flink.streaming.api.lineage.LineageDataset d) {
    Planned planned = registry.planned.getIfPresent(d.name());
    if (planned != null) {
      return FlinkLineage.fromFlink(planned.warehouse(), planned.table());
    }
    return FlinkLineage.fromFlink(d.namespace() == null ? "" : d.namespace(), d.name());
  }

  /** To the lineage of each open catalog whose warehouse holds one of the job's datasets. */
  private static void report(
      Registry registry, FlinkJobs.Job job, JobRunEvent.State state, String error) {
    JobRunEvent run =
        new JobRunEvent(
            job.id(),
            job.name(),
            state,
            job.inputs(),
            job.outputs(),
            System.currentTimeMillis() * 1000,
            error);
    for (CatalogLineage.Running running : CatalogLineage.running()) {
      String warehouse = running.catalog().warehouse();
      if (job.inputs().stream().anyMatch(d -> warehouse.equals(d.namespace()))
          || job.outputs().stream().anyMatch(d -> warehouse.equals(d.namespace()))) {
        running.out().jobRun(run);
      }
    }
    Set<Map<String, String>> servers = registry.servers.getIfPresent(job.id());
    if (servers != null && !servers.isEmpty()) {
      String json = JobRunJson.write(run);
      for (Map<String, String> server : servers) {
        try {
          registry.toServers.execute(() -> toServer(server, json, job));
        } catch (RejectedExecutionException e) {
          LOG.warn(
              "skade lineage: the run of job {} was not reported to the skade server at {}:"
                  + " skade's runtime in this JVM closed",
              job.actor(),
              server.get(CatalogConnection.URI));
        }
      }
    }
  }

  /** Best effort, as all lineage: a server that does not answer in time misses the event. */
  private static void toServer(Map<String, String> server, String json, FlinkJobs.Job job) {
    String uri = server.get(CatalogConnection.URI);
    try {
      RemoteConnection.reportJobRun(server, json, REPORT_RETRY);
    } catch (RuntimeException e) {
      LOG.warn(
          "skade lineage: the run of job {} could not be reported to the skade server at"
              + " {}: {}",
          job.actor(),
          uri,
          e.toString());
    }
  }
}
