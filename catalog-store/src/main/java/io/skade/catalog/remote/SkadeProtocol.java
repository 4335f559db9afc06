package io.skade.catalog.remote;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitOperation;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.MaintenanceLock;
import io.skade.catalog.MaintenanceLocks;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.StoredConsumer;
import io.skade.catalog.TableKeys;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.MetadataUpdateParser;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * skade's own routes beside the Iceberg REST protocol, as the skade server serves them and its
 * clients call them: the commit feed and consumer cursors. Their paths and their JSON are here
 * once, for both sides.
 *
 * <ul>
 *   <li>{@code GET /skade/v1/commits?after=SEQ&limit=N&wait-ms=M}: a {@link CommitPage}, at once
 *       when commits after {@code SEQ} exist, else as soon as one lands or after {@code M} ms. A
 *       commit the server made lately carries the updates that made its metadata file.
 *   <li>{@code GET /skade/v1/commits/of?namespace=NS&table=T&snapshot-id=ID}: the commit that added
 *       a snapshot ({@link SkadeCatalog#commitOf}); 404 when none is recorded.
 *   <li>{@code GET /skade/v1/consumers[?namespace=NS&table=T]}: stored consumers; {@code GET, PUT,
 *       DELETE /skade/v1/consumers/{id}}: one, stored with a cursor body.
 *   <li>{@code /skade/v1/locks?namespace=NS&table=T&name=N}: a table's lock ({@link
 *       MaintenanceLocks}): {@code POST} with {@code {"holder", "lease-ms"}} tries to take it,
 *       answering {@code {"held": true|false}}; {@code GET} answers the lock, 404 when free; {@code
 *       DELETE} with {@code &holder=H} releases it, answering {@code {"released": ..}}.
 *   <li>{@code GET /skade/v1/metadata?location=L}: the JSON of table metadata file {@code L} of the
 *       server's warehouse, from its memory when it committed or read the file lately; 404 for a
 *       file it does not serve ({@link ServerMetadataIO}).
 *   <li>{@code GET /skade/v1/metadata/updates?location=L&base=B}: {@code {"updates": [...]}}, the
 *       Iceberg REST updates that made file {@code L} from file {@code B}, when the server
 *       committed them lately; 404 otherwise ({@link SkadeServerClient#metadataUpdates}).
 * </ul>
 *
 * <p>Namespaces go in query parameters as the REST protocol writes them in paths (levels joined by
 * the unit separator, {@code %1F}); consumer ids are percent-encoded path segments.
 */
public final class SkadeProtocol {
  /** The prefix of every skade route; what is not under it is the Iceberg REST protocol. */
  public static final String PREFIX = "/skade/v1";

  public static final String COMMITS = PREFIX + "/commits";
  public static final String COMMIT_OF = COMMITS + "/of";
  public static final String CONSUMERS = PREFIX + "/consumers";
  public static final String JOB_RUNS = PREFIX + "/lineage/job-runs";
  public static final String LOCKS = PREFIX + "/locks";
  public static final String METADATA = PREFIX + "/metadata";
  public static final String METADATA_UPDATES = METADATA + "/updates";

  /** Longest wait a commits request may ask for, in milliseconds. */
  public static final long MAX_WAIT_MS = 60_000;

  /** Most commits one page holds. */
  public static final int MAX_LIMIT = 10_000;

  private static final ObjectMapper JSON = new ObjectMapper();

  private SkadeProtocol() {}

  /**
   * One page of the commit log.
   *
   * @param commits oldest first; gapless, unless the caller's token is limited to some namespaces
   *     (the commits of the others are left out)
   * @param lastCommitSeq the catalog's cursor when the page was read: its newest durable commit
   * @param updates per commit, the updates that made its metadata file (see {@link #commitPage})
   * @param coveredCommitSeq the newest {@code commitSeq} the page accounts for: its last commit, or
   *     beyond it when commits of namespaces the caller may not read were left out; the next page
   *     starts after it
   */
  public record CommitPage(
      List<CommitEvent> commits,
      long lastCommitSeq,
      Map<Long, List<MetadataUpdate>> updates,
      long coveredCommitSeq) {
    public CommitPage {
      commits = List.copyOf(commits);
      updates = Map.copyOf(updates);
    }

    /** A page with nothing left out. */
    public CommitPage(
        List<CommitEvent> commits, long lastCommitSeq, Map<Long, List<MetadataUpdate>> updates) {
      this(commits, lastCommitSeq, updates, newest(commits));
    }

    /** A page whose commits carry no updates. */
    public CommitPage(List<CommitEvent> commits, long lastCommitSeq) {
      this(commits, lastCommitSeq, Map.of());
    }

    private static long newest(List<CommitEvent> commits) {
      return commits.isEmpty() ? 0L : commits.get(commits.size() - 1).commitSeq();
    }
  }

  /**
   * The JSON of a page. A commit listed in {@code page.updates()} carries them ({@code "updates"}):
   * the Iceberg REST updates that made its metadata file from its previous one, so a client that
   * holds the previous one builds the new one without another request.
   */
  public static String commitPage(CommitPage page) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode commits = root.putArray("commits");
    for (CommitEvent event : page.commits()) {
      ObjectNode commit = commits.addObject();
      commit(commit, event);
      List<MetadataUpdate> updates = page.updates().get(event.commitSeq());
      if (updates != null) {
        ArrayNode json = commit.putArray("updates");
        for (MetadataUpdate update : updates) {
          json.add(read(MetadataUpdateParser.toJson(update), "metadata update"));
        }
      }
    }
    root.put("last-commit-seq", page.lastCommitSeq());
    root.put("covered-commit-seq", page.coveredCommitSeq());
    return write(root);
  }

  /** The JSON of one commit. */
  public static String commit(CommitEvent event) {
    ObjectNode root = JSON.createObjectNode();
    commit(root, event);
    return write(root);
  }

  private static void commit(ObjectNode commit, CommitEvent event) {
    TableIdentifier table = TableKeys.identifier(event.tableKey());
    commit.put("commit-seq", event.commitSeq());
    namespace(commit.putArray("namespace"), table.namespace());
    commit.put("table", table.name());
    commit.put("operation", event.operation().name());
    ArrayNode snapshots = commit.putArray("snapshot-ids");
    event.addedSnapshotIds().forEach(snapshots::add);
    commit.put("metadata-location", event.metadataLocation());
    commit.put("previous-metadata-location", event.previousMetadataLocation());
    commit.put("timestamp-ms", event.tsMicros() / 1000);
    commit.put("timestamp-us", event.tsMicros());
    if (event.transactionSize() > 0) {
      commit.put("transaction-seq", event.transactionSeq());
      commit.put("transaction-size", event.transactionSize());
    }
  }

  /** A page read from its JSON. */
  public static CommitPage commitPage(String json) {
    JsonNode root = read(json, "commit page");
    List<CommitEvent> commits = new ArrayList<>();
    Map<Long, List<MetadataUpdate>> updates = new HashMap<>();
    for (JsonNode commit : required(root, "commits", "commit page")) {
      CommitEvent event = commit(commit);
      commits.add(event);
      JsonNode made = commit.get("updates");
      if (made != null) {
        List<MetadataUpdate> parsed = new ArrayList<>();
        made.forEach(update -> parsed.add(MetadataUpdateParser.fromJson(update)));
        updates.put(event.commitSeq(), parsed);
      }
    }
    long last = required(root, "last-commit-seq", "commit page").asLong();
    JsonNode covered = root.get("covered-commit-seq");
    return covered == null
        ? new CommitPage(commits, last, updates)
        : new CommitPage(commits, last, updates, covered.asLong());
  }

  /** One commit read from its JSON. */
  public static CommitEvent commit(String json) {
    return commit(read(json, "commit"));
  }

  private static CommitEvent commit(JsonNode commit) {
    TableIdentifier table =
        TableIdentifier.of(
            namespace(required(commit, "namespace", "commit")),
            required(commit, "table", "commit").asText());
    List<Long> snapshots = new ArrayList<>();
    required(commit, "snapshot-ids", "commit").forEach(id -> snapshots.add(id.asLong()));
    JsonNode previous = commit.get("previous-metadata-location");
    return new CommitEvent(
        required(commit, "commit-seq", "commit").asLong(),
        TableKeys.tableKey(table),
        CommitOperation.valueOf(
            required(commit, "operation", "commit").asText().toUpperCase(Locale.ROOT)),
        snapshots,
        required(commit, "metadata-location", "commit").asText(),
        previous == null || previous.isNull() ? null : previous.asText(),
        commit.has("timestamp-us")
            ? commit.get("timestamp-us").asLong()
            : required(commit, "timestamp-ms", "commit").asLong() * 1000,
        commit.path("transaction-seq").asLong(0),
        commit.path("transaction-size").asInt(0));
  }

  /** The JSON of a cursor, as a consumer stores it. */
  public static String cursor(ConsumerCursor cursor) {
    ObjectNode root = JSON.createObjectNode();
    cursor(root, cursor);
    return write(root);
  }

  private static void cursor(ObjectNode node, ConsumerCursor cursor) {
    namespace(node.putArray("namespace"), cursor.table().namespace());
    node.put("table", cursor.table().name());
    node.put("table-uuid", cursor.tableUuid());
    node.put("snapshot-id", cursor.snapshotId());
    node.put("commit-seq", cursor.commitSeq());
  }

  /**
   * A cursor read from its JSON.
   *
   * @throws IllegalArgumentException naming what is missing or malformed
   */
  public static ConsumerCursor cursor(String json) {
    return cursor(read(json, "consumer cursor"));
  }

  private static ConsumerCursor cursor(JsonNode node) {
    String what = "consumer cursor";
    TableIdentifier table =
        TableIdentifier.of(namespace(required(node, "namespace", what)), text(node, "table", what));
    return new ConsumerCursor(
        table,
        text(node, "table-uuid", what),
        number(node, "snapshot-id", what),
        number(node, "commit-seq", what));
  }

  /** The JSON of a stored consumer. */
  public static String consumer(StoredConsumer consumer) {
    return write(consumerNode(consumer));
  }

  private static ObjectNode consumerNode(StoredConsumer consumer) {
    ObjectNode root = JSON.createObjectNode();
    root.put("consumer-id", consumer.consumerId());
    cursor(root.putObject("cursor"), consumer.cursor());
    root.put("last-seen-ms", consumer.lastSeen().toEpochMilli());
    if (consumer.owner() != null) {
      root.put("owner", consumer.owner());
    }
    return root;
  }

  /** A stored consumer read from its JSON. */
  public static StoredConsumer consumer(String json) {
    return consumer(read(json, "consumer"));
  }

  private static StoredConsumer consumer(JsonNode node) {
    return new StoredConsumer(
        text(node, "consumer-id", "consumer"),
        cursor(required(node, "cursor", "consumer")),
        Instant.ofEpochMilli(number(node, "last-seen-ms", "consumer")),
        node.hasNonNull("owner") ? node.get("owner").asText() : null);
  }

  /** The JSON of a list of consumers. */
  public static String consumers(List<StoredConsumer> consumers) {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode list = root.putArray("consumers");
    consumers.forEach(consumer -> list.add(consumerNode(consumer)));
    return write(root);
  }

  /** A list of consumers read from its JSON. */
  public static List<StoredConsumer> consumers(String json) {
    List<StoredConsumer> consumers = new ArrayList<>();
    for (JsonNode node : required(read(json, "consumer list"), "consumers", "consumer list")) {
      consumers.add(consumer(node));
    }
    return consumers;
  }

  /** The JSON of a request to take a lock. */
  public static String lockRequest(String holder, Duration lease) {
    ObjectNode root = JSON.createObjectNode();
    root.put("holder", holder);
    root.put("lease-ms", lease.toMillis());
    return write(root);
  }

  /** The holder of a request to take a lock. */
  public static String lockHolder(String json) {
    return text(read(json, "lock request"), "holder", "lock request");
  }

  /** The lease of a request to take a lock. */
  public static Duration lockLease(String json) {
    return Duration.ofMillis(number(read(json, "lock request"), "lease-ms", "lock request"));
  }

  /** The JSON of a held lock. */
  public static String lock(MaintenanceLock lock) {
    ObjectNode root = JSON.createObjectNode();
    namespace(root.putArray("namespace"), lock.table().namespace());
    root.put("table", lock.table().name());
    root.put("name", lock.name());
    root.put("holder", lock.holder());
    root.put("since-ms", lock.since().toEpochMilli());
    return write(root);
  }

  /** A held lock read from its JSON. */
  public static MaintenanceLock lock(String json) {
    JsonNode node = read(json, "lock");
    return new MaintenanceLock(
        TableIdentifier.of(
            namespace(required(node, "namespace", "lock")), text(node, "table", "lock")),
        text(node, "name", "lock"),
        text(node, "holder", "lock"),
        Instant.ofEpochMilli(number(node, "since-ms", "lock")));
  }

  /** {@code {"<field>": value}}: the answer of a lock route. */
  public static String flag(String field, boolean value) {
    ObjectNode root = JSON.createObjectNode();
    root.put(field, value);
    return write(root);
  }

  /** The value of {@link #flag}'s answer. */
  public static boolean flag(String json, String field) {
    JsonNode value = required(read(json, "lock answer"), field, "lock answer");
    if (!value.isBoolean()) {
      throw new IllegalArgumentException(
          "in a lock answer, '" + field + "' must be true or" + " false, got " + value);
    }
    return value.asBoolean();
  }

  private static void namespace(ArrayNode levels, Namespace namespace) {
    for (String level : namespace.levels()) {
      levels.add(level);
    }
  }

  private static Namespace namespace(JsonNode levels) {
    if (!levels.isArray()) {
      throw new IllegalArgumentException("'namespace' must be an array of strings, got " + levels);
    }
    List<String> parts = new ArrayList<>();
    levels.forEach(level -> parts.add(level.asText()));
    return Namespace.of(parts.toArray(String[]::new));
  }

  private static JsonNode read(String json, String what) {
    try {
      JsonNode node = JSON.readTree(json);
      if (node == null || !node.isObject()) {
        throw new IllegalArgumentException(
            "a " + what + " must be a JSON object, got: " + abbreviate(json));
      }
      return node;
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(
          "a " + what + " is not valid JSON (" + e.getOriginalMessage() + "): " + abbreviate(json),
          e);
    }
  }

  private static JsonNode required(JsonNode node, String field, String what) {
    JsonNode value = node.get(field);
    if (value == null || value.isNull()) {
      throw new IllegalArgumentException(
          "a " + what + " needs the field '" + field + "'; got " + abbreviate(node.toString()));
    }
    return value;
  }

  private static String text(JsonNode node, String field, String what) {
    JsonNode value = required(node, field, what);
    if (!value.isTextual()) {
      throw new IllegalArgumentException(
          "in a " + what + ", '" + field + "' must be a string," + " got " + value);
    }
    return value.asText();
  }

  private static long number(JsonNode node, String field, String what) {
    JsonNode value = required(node, field, what);
    if (!value.isIntegralNumber() || !value.canConvertToLong()) {
      throw new IllegalArgumentException(
          "in a " + what + ", '" + field + "' must be an" + " integer, got " + value);
    }
    return value.asLong();
  }

  private static String write(JsonNode node) {
    try {
      return JSON.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON of " + node, e);
    }
  }

  private static String abbreviate(String text) {
    return text.length() <= 200 ? text : text.substring(0, 200) + "…";
  }
}
