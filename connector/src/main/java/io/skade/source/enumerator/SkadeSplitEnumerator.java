package io.skade.source.enumerator;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.StoredConsumer;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.scan.MetadataCache;
import io.skade.source.CommitProgressEvent;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.SplitsRestoredEvent;
import io.skade.source.SplitsTakenEvent;
import io.skade.source.StageTrace;
import io.skade.source.StageTrace.Stage;
import io.skade.source.StartupMode;
import io.skade.source.split.ChangelogSplit;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plans a table's changelog splits as commits happen and hands each to the reader of its slot of
 * ordering units ({@link OrderingUnits}), in commit order.
 *
 * <p>On start it resolves the startup mode (or, on restore, checks that its cursor can still be
 * resumed) and catches up from the commit log. Then the in-process commit feed wakes it: the feed's
 * callback only schedules work onto the coordinator thread, and planning itself runs off it ({@code
 * callAsync}). A safety poll of the log stays on; in a process that does not own the catalog it is
 * the only path. One planning round runs at a time and always starts at the cursor, so a wake-up
 * that finds nothing new costs one log read. A lagged feed needs nothing special: the next round
 * reads the log from the cursor anyway.
 *
 * <p>A reader hands back the splits of its restored state when it starts ({@link
 * SplitsRestoredEvent}): Flink spreads reader state over the readers as it likes, so the enumerator
 * merges them, in commit order, into the queue of the reader of their slot. Until it has heard from
 * a reader it assigns it nothing, and after a restore at another parallelism it assigns nothing
 * until every reader was heard: a restored split of a slot, wherever Flink restored it, is then
 * read before anything newer of that slot. (At the same parallelism Flink gives each reader its own
 * state back, whose slots are its own.)
 *
 * <p>A reader also names its JVM's metadata cache when it starts. Windows are planned only once
 * every reader was heard: when all share the enumerator's JVM (a MiniCluster), the splits' plans
 * carry no metadata, whose cutting down costs the planner time in proportion to the table's
 * snapshots, per window; readers on TaskManagers get it whole.
 *
 * <p>On each completed checkpoint it stores, under its consumer id, the oldest snapshot a split not
 * yet finished still needs, so the catalog does not expire it.
 */
