package io.skade.source.enumerator;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.StartupMode;
import io.skade.source.split.ChangelogSplit;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
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
 * Plans a table's changelog splits as commits happen and hands each to the reader its ordering
 * unit is pinned to.
 *
 * <p>On start it resolves the startup mode (or, on restore, checks that its cursor can still be
 * resumed) and catches up from the commit log. Then the in-process commit feed wakes it: the
 * feed's callback only schedules work onto the coordinator thread, and planning itself runs off
 * it ({@code callAsync}). A safety poll of the log stays on; in a process that does not own the
 * catalog it is the only path. One planning round runs at a time and always starts at the
 * cursor, so a wake-up that finds nothing new costs one log read. A lagged feed needs nothing
 * special: the next round reads the log from the cursor anyway.
 *
 * <p>On each completed checkpoint it stores, under its consumer id, the oldest snapshot a split
 * not yet finished still needs, so the catalog does not expire it.
 */
public final class SkadeSplitEnumerator
    implements SplitEnumerator<ChangelogSplit, SkadeEnumeratorState> {
  private static final Logger LOG = LoggerFactory.getLogger(SkadeSplitEnumerator.class);

  /**
   * What the source asks of its enumerator.
   *
   * @param tablePath the table's namespace levels and then its name (Iceberg's identifier is
   *     not serializable)
   */
  public record Settings(List<String> tablePath, StartupMode startupMode, Long startupValue,
      boolean bounded, Long endSnapshotId, Mode mode, Duration pollInterval, String consumerId)
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
  private final SharedCatalogs.Handle handle;
  private final SkadeCatalog catalog;
  private final Settings settings;
  private final WindowPlanner planner;
  private final String consumerId;
  private final Map<Integer, Deque<ChangelogSplit>> pending = new TreeMap<>();
  private final Map<String, ChangelogSplit> unfinished = new LinkedHashMap<>();
  private final NavigableMap<Long, ConsumerCursor> toPublish = new TreeMap<>();
  private final Set<Integer> toldNoMoreSplits = new HashSet<>();
  private final Counter windowsPlanned;
  private volatile ConsumerCursor cursor;
  /** The splits in {@link #pending}, for the metric (read on another thread). */
  private volatile int pendingCount;
  private long end;
  private boolean planning;
  private boolean replan;
  private CommitSubscription feed;

  public SkadeSplitEnumerator(SplitEnumeratorContext<ChangelogSplit> context,
      SharedCatalogs.Handle handle, Settings settings, SkadeEnumeratorState restored) {
    this.context = context;
    this.handle = handle;
    this.catalog = handle.catalog();
    this.settings = settings;
    this.planner = new WindowPlanner(catalog, settings.table(), settings.mode());
    this.consumerId = settings.consumerId() != null ? settings.consumerId()
        : defaultConsumerId(context, settings.table());
    if (restored != null) {
      this.cursor = restored.cursor();
      this.end = restored.endSnapshotId();
      restored.pending().forEach(this::addPending);
      restored.unfinished().forEach(s -> unfinished.put(s.splitId(), s));
    }
    this.windowsPlanned = context.metricGroup().counter("windowsPlanned");
    context.metricGroup().gauge("commitSeqLag", () -> {
      ConsumerCursor at = cursor;
      return at == null ? 0L : Math.max(0L, catalog.commitSeq() - at.commitSeq());
    });
    context.metricGroup().gauge("pendingSplits", () -> pendingCount);
  }

  /**
   * Checks the startup position and the end of {@code settings} against its table as it is now;
   * the error the enumerator's start would fail with, raised before a job is submitted.
   */
  public static void checkStart(SkadeCatalog catalog, Settings settings) {
    new WindowPlanner(catalog, settings.table(), settings.mode()).check(settings.startupMode(),
        settings.startupValue(), settings.bounded(), settings.endSnapshotId());
  }

  private static String defaultConsumerId(SplitEnumeratorContext<?> context,
      TableIdentifier table) {
    String job = context.metricGroup().getAllVariables().get("<job_name>");
    return "flink/" + (job == null ? "job" : job) + "/" + table;
  }

  @Override
  public void start() {
    if (!catalog.isFollower()) {
      feed = catalog.subscribeCommits();
      feed.onAvailable(() -> context.runInCoordinatorThread(this::onFeed));
    }
    long poll = settings.pollInterval().toMillis();
    context.callAsync(catalog::commitSeq, (seq, error) -> {
      if (error != null) {
        LOG.warn("skade source on {}: polling the commit log failed; retrying", settings.table(),
            error);
      } else if (cursor != null && seq > cursor.commitSeq()) {
        plan();
      }
    }, poll, poll);
    planning = true;
    if (cursor == null) {
      context.callAsync(() -> planner.start(settings.startupMode(), settings.startupValue(),
          settings.bounded(), settings.endSnapshotId(), context.currentParallelism()),
          this::started);
    } else {
      ConsumerCursor restoredAt = cursor;
      context.callAsync(() -> catalog.requireCursorUsable(restoredAt), (table, error) -> {
        planning = false;
        if (error != null) {
          throw new FlinkRuntimeException(error.getMessage(), error);
        }
        plan();
      });
    }
  }

  private void started(WindowPlanner.Start start, Throwable error) {
    planning = false;
    if (error != null) {
      throw new FlinkRuntimeException(error.getMessage(), error);
    }
    cursor = start.cursor();
    end = start.endSnapshotId();
    LOG.info("skade source on {} starts ({}) after snapshot {} at commit_seq {}{}",
        settings.table(), settings.startupMode().value(), cursor.snapshotId(),
        cursor.commitSeq(), end == WindowPlanner.UNBOUNDED ? "" : ", ending at snapshot " + end);
    accept(start.splits());
    plan();
  }

  /** The feed's wake-up, on the coordinator thread: plan when a commit of this table came. */
  private void onFeed() {
    boolean mine = false;
    try {
      for (CommitEvent event = feed.poll(); event != null; event = feed.poll()) {
        mine |= event.tableKey().equals(planner.tableKey());
      }
    } catch (CommitFeedLaggedException e) {
      mine = true; // commits were dropped from the feed: the log has them
    } catch (IllegalStateException closed) {
      return; // the enumerator is closing
    }
    if (mine) {
      plan();
    }
  }

  /** Starts a planning round off the coordinator thread, or asks for one after the current. */
  private void plan() {
    if (planning || cursor == null) {
      replan = true;
      return;
    }
    if (finished()) {
      return;
    }
    planning = true;
    ConsumerCursor from = cursor;
    long until = end;
    int parallelism = context.currentParallelism();
    context.callAsync(() -> planner.next(from, until, parallelism), this::planned);
  }

  private void planned(WindowPlanner.Plan plan, Throwable error) {
    planning = false;
    if (error != null) {
      throw new FlinkRuntimeException(error.getMessage(), error);
    }
    cursor = plan.cursor();
    accept(plan.splits());
    if (plan.more() || replan) {
      replan = false;
      plan();
    }
  }

  private boolean finished() {
    return end != WindowPlanner.UNBOUNDED && cursor != null && cursor.snapshotId() == end;
  }

  private void accept(List<PinnedSplit> splits) {
    windowsPlanned.inc(splits.stream().map(s -> s.split().commitSeq()).distinct().count());
    splits.forEach(this::addPending);
    assign();
  }

  private void addPending(PinnedSplit pinned) {
    pending.computeIfAbsent(pinned.subtask(), s -> new ArrayDeque<>()).add(pinned.split());
  }

  /** Hands each registered reader its pending splits, in order; tells it when none will come. */
  private void assign() {
    int parallelism = context.currentParallelism();
    Map<Integer, List<ChangelogSplit>> assignment = new TreeMap<>();
    for (Map.Entry<Integer, Deque<ChangelogSplit>> entry : pending.entrySet()) {
      int reader = Math.floorMod(entry.getKey(), parallelism); // a rescale moves units
      if (!entry.getValue().isEmpty() && context.registeredReaders().containsKey(reader)) {
        List<ChangelogSplit> splits = assignment.computeIfAbsent(reader, r -> new ArrayList<>());
        splits.addAll(entry.getValue());
        entry.getValue().forEach(s -> unfinished.put(s.splitId(), s));
        entry.getValue().clear();
      }
    }
    if (!assignment.isEmpty()) {
      context.assignSplits(new SplitsAssignment<>(assignment));
    }
    pendingCount = pending.values().stream().mapToInt(Deque::size).sum();
    if (finished() && pendingCount == 0) {
      for (int reader : context.registeredReaders().keySet()) {
        if (toldNoMoreSplits.add(reader)) {
          context.signalNoMoreSplits(reader);
        }
      }
    }
  }

  @Override
  public void handleSplitRequest(int subtaskId, String requesterHostname) {
    // Splits are pushed as commits happen; readers never ask.
  }

  @Override
  public void addSplitsBack(List<ChangelogSplit> splits, int subtaskId) {
    // A failed reader's splits since the last checkpoint: older than anything pending for it.
    Deque<ChangelogSplit> queue = pending.computeIfAbsent(subtaskId, s -> new ArrayDeque<>());
    for (int i = splits.size() - 1; i >= 0; i--) {
      queue.addFirst(splits.get(i));
      unfinished.remove(splits.get(i).splitId());
    }
    toldNoMoreSplits.remove(subtaskId);
    pendingCount += splits.size();
  }

  @Override
  public void addReader(int subtaskId) {
    assign();
  }

  @Override
  public void handleSourceEvent(int subtaskId, SourceEvent event) {
    if (event instanceof SplitsFinishedEvent finished) {
      finished.splitIds().forEach(unfinished::remove);
    }
  }

  @Override
  public SkadeEnumeratorState snapshotState(long checkpointId) {
    List<PinnedSplit> queued = new ArrayList<>();
    pending.forEach((reader, splits) -> splits.forEach(s -> queued.add(new PinnedSplit(s, reader))));
    if (cursor != null) {
      toPublish.put(checkpointId, oldestNeeded(queued));
    }
    return new SkadeEnumeratorState(cursor, end, queued, List.copyOf(unfinished.values()));
  }

  /** The consumer cursor to publish: the oldest snapshot an outstanding split still needs. */
  private ConsumerCursor oldestNeeded(List<PinnedSplit> queued) {
    return Stream.concat(unfinished.values().stream(), queued.stream().map(PinnedSplit::split))
        .min(Comparator.comparingLong(ChangelogSplit::commitSeq))
        .map(oldest -> new ConsumerCursor(cursor.table(), cursor.tableUuid(),
            oldest.oldestSnapshotNeeded(), Math.max(0, oldest.commitSeq() - 1)))
        .orElse(cursor);
  }

  @Override
  public void notifyCheckpointComplete(long checkpointId) {
    Map.Entry<Long, ConsumerCursor> done = toPublish.floorEntry(checkpointId);
    toPublish.headMap(checkpointId, true).clear();
    if (done == null || catalog.isFollower()) {
      return;
    }
    ConsumerCursor published = done.getValue();
    // Advisory (the checkpoint itself is the truth), and it waits for a sync: off this thread.
    context.callAsync(() -> catalog.storeConsumer(consumerId, published), (stored, error) -> {
      if (error != null) {
        LOG.warn("skade source on {}: could not store consumer {}'s cursor; snapshot expiry"
            + " may not wait for it", settings.table(), consumerId, error);
      }
    });
  }

  @Override
  public void close() {
    if (feed != null) {
      feed.close();
    }
    if (finished() && !catalog.isFollower() && unfinished.isEmpty()) {
      catalog.dropConsumer(consumerId); // a bounded read that ended needs nothing kept
    }
    handle.close();
  }
}
