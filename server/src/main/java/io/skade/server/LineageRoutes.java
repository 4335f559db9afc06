package io.skade.server;

import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.FlinkJobs;
import io.skade.lineage.JobRunEvent;
import io.skade.lineage.JobRunJson;
import java.util.Optional;

/**
 * Flink job runs reported by skade's job listener in the processes that submit jobs ({@code POST
 * /skade/v1/lineage/job-runs}, a {@link JobRunJson} body; {@code 204}): the commit lineage runs
 * here, beside the catalog, but a commit names only its job's id, so a started job is remembered
 * ({@link FlinkJobs}) to name the job and its inputs in its commits' descriptions, and each run
 * reaches the catalog's lineage sink. Without lineage the runs are taken and dropped.
 */
final class LineageRoutes {
  private final SkadeCatalog catalog;

  LineageRoutes(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /** Handles the job-runs route; false for any other path. */
  boolean handle(Exchange exchange) throws Exception {
    if (!exchange.pathIs("skade", "v1", "lineage", "job-runs")) {
      return false;
    }
    exchange.route("POST " + SkadeProtocol.JOB_RUNS);
    if (!exchange.method().equals("POST")) {
      throw new UnsupportedOperationException(
          exchange.method() + " is not served on " + SkadeProtocol.JOB_RUNS + "; POST a job run");
    }
    exchange.require(Caller.Role.READ); // a job that only reads reports its runs too
    JobRunEvent reported = JobRunJson.read(exchange.body());
    Optional<CatalogLineage.Running> lineage = CatalogLineage.Running.of(catalog);
    if (lineage.isEmpty()) {
      exchange.empty(204); // the catalog records no lineage
      return true;
    }
    CatalogLineage.Running running = lineage.get();
    JobRunEvent run =
        new JobRunEvent(
            reported.jobId(),
            reported.jobName(),
            reported.state(),
            reported.inputs().stream().map(running::resolve).toList(),
            reported.outputs().stream().map(running::resolve).toList(),
            reported.tsMicros(),
            reported.error());
    if (run.state() == JobRunEvent.State.START) {
      FlinkJobs.submitted(
          new FlinkJobs.Job(run.jobId(), run.jobName(), run.inputs(), run.outputs()));
    }
    running.out().jobRun(run);
    exchange.empty(204);
    return true;
  }
}
