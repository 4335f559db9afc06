package io.skade.lineage;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeRuntime;
import io.skade.scan.MetadataCache;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Describes every commit of a skade catalog as lineage, in {@code commit_seq} order, from the
 * catalog's commit feed: the chokepoint every writer goes through, so no commit is missed and none
 * is described twice. It runs on its own thread after the commits are durable, so it never delays
 * one; a lagging subscription and a start from an older cursor are caught up from the durable
 * commit log.
 *
 * <p>Who made a commit and from which inputs comes from the snapshot's summary: {@link #ACTOR} and
 * {@link #INPUTS}, which skade's writers set, or {@code flink.job-id}, which a Flink sink sets,
 * looked up in {@link FlinkJobs}. Creates become {@link LineageOperation#CREATE}; snapshots become
 * {@code APPEND}, {@code DELETE} or {@code OVERWRITE} (a rewrite of files is an overwrite); the
 * commits of a multi-table commit become one {@code RELEASE} naming every table; drops, renames and
 * metadata-only commits are not lineage.
 */
public final class CommitLineage implements AutoCloseable {
  /** Snapshot summary property: who made the commit. */
  public static final String ACTOR = "skade.lineage.actor";

  /**
   * Snapshot summary property: what the commit was made from, one dataset per line: a skade table's
   * identifier ({@code db.table}), or {@code system<TAB>namespace<TAB>name}.
   */
  public static final String INPUTS = "skade.lineage.inputs";

  private static final String FLINK_JOB_ID = "flink.job-id";
  private static final Logger LOG = LoggerFactory.getLogger(CommitLineage.class);

  private final SkadeCatalog catalog;
  private final BestEffortLineage out;
  private final String defaultActor;
  private final Set<TableIdentifier> unrecorded;
  private final CommitSubscription subscription;
  private final Thread worker;

  /** The commits of a multi-table commit seen so far. */
  private final List<CommitEvent> release = new ArrayList<>();

  private volatile boolean closed;
  private long cursor;

  /**
   * Starts describing the commits of {@code catalog} after {@code commitSeq} {@code after} (or from
   * now, when negative) to {@code out}.
   *
   * @param defaultActor the actor of commits whose snapshots name none
   * @param unrecorded tables whose commits are not described (the lineage table itself)
   */
  public CommitLineage(
      SkadeCatalog catalog,
      BestEffortLineage out,
      String defaultActor,
      long after,
      Set<TableIdentifier> unrecorded) {
    this.catalog = catalog;
    this.out = out;
    this.defaultActor = defaultActor;
    this.unrecorded = Set.copyOf(unrecorded);
    this.subscription = catalog.subscribeCommits();
    this.cursor = after < 0 ? subscription.startCursor() : after;
    this.worker = SkadeRuntime.thread(this::run, "skade-lineage-commits-" + catalog.name());
    worker.start();
  }

  /** The {@code commit_seq} of the last commit described (or skipped). */
  public synchronized long cursor() {
    return cursor;
  }

  private void run() {
    try {
      catchUp();
      while (!closed) {
        try {
          CommitEvent event = subscription.poll(Duration.ofMillis(200));
          if (event == null || event.commitSeq() <= cursor()) {
            continue;
          }
          if (event.commitSeq() > cursor() + 1) {
            catchUp(); // a gap: read it from the log, which holds this event too
          } else {
            describe(event);
          }
        } catch (CommitFeedLaggedException lagged) {
          catchUp();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (!closed) {
        LOG.error(
            "skade lineage of catalog '{}' stopped after commit_seq {}; later commits are"
                + " not described",
            catalog.name(),
            cursor(),
            e);
      }
    }
  }

  private void catchUp() {
    for (CommitEvent event : catalog.commitsSince(cursor())) {
      if (closed) {
        return;
      }
      describe(event);
    }
  }

  /** Describes {@code event}, then moves the cursor past it (so a caught-up cursor means sent). */
  private void describe(CommitEvent event) {
    try {
      describeCommit(event);
    } finally {
      synchronized (this) {
        cursor = event.commitSeq();
      }
    }
  }

  private void describeCommit(CommitEvent event) {
    TableIdentifier id = catalog.commitTableIdentifier(event.tableKey());
    try {
      if (event.inTransaction()) {
        release(event);
        return;
      }
      if (unrecorded.contains(id)) {
        return;
      }
      switch (event.operation()) {
        case CREATE, REGISTER -> {
          Table table = tableAt(event, id);
          Snapshot current = table.currentSnapshot();
          out.commit(
              new LineageEvent(
                  eventId(event.commitSeq(), null),
                  defaultActor,
                  LineageOperation.CREATE,
                  List.of(),
                  List.of(dataset(id, table, current == null ? null : current.snapshotId())),
                  event.tsMicros(),
                  event.commitSeq()));
        }
        case UPDATE -> {
          if (!event.addedSnapshotIds().isEmpty()) {
            Table table = tableAt(event, id);
            for (long snapshotId : event.addedSnapshotIds()) {
              describeSnapshot(event, id, table, table.snapshot(snapshotId));
            }
          }
        }
        default -> {} // drops, renames: no data written
      }
    } catch (RuntimeException e) {
      LOG.warn(
          "skade lineage: cannot describe commit_seq {} of {}; skipped", event.commitSeq(), id, e);
    }
  }

  private void describeSnapshot(
      CommitEvent event, TableIdentifier id, Table table, Snapshot snapshot) {
    if (snapshot == null) {
      return; // added and expired again in one commit
    }
    LineageOperation operation =
        switch (String.valueOf(snapshot.operation())) {
          case DataOperations.APPEND -> LineageOperation.APPEND;
          case DataOperations.DELETE -> LineageOperation.DELETE;
          default -> LineageOperation.OVERWRITE; // overwrite, replace (a rewrite of files)
        };
    Origin origin = origin(snapshot);
    out.commit(
        new LineageEvent(
            eventId(event.commitSeq(), snapshot.snapshotId()),
            origin.actor(),
            operation,
            origin.inputs(),
            List.of(dataset(id, table, snapshot.snapshotId())),
            event.tsMicros(),
            event.commitSeq()));
  }

  /** Who made a snapshot and from what, as its summary tells. */
  private record Origin(String actor, List<LineageDataset> inputs) {}

  private Origin origin(Snapshot snapshot) {
    Map<String, String> summary = snapshot.summary() == null ? Map.of() : snapshot.summary();
    Optional<FlinkJobs.Job> job =
        Optional.ofNullable(summary.get(FLINK_JOB_ID)).flatMap(FlinkJobs::job);
    String actor = summary.get(ACTOR);
    if (actor == null) {
      actor =
          job.map(FlinkJobs.Job::actor)
              .orElseGet(
                  () ->
                      summary.containsKey(FLINK_JOB_ID)
                          ? "flink job " + summary.get(FLINK_JOB_ID)
                          : defaultActor);
    }
    List<LineageDataset> inputs =
        summary.containsKey(INPUTS)
            ? inputs(summary.get(INPUTS))
            : job.map(FlinkJobs.Job::inputs).orElse(List.of());
    return new Origin(actor, inputs);
  }

  /**
   * Collects the commits of a multi-table commit; once all are in, describes them as one {@link
   * LineageOperation#RELEASE} naming every table at the snapshot it got, with the inputs of them
   * all.
   */
  private void release(CommitEvent event) {
    if (!release.isEmpty() && release.get(0).transactionSeq() != event.transactionSeq()) {
      release.clear(); // the rest of an earlier one was skipped: start over
    }
    release.add(event);
    if (release.size() < event.transactionSize()) {
      return;
    }
    List<CommitEvent> commits = List.copyOf(release);
    release.clear();
    String actor = null;
    Set<LineageDataset> inputs = new LinkedHashSet<>();
    List<LineageDataset> outputs = new ArrayList<>();
    for (CommitEvent commit : commits) {
      TableIdentifier id = catalog.commitTableIdentifier(commit.tableKey());
      if (unrecorded.contains(id)) {
        continue;
      }
      Table table = tableAt(commit, id);
      Long snapshotId = commit.snapshotId().isPresent() ? commit.snapshotId().getAsLong() : null;
      Snapshot snapshot = snapshotId == null ? null : table.snapshot(snapshotId);
      if (snapshot != null) {
        Origin origin = origin(snapshot);
        actor = actor == null || actor.equals(defaultActor) ? origin.actor() : actor;
        inputs.addAll(origin.inputs());
      }
      outputs.add(dataset(id, table, snapshotId));
    }
    if (!outputs.isEmpty()) {
      CommitEvent first = commits.get(0);
      out.commit(
          new LineageEvent(
              eventId(first.transactionSeq(), null),
              actor == null ? defaultActor : actor,
              LineageOperation.RELEASE,
              List.copyOf(inputs),
              outputs,
              first.tsMicros(),
              first.transactionSeq()));
    }
  }

  private Table tableAt(CommitEvent event, TableIdentifier id) {
    return MetadataCache.shared().table(event.metadataLocation(), catalog.io(), id.toString());
  }

  /** The same commit described twice gets the same id. */
  private UUID eventId(long commitSeq, Long snapshotId) {
    return UUID.nameUUIDFromBytes(
        (catalog.catalogPath() + '/' + commitSeq + '/' + snapshotId)
            .getBytes(StandardCharsets.UTF_8));
  }

  private LineageDataset dataset(TableIdentifier id, Table table, Long snapshotId) {
    return dataset(catalog.warehouse(), id, table, snapshotId);
  }

  /** A skade table as a dataset: named in the catalog's warehouse, at {@code snapshotId}. */
  private static LineageDataset dataset(
      String warehouse, TableIdentifier id, Table table, Long snapshotId) {
    List<LineageDataset.Field> fields = new ArrayList<>();
    for (Types.NestedField field : table.schema().columns()) {
      fields.add(new LineageDataset.Field(field.name(), field.type().toString()));
    }
    return new LineageDataset(warehouse, id.toString(), null, table.location(), snapshotId, fields);
  }

  /**
   * Table {@code id} of {@code catalog} as a dataset at no particular snapshot, with its location
   * and columns; only named when it cannot be loaded (dropped since).
   */
  public static LineageDataset table(SkadeCatalog catalog, TableIdentifier id) {
    try {
      return dataset(catalog.warehouse(), id, catalog.loadTable(id), null);
    } catch (RuntimeException e) {
      return new LineageDataset(catalog.warehouse(), id.toString(), null, null, null, List.of());
    }
  }

  private List<LineageDataset> inputs(String encoded) {
    List<LineageDataset> inputs = new ArrayList<>();
    for (String line : encoded.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] parts = line.split("\t", -1);
      if (parts.length == 3) {
        inputs.add(LineageDataset.external(parts[0], parts[1], parts[2]));
      } else {
        inputs.add(table(catalog, TableIdentifier.parse(line)));
      }
    }
    return inputs;
  }

  /** The {@link #INPUTS} value naming {@code inputs}. */
  public static String encodeInputs(List<LineageDataset> inputs) {
    StringBuilder encoded = new StringBuilder();
    for (LineageDataset input : inputs) {
      if (!encoded.isEmpty()) {
        encoded.append('\n');
      }
      if (input.isSkadeTable()) {
        encoded.append(checked(input.name()));
      } else {
        encoded
            .append(checked(input.system()))
            .append('\t')
            .append(checked(input.namespace()))
            .append('\t')
            .append(checked(input.name()));
      }
    }
    return encoded.toString();
  }

  private static String checked(String part) {
    if (part.indexOf('\t') >= 0 || part.indexOf('\n') >= 0) {
      throw new IllegalArgumentException(
          "lineage input '"
              + part
              + "' holds a tab or a line"
              + " break; name datasets without them");
    }
    return part;
  }

  /** Stops describing commits; what was handed to the sink is delivered by its owner. */
  @Override
  public void close() {
    closed = true;
    subscription.close();
    try {
      worker.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
