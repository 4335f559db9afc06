package io.skade.lineage;

import io.openlineage.client.OpenLineage;
import io.openlineage.client.OpenLineageClient;
import io.openlineage.client.transports.ConsoleTransport;
import io.openlineage.client.transports.FileConfig;
import io.openlineage.client.transports.FileTransport;
import io.openlineage.client.transports.HttpConfig;
import io.openlineage.client.transports.HttpTransport;
import io.openlineage.client.transports.Transport;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.iceberg.util.DateTimeUtil;

/**
 * Sends lineage to OpenLineage through its Java client and transports: HTTP to a collector such as
 * Marquez, or JSON lines on the console or in a file.
 *
 * <p>A commit is a run of its actor (the job {@code namespace}/actor) that completed; a Flink job's
 * run has START and COMPLETE or FAIL events with one run id derived from the job id. A skade table
 * is named as Spark's Iceberg integration names tables: by its location (namespace {@code
 * scheme://authority}, name the path), with a {@code TABLE} symlink to its identifier in its
 * warehouse, its snapshot id as dataset version and its columns as schema facet. The run facet
 * {@code skade_commit} carries the commit's {@code commitSeq} and operation.
 */
public final class OpenLineageSink implements LineageSink {
  /** The producer URI of skade's events. */
  public static final URI PRODUCER = URI.create("https://github.com/skade-io/skade");

  /** The default OpenLineage job namespace of skade's events. */
  public static final String DEFAULT_NAMESPACE = "skade";

  private final OpenLineageClient client;
  private final OpenLineage ol = new OpenLineage(PRODUCER);
  private final String jobNamespace;

  /** Sends through {@code transport}, naming jobs in {@code jobNamespace}. */
  public OpenLineageSink(Transport transport, String jobNamespace) {
    this.client = new OpenLineageClient(transport);
    this.jobNamespace = jobNamespace;
  }

  /**
   * Posts events to the OpenLineage collector at {@code url} (its {@code /api/v1/lineage}
   * endpoint), giving up on a request after {@code timeout}.
   */
  public static OpenLineageSink http(URI url, Duration timeout, String jobNamespace) {
    HttpConfig config = new HttpConfig();
    config.setUrl(url);
    config.setTimeoutInMillis((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    return new OpenLineageSink(new HttpTransport(config), jobNamespace);
  }

  /** Logs events as JSON through OpenLineage's console transport. */
  public static OpenLineageSink console(String jobNamespace) {
    return new OpenLineageSink(new ConsoleTransport(), jobNamespace);
  }

  /** Appends events as JSON lines to {@code file}. */
  public static OpenLineageSink file(Path file, String jobNamespace) {
    return new OpenLineageSink(new FileTransport(new FileConfig(file.toString())), jobNamespace);
  }

  @Override
  public void commit(LineageEvent event) {
    OpenLineage.DefaultRunFacet commit = new OpenLineage.DefaultRunFacet(PRODUCER);
    commit.getAdditionalProperties().put("commitSeq", event.commitSeq());
    commit.getAdditionalProperties().put("operation", event.operation().name());
    client.emit(
        ol.newRunEventBuilder()
            .eventType(OpenLineage.RunEvent.EventType.COMPLETE)
            .eventTime(time(event.tsMicros()))
            .run(
                ol.newRun(
                    event.eventId(), ol.newRunFacetsBuilder().put("skade_commit", commit).build()))
            .job(ol.newJobBuilder().namespace(jobNamespace).name(event.actor()).build())
            .inputs(inputs(event.inputs()))
            .outputs(outputs(event.outputs()))
            .build());
  }

  @Override
  public void jobRun(JobRunEvent event) {
    OpenLineage.RunFacetsBuilder facets = ol.newRunFacetsBuilder();
    OpenLineage.DefaultRunFacet flink = new OpenLineage.DefaultRunFacet(PRODUCER);
    flink.getAdditionalProperties().put("jobId", event.jobId());
    facets.put("flink_job", flink);
    if (event.error() != null) {
      facets.errorMessage(ol.newErrorMessageRunFacet(event.error(), "JAVA", null));
    }
    client.emit(
        ol.newRunEventBuilder()
            .eventType(
                switch (event.state()) {
                  case START -> OpenLineage.RunEvent.EventType.START;
                  case COMPLETE -> OpenLineage.RunEvent.EventType.COMPLETE;
                  case FAIL -> OpenLineage.RunEvent.EventType.FAIL;
                  case ABORT -> OpenLineage.RunEvent.EventType.ABORT;
                })
            .eventTime(time(event.tsMicros()))
            .run(ol.newRun(runId(event.jobId()), facets.build()))
            .job(ol.newJobBuilder().namespace(jobNamespace).name(event.jobName()).build())
            .inputs(inputs(event.inputs()))
            .outputs(outputs(event.outputs()))
            .build());
  }

  /** The run id of every event of one Flink job run. */
  static UUID runId(String jobId) {
    return UUID.nameUUIDFromBytes(("flink-job/" + jobId).getBytes(StandardCharsets.UTF_8));
  }

  private List<OpenLineage.InputDataset> inputs(List<LineageDataset> datasets) {
    return datasets.stream()
        .map(
            dataset -> {
              String[] name = name(dataset);
              return ol.newInputDatasetBuilder()
                  .namespace(name[0])
                  .name(name[1])
                  .facets(facets(dataset))
                  .build();
            })
        .toList();
  }

  private List<OpenLineage.OutputDataset> outputs(List<LineageDataset> datasets) {
    return datasets.stream()
        .map(
            dataset -> {
              String[] name = name(dataset);
              return ol.newOutputDatasetBuilder()
                  .namespace(name[0])
                  .name(name[1])
                  .facets(facets(dataset))
                  .build();
            })
        .toList();
  }

  /** Namespace and name: a skade table's location when known, else as the dataset names itself. */
  private static String[] name(LineageDataset dataset) {
    if (dataset.location() == null) {
      return new String[] {dataset.namespace(), dataset.name()};
    }
    // Read as Iceberg's file IO reads a location: never percent-decoded, whatever it holds.
    URI location = new org.apache.hadoop.fs.Path(dataset.location()).toUri();
    String scheme = location.getScheme() == null ? "file" : location.getScheme();
    String namespace =
        location.getAuthority() == null ? scheme : scheme + "://" + location.getAuthority();
    return new String[] {namespace, location.getPath()};
  }

  private OpenLineage.DatasetFacets facets(LineageDataset dataset) {
    OpenLineage.DatasetFacetsBuilder facets = ol.newDatasetFacetsBuilder();
    if (dataset.location() != null) {
      facets.symlinks(
          ol.newSymlinksDatasetFacet(
              List.of(
                  ol.newSymlinksDatasetFacetIdentifiers(
                      dataset.namespace(), dataset.name(), "TABLE"))));
    }
    if (dataset.snapshotId() != null) {
      facets.version(ol.newDatasetVersionDatasetFacet(dataset.snapshotId().toString()));
    }
    if (!dataset.fields().isEmpty()) {
      List<OpenLineage.SchemaDatasetFacetFields> fields = new ArrayList<>();
      for (LineageDataset.Field field : dataset.fields()) {
        fields.add(
            ol.newSchemaDatasetFacetFieldsBuilder().name(field.name()).type(field.type()).build());
      }
      facets.schema(ol.newSchemaDatasetFacet(fields));
    }
    return facets.build();
  }

  private static ZonedDateTime time(long tsMicros) {
    return DateTimeUtil.timestamptzFromMicros(tsMicros).toZonedDateTime();
  }

  @Override
  public void close() throws Exception {
    client.close();
  }
}
