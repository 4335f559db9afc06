package io.skade.lineage;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A {@link JobRunEvent} as JSON, the body a Flink process sends a skade server so that the lineage
 * the server runs for its catalog learns of the job ({@code POST /skade/v1/lineage/job-runs}):
 * {@code {"job-id", "job-name", "state", "inputs": [dataset], "outputs": [dataset], "ts-micros",
 * "error"}}, a dataset being {@code {"namespace", "name", "system", "location", "snapshot-id",
 * "fields": [{"name", "type"}]}} (nulls left out).
 */
public final class JobRunJson {
  private static final ObjectMapper JSON = new ObjectMapper();

  private JobRunJson() {}

  /** {@code event} as JSON. */
  public static String write(JobRunEvent event) {
    ObjectNode node =
        JSON.createObjectNode()
            .put("job-id", event.jobId())
            .put("job-name", event.jobName())
            .put("state", event.state().name())
            .put("ts-micros", event.tsMicros());
    datasets(node.putArray("inputs"), event.inputs());
    datasets(node.putArray("outputs"), event.outputs());
    if (event.error() != null) {
      node.put("error", event.error());
    }
    return node.toString();
  }

  /**
   * The event {@code json} describes.
   *
   * @throws IllegalArgumentException naming what is missing or malformed
   */
  public static JobRunEvent read(String json) {
    JsonNode node;
    try {
      node = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("a job run is not JSON: " + e.getOriginalMessage(), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException("a job run must be a JSON object");
    }
    String state = text(node, "state");
    JobRunEvent.State parsed;
    try {
      parsed = JobRunEvent.State.valueOf(state.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "a job run's 'state' is '"
              + state
              + "'; it is one of"
              + " START, COMPLETE, FAIL and ABORT",
          e);
    }
    JsonNode error = node.get("error");
    return new JobRunEvent(
        text(node, "job-id"),
        text(node, "job-name"),
        parsed,
        datasets(node, "inputs"),
        datasets(node, "outputs"),
        node.path("ts-micros").asLong(0),
        error == null || error.isNull() ? null : error.asText());
  }

  private static void datasets(ArrayNode array, List<LineageDataset> datasets) {
    for (LineageDataset dataset : datasets) {
      ObjectNode node =
          array.addObject().put("namespace", dataset.namespace()).put("name", dataset.name());
      if (dataset.system() != null) {
        node.put("system", dataset.system());
      }
      if (dataset.location() != null) {
        node.put("location", dataset.location());
      }
      if (dataset.snapshotId() != null) {
        node.put("snapshot-id", dataset.snapshotId());
      }
      ArrayNode fields = node.putArray("fields");
      dataset
          .fields()
          .forEach(field -> fields.addObject().put("name", field.name()).put("type", field.type()));
    }
  }

  private static List<LineageDataset> datasets(JsonNode node, String key) {
    List<LineageDataset> datasets = new ArrayList<>();
    for (JsonNode dataset : node.path(key)) {
      List<LineageDataset.Field> fields = new ArrayList<>();
      for (JsonNode field : dataset.path("fields")) {
        fields.add(new LineageDataset.Field(text(field, "name"), text(field, "type")));
      }
      datasets.add(
          new LineageDataset(
              text(dataset, "namespace"),
              text(dataset, "name"),
              optional(dataset, "system"),
              optional(dataset, "location"),
              dataset.hasNonNull("snapshot-id") ? dataset.get("snapshot-id").asLong() : null,
              fields));
    }
    return datasets;
  }

  private static String text(JsonNode node, String key) {
    JsonNode value = node.get(key);
    if (value == null || !value.isTextual()) {
      throw new IllegalArgumentException("a job run needs '" + key + "' as a string");
    }
    return value.asText();
  }

  private static String optional(JsonNode node, String key) {
    JsonNode value = node.get(key);
    return value == null || value.isNull() ? null : value.asText();
  }
}