public final class SkadeSplitEnumerator
    implements SplitEnumerator<ChangelogSplit, SkadeEnumeratorState> {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeSplitEnumerator.class);

  /** The most bytes of splits one assignment event carries. */
  static final long MAX_EVENT_BYTES = 1 << 20;

  /** A split's size in an event, besides its plan: ids, a metadata location, numbers. */
  private static final long SPLIT_BYTES = 512;

  /** Most delivered commits kept for planning; beyond them the log is read. */
  private static final int MAX_DELIVERED = 4 * WindowPlanner.ROUND_COMMITS;

  /**
   * What the source asks of its enumerator.
   *
   * @param tablePath the table's namespace levels and then its name (Iceberg's identifier is not
   *     serializable)
   * @param commitTimeWatermarks whether readers are told how far the log was planned ({@link
   *     CommitProgressEvent}), for watermarks on commit time
   */
  public record Settings(
      List<String> tablePath,
      StartupMode startupMode,
      Long startupValue,
      boolean bounded,
      Long endSnapshotId,
      Mode mode,
      Duration pollInterval,
      String consumerId,
      boolean commitTimeWatermarks)
      implements Serializable {

    public Settings {
      tablePath = List.copyOf(tablePath);
    }

    /** The table as Iceberg names it. */
    public TableIdentifier table() {
      return TableIdentifier.of(tablePath.toArray(String[]::new));
    }
  }

  private final SplitEnumeratorContext<ChangelogSplit> context;
  private final CatalogConnection catalog;
  private final Settings settings;
  private final WindowPlanner planner;
  private final String consumerId;

  /** Per reader, the splits of its slots not yet assigned, in commit order. */
  private final Map<Integer, List<ChangelogSplit>> pending = new TreeMap<>();

  private final Set<String> pendingIds = new HashSet<>();
  private final Map<String, ChangelogSplit> unfinished = new LinkedHashMap<>();
  private final NavigableMap<Long, ConsumerCursor> toPublish = new TreeMap<>();
  private final Set<Integer> toldNoMoreSplits = new HashSet<>();

  /** Readers that handed back their restored splits since they registered. */
  private final Set<Integer> heard = new HashSet<>();

  /**
   * Readers that, when last heard from, shared this JVM's {@link MetadataCache}: when every reader
   * does, the planner leaves the table's metadata out of the splits' plans, which is most of its
   * work per window.
   */
  private final Set<Integer> sharingCache = new HashSet<>();

  /**
   * Whether every reader was heard from once. Until then nothing is planned after the start: what
   * the plans carry depends on where the readers run.
   */
  private boolean readersKnown;

  /**
   * Restored from a checkpoint taken at another parallelism and not yet heard from every reader:
   * nothing is assigned, since any reader may hand back a split of any slot.
   */
  private boolean awaitingReaders;

  private final Counter windowsPlanned;
  private volatile ConsumerCursor cursor;

  /** The splits in {@link #pending}, for the metric (read on another thread). */
  private volatile int pendingCount;

  private long end;
  private boolean planning;
  private boolean replan;
  private CommitSubscription feed;

  /**
   * Through a server, the commits the feed delivered after the cursor, in order and gapless
   * (cleared when it lagged): planned from here, a wake-up costs no round trip to read the log.
   */
  private final ArrayDeque<CommitEvent> delivered = new ArrayDeque<>();

  /** The newest commit the feed delivered. */
  private volatile long feedSeq;

  /**
   * With commit-time watermarks, the stamp of the log's commit at the cursor: every split of a
   * commit up to it is planned. Each reader is told it once it holds all of its splits so far.
   */
  private long progressMicros = ChangelogSplit.UNKNOWN_TIME;

  /** Per reader, the progress it was told last. */
  private final Map<Integer, Long> progressTold = new HashMap<>();

  private volatile boolean closed;

  /** While the source follows the feed of an embedded catalog: its table's commits read ahead. */
  private MetadataCache.Following following;

  public SkadeSplitEnumerator(
      SplitEnumeratorContext<ChangelogSplit> context,
      CatalogConnection catalog,
      Settings settings,
      SkadeEnumeratorState restored) {
    this.context = context;
    this.catalog = catalog;
    this.settings = settings;
    this.planner = new WindowPlanner(catalog, settings.table(), settings.mode());
    this.consumerId =
        settings.consumerId() != null
            ? settings.consumerId()
            : defaultConsumerId(context, settings.table());
    if (restored != null) {
      this.cursor = restored.cursor();
      this.end = restored.endSnapshotId();
      restored.pending().forEach(this::addPending);
      restored.unfinished().forEach(s -> unfinished.put(s.splitId(), s));
      this.awaitingReaders = restored.parallelism() != context.currentParallelism();
    }
    this.windowsPlanned = context.metricGroup().counter("windowsPlanned");
    context
        .metricGroup()
        .gauge(
            "commitSeqLag",
            () -> {
              ConsumerCursor at = cursor;
              // Through a server, the newest commit the feed delivered: a metric never waits on
              // I/O.
              long newest = catalog.isRemote() ? feedSeq : catalog.feed().commitSeq();
              return at == null ? 0L : Math.max(0L, newest - at.commitSeq());
            });
    context.metricGroup().gauge("pendingSplits", () -> pendingCount);
  }

  /**
   * Checks the startup position and the end of {@code settings} against its table as it is now; the
   * error the enumerator's start would fail with, raised before a job is submitted.
   */
  public static void checkStart(CatalogConnection catalog, Settings settings) {
    new WindowPlanner(catalog, settings.table(), settings.mode())
        .check(
            settings.startupMode(),
            settings.startupValue(),
            settings.bounded(),
            settings.endSnapshotId());
  }

  private static String defaultConsumerId(
      SplitEnumeratorContext<?> context, TableIdentifier table) {
    String job = context.metricGroup().getAllVariables().get("<job_name>");
    return "flink/" + (job == null ? "job" : job) + "/" + table;
  }

  @Override
  public void start() {
    if (catalog.pushesCommits() && !catalog.isRemote()) {
      listen(catalog.feed().subscribeCommits());
    } else if (catalog.pushesCommits()) {
      // Subscribing to a server asks it for its cursor: off the coordinator thread, and on the
      // worker before the start below, which reads the table after the subscription began.
      context.callAsync(
          () -> whileOpen(() -> catalog.feed().subscribeCommits()),
          (subscription, error) -> {
            if (error != null) {
              LOG.warn(
                  "skade source on {}: could not follow the server's commit feed; polling"
                      + " every {} instead",
                  settings.table(),
                  settings.pollInterval(),
                  error);
            } else if (closed) {
              subscription.close();
            } else {
              listen(subscription);
              onFeed(); // what it buffered before it was followed
            }
          });
    }
    long poll = settings.pollInterval().toMillis();
    context.callAsync(
        catalog.feed()::commitSeq,
        (seq, error) -> {
          if (error != null) {
            LOG.warn(
                "skade source on {}: polling the commit log failed; retrying",
                settings.table(),
                error);
          } else if (cursor != null && seq > cursor.commitSeq()) {
            plan();
          }
        },
        poll,
        poll);
    planning = true;
    if (cursor == null) {
      context.callAsync(
          () ->
              whileOpen(
                  () ->
                      settings.startupMode() == StartupMode.FROM_CONSUMER
                          ? planner.resume(
                              storedConsumer(), settings.bounded(), settings.endSnapshotId())
                          : planner.start(
                              settings.startupMode(),
                              settings.startupValue(),
                              settings.bounded(),
                              settings.endSnapshotId())),
          this::started);
    } else {
      ConsumerCursor restoredAt = cursor;
      context.callAsync(
          () -> whileOpen(() -> catalog.requireCursorUsable(restoredAt)),
          (table, error) -> {
            planning = false;
            if (error != null) {
              throw new FlinkRuntimeException(error.getMessage(), error);
            }
            plan();
          });
    }
  }

  /** The cursor this source's consumer stored, which startup mode from-consumer resumes. */
  private StoredConsumer storedConsumer() {
    return catalog
        .consumers()
        .consumer(consumerId)
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    "skade source on table "
                        + settings.table()
                        + ": startup mode from-consumer resumes consumer '"
                        + consumerId
                        + "', but the catalog stores no consumer of that id; the table's"
                        + " consumers: "
                        + catalog.consumers().consumers(settings.table()).stream()
                            .map(StoredConsumer::consumerId)
                            .toList()
                        + ". Set scan.consumer-id to one of them, or start with another mode"));
  }

  private void started(WindowPlanner.Start start, Throwable error) {
    planning = false;
    if (error != null) {
      throw new FlinkRuntimeException(error.getMessage(), error);
    }
    cursor = start.cursor();
    end = start.endSnapshotId();
    LOG.info(
        "skade source on {} starts ({}) after snapshot {} at commit_seq {}{}",
        settings.table(),
        settings.startupMode().value(),
        cursor.snapshotId(),
        cursor.commitSeq(),
        end == WindowPlanner.UNBOUNDED ? "" : ", ending at snapshot " + end);
    accept(start.splits());
    plan();
  }

  /** Follows {@code subscription}, on the coordinator thread. */
  private void listen(CommitSubscription subscription) {
    feed = subscription;
    if (!catalog.isRemote()) { // commits of this JVM: have their manifests read while they sync
      following = MetadataCache.shared().follow(planner.tableKey());
    }
    feed.onAvailable(() -> context.runInCoordinatorThread(this::onFeed));
  }

  /** The feed's wake-up, on the coordinator thread: plan when a commit of this table came. */
  private void onFeed() {
    boolean mine = false;
    try {
      for (CommitEvent event = feed.poll(); event != null; event = feed.poll()) {
        if (event.tableKey().equals(planner.tableKey())) {
          mine = true;
          StageTrace.mark(Stage.FEED_DELIVERED, event.commitSeq());
        }
        feedSeq = event.commitSeq();
        if (catalog.isRemote()) {
          if (delivered.size() == MAX_DELIVERED) {
            delivered.clear(); // so many unplanned: the log has them
          }
          delivered.add(event);
        }
      }
    } catch (CommitFeedLaggedException e) {
      mine = true; // commits were dropped from the feed: the log has them
      delivered.clear();
    } catch (IllegalStateException closed) {
      return; // the enumerator is closing
    }
    if (mine) {
      plan();
    }
  }

  /** Starts a planning round off the coordinator thread, or asks for one after the current. */
  private void plan() {
    if (planning || cursor == null || !readersKnown) {
      replan = true;
      return;
    }
    if (finished()) {
      return;
    }
    planning = true;
    ConsumerCursor from = cursor;
    long until = end;
    List<CommitEvent> page = deliveredAfter(from);
    boolean withMetadata = sharingCache.size() < context.currentParallelism();
    // Readers' watermarks wait for a first stamp of the log; a round that read none looks it up.
    boolean needsStamp =
        settings.commitTimeWatermarks() && progressMicros == ChangelogSplit.UNKNOWN_TIME;
    context.callAsync(
        () ->
            whileOpen(
                () -> {
                  WindowPlanner.Plan plan =
                      page == null
                          ? planner.next(from, until, withMetadata)
                          : planner.next(from, until, page, withMetadata);
                  mark(Stage.WINDOW_PLANNED, plan.splits());
                  return needsStamp ? planner.stamped(plan) : plan;
                }),
        this::planned);
  }

  /**
   * The delivered commits right after {@code from} (at most a round's), or null when the feed did
   * not deliver them all (a restored cursor older than the subscription, a lag): then the log is
   * read.
   */
  private List<CommitEvent> deliveredAfter(ConsumerCursor from) {
    while (!delivered.isEmpty() && delivered.peekFirst().commitSeq() <= from.commitSeq()) {
      delivered.pollFirst();
    }
    if (delivered.isEmpty() || delivered.peekFirst().commitSeq() != from.commitSeq() + 1) {
      return null;
    }
    return delivered.stream().limit(WindowPlanner.ROUND_COMMITS).toList();
  }

  /**
   * Runs {@code call} (on the enumerator's worker, never the coordinator thread) unless the
   * enumerator closed. Through a server, each of its calls rides the connection's retry policy
   * through the server's restarts by itself, so that they never fail the job while the server comes
   * back.
   */
  private <T> T whileOpen(Callable<T> call) throws Exception {
    if (closed) {
      throw new IllegalStateException("skade source on " + settings.table() + " closed");
    }
    return call.call();
  }

  private void planned(WindowPlanner.Plan plan, Throwable error) {
    planning = false;
    if (error != null) {
      throw new FlinkRuntimeException(error.getMessage(), error);
    }
    cursor = plan.cursor();
    progressMicros = Math.max(progressMicros, plan.logMicros());
    accept(plan.splits());
    if (plan.more() || replan || deliveredAfter(cursor) != null) {
      replan = false;
      plan();
    }
  }

  private boolean finished() {
    return end != WindowPlanner.UNBOUNDED && cursor != null && cursor.snapshotId() == end;
  }

  private void accept(List<ChangelogSplit> splits) {
    windowsPlanned.inc(splits.stream().map(ChangelogSplit::commitSeq).distinct().count());
    splits.forEach(this::addPending);
    assign();
  }

  /**
   * Queues {@code split} for the reader of its slot, after the older splits there; once only: a
   * split handed back and assigned again is, after a failure before the next checkpoint, both added
   * back by Flink and in the restored reader state again.
   */
  private void addPending(ChangelogSplit split) {
    if (!pendingIds.add(split.splitId())) {
      return;
    }
    List<ChangelogSplit> queue =
        pending.computeIfAbsent(
            OrderingUnits.readerOf(split, context.currentParallelism()), r -> new ArrayList<>());
    int at = queue.size();
    while (at > 0 && ChangelogSplit.COMMIT_ORDER.compare(queue.get(at - 1), split) > 0) {
      at--; // a split handed back is older than what was planned since
    }
    queue.add(at, split);
    pendingCount = pendingIds.size();
  }

  /**
   * Hands each reader heard from its pending splits, in order, unless readers are still to hand
   * back restored splits; tells a reader when none will come.
   */
  private void assign() {
    if (awaitingReaders) {
      return;
    }
    Map<Integer, List<ChangelogSplit>> assignment = new TreeMap<>();
    for (Map.Entry<Integer, List<ChangelogSplit>> entry : pending.entrySet()) {
      int reader = entry.getKey();
      if (!entry.getValue().isEmpty()
          && heard.contains(reader)
          && context.registeredReaders().containsKey(reader)) {
        assignment.put(reader, new ArrayList<>(entry.getValue()));
        entry
            .getValue()
            .forEach(
                s -> {
                  unfinished.put(s.splitId(), s);
                  pendingIds.remove(s.splitId());
                });
        entry.getValue().clear();
      }
    }
    pendingCount = pendingIds.size();
    for (Map.Entry<Integer, List<ChangelogSplit>> entry : assignment.entrySet()) {
      mark(Stage.SPLIT_ASSIGNED, entry.getValue());
      for (List<ChangelogSplit> event : events(entry.getValue(), MAX_EVENT_BYTES)) {
        context.assignSplits(new SplitsAssignment<>(Map.of(entry.getKey(), event)));
      }
    }
    if (finished() && pendingCount == 0) {
      for (int reader : context.registeredReaders().keySet()) {
        if (heard.contains(reader) && toldNoMoreSplits.add(reader)) {
          context.signalNoMoreSplits(reader);
        }
      }
    }
    tellProgress();
  }

  /**
   * With commit-time watermarks, tells each reader heard from that holds all of its splits (none
   * pending here) the stamp up to which the log was planned; after its assignments, on the same
   * ordered channel.
   */
  private void tellProgress() {
    if (!settings.commitTimeWatermarks() || progressMicros == ChangelogSplit.UNKNOWN_TIME) {
      return;
    }
    for (int reader : context.registeredReaders().keySet()) {
      if (heard.contains(reader)
          && pending.getOrDefault(reader, List.of()).isEmpty()
          && progressTold.getOrDefault(reader, ChangelogSplit.UNKNOWN_TIME) < progressMicros) {
        progressTold.put(reader, progressMicros);
        context.sendEventToSourceReader(reader, new CommitProgressEvent(progressMicros));
      }
    }
  }

  /**
   * {@code splits}, in order, cut into runs whose planned windows come to at most {@code maxBytes}
   * (a split larger than that alone): each run is one event to the reader, which Flink sends over
   * its RPC system, whose messages are bounded (10 MB by default). A backlog of planned windows
   * would otherwise go in one event.
   */
  static List<List<ChangelogSplit>> events(List<ChangelogSplit> splits, long maxBytes) {
    List<List<ChangelogSplit>> events = new ArrayList<>();
    List<ChangelogSplit> event = new ArrayList<>();
    long bytes = 0;
    for (ChangelogSplit split : splits) {
      long size = SPLIT_BYTES + (split.plan() == null ? 0 : split.plan().length);
      if (!event.isEmpty() && bytes + size > maxBytes) {
        events.add(event);
        event = new ArrayList<>();
        bytes = 0;
      }
      event.add(split);
      bytes += size;
    }
    if (!event.isEmpty()) {
      events.add(event);
    }
    return events;
  }

  private static void mark(Stage stage, List<ChangelogSplit> splits) {
    if (StageTrace.enabled()) {
      splits.forEach(split -> StageTrace.mark(stage, split.commitSeq()));
    }
  }

  @Override
  public void handleSplitRequest(int subtaskId, String requesterHostname) {
    // Splits are pushed as commits happen; readers never ask.
  }

  /**
   * A failed reader's splits assigned since its last checkpoint. Its next attempt hands back the
   * older ones it restores; until then it is assigned nothing.
   */
  @Override
  public void addSplitsBack(List<ChangelogSplit> splits, int subtaskId) {
    heard.remove(subtaskId);
    toldNoMoreSplits.remove(subtaskId);
    progressTold.remove(subtaskId);
    for (ChangelogSplit split : splits) {
      unfinished.remove(split.splitId());
      addPending(split);
    }
  }

  /** A reader (or a new attempt of one) registered: it is assigned nothing until heard from. */
  @Override
  public void addReader(int subtaskId) {
    heard.remove(subtaskId);
    toldNoMoreSplits.remove(subtaskId);
    progressTold.remove(subtaskId);
  }

  @Override
  public void handleSourceEvent(int subtaskId, SourceEvent event) {
    if (event instanceof SplitsFinishedEvent finished) {
      finished.splitIds().forEach(unfinished::remove);
    } else if (event instanceof SplitsRestoredEvent restored) {
      if (MetadataCache.shared().id().equals(restored.metadataCacheId())) {
        sharingCache.add(subtaskId);
      } else {
        sharingCache.remove(subtaskId);
      }
      takeBack(subtaskId, restored.splits());
    }
  }

  /**
   * The splits a reader restored, queued for the readers of their slots; the reader is told in the
   * same step, so a checkpoint holds them on one side only.
   */
  private void takeBack(int subtaskId, List<ChangelogSplit> splits) {
    for (ChangelogSplit split : splits) {
      unfinished.remove(split.splitId());
      addPending(split);
    }
    if (!splits.isEmpty()) {
      context.sendEventToSourceReader(
          subtaskId, new SplitsTakenEvent(splits.stream().map(ChangelogSplit::splitId).toList()));
      LOG.info(
          "skade source on {}: reader {} handed back {} restored split(s)",
          settings.table(),
          subtaskId,
          splits.size());
    }
    heard.add(subtaskId);
    if (awaitingReaders && heard.size() == context.currentParallelism()) {
      awaitingReaders = false;
    }
    assign();
    if (!readersKnown && heard.size() == context.currentParallelism()) {
      readersKnown = true;
      plan();
    }
  }

  @Override
  public SkadeEnumeratorState snapshotState(long checkpointId) {
    List<ChangelogSplit> queued = new ArrayList<>(pendingCount);
    pending.values().forEach(queued::addAll);
    queued.sort(ChangelogSplit.COMMIT_ORDER);
    if (cursor != null) {
      toPublish.put(checkpointId, oldestNeeded(queued));
    }
    // Checkpointed without their plans, which only spare a reader reading metadata: a backlog of
    // planned windows would make every checkpoint as large.
    return new SkadeEnumeratorState(
        cursor,
        end,
        queued.stream().map(split -> split.withPlan(null)).toList(),
        unfinished.values().stream().map(split -> split.withPlan(null)).toList(),
        context.currentParallelism());
  }

  /** The consumer cursor to publish: the oldest snapshot an outstanding split still needs. */
  private ConsumerCursor oldestNeeded(List<ChangelogSplit> queued) {
    return Stream.concat(unfinished.values().stream(), queued.stream())
        .min(Comparator.comparingLong(ChangelogSplit::commitSeq))
        .map(
            oldest ->
                new ConsumerCursor(
                    cursor.table(),
                    cursor.tableUuid(),
                    oldest.oldestSnapshotNeeded(),
                    Math.max(0, oldest.commitSeq() - 1)))
        .orElse(cursor);
  }

  @Override
  public void notifyCheckpointComplete(long checkpointId) {
    Map.Entry<Long, ConsumerCursor> done = toPublish.floorEntry(checkpointId);
    toPublish.headMap(checkpointId, true).clear();
    if (done == null || !catalog.storesConsumers()) {
      return;
    }
    ConsumerCursor published = done.getValue();
    // Advisory (the checkpoint itself is the truth), and it waits for a sync: off this thread.
    context.callAsync(
        () -> catalog.consumers().storeConsumer(consumerId, published),
        (stored, error) -> {
          if (error != null) {
            LOG.warn(
                "skade source on {}: could not store consumer {}'s cursor; snapshot expiry"
                    + " may not wait for it",
                settings.table(),
                consumerId,
                error);
          }
        });
  }

  @Override
  public void close() {
    closed = true;
    if (feed != null) {
      feed.close();
    }
    if (following != null) {
      following.close();
    }
    if (finished() && catalog.storesConsumers() && unfinished.isEmpty()) {
      if (settings.startupMode() == StartupMode.FROM_CONSUMER) {
        // a run of a consumer that goes on: the next one resumes where this one ended
        catalog.consumers().storeConsumer(consumerId, cursor);
      } else {
        // a bounded read that ended needs nothing kept
        catalog.consumers().dropConsumer(consumerId);
      }
    }
    catalog.close();
  }
}
