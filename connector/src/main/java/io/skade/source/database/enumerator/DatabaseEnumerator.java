package io.skade.source.database.enumerator;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.DatabaseChangelog;
import io.skade.changelog.DatabaseChangelog.Page;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.changelog.TableSelection;
import io.skade.source.SplitsFinishedEvent;
import io.skade.source.database.CheckpointBoundaryEvent;
import io.skade.source.database.Consistency;
import io.skade.source.database.split.CommitSplit;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the catalog's commit log for the selected tables and hands each commit's split to the
 * reader that owns its table, in commit order; a table is owned by one reader (by a hash of its
 * key), so the changes of a key leave the source in order.
 *
 * <p>Assignments go out one atomic commit at a time, never part of one. In {@link
 * Consistency#COMMIT} the next commit goes out only when every split of the ones before it was
 * reported finished; in {@link Consistency#TABLE} readers are given up to {@link #MAX_OUTSTANDING}
 * splits ahead.
 *
 * <p>Checkpoints fall on commit boundaries. When Flink checkpoints the enumerator it takes as
 * boundary the last commit whose splits all went out (nothing after it did), stores it, and tells
 * every reader; a reader lets the checkpoint's barrier out once it emitted all its splits up to the
 * boundary, and starts none after it before. So the readers hold no state, a restore — at any
 * parallelism — reads the log again after the boundary, and a checkpoint never holds part of a
 * commit. Splits a reader that failed alone gives back are the exception: given out again first,
 * and listed in the checkpoints taken before they are.
 */
public final class DatabaseEnumerator
    implements SplitEnumerator<CommitSplit, DatabaseEnumeratorState> {
  private static final Logger LOG = LoggerFactory.getLogger(DatabaseEnumerator.class);

  /** Commits read from the log at a time. */
  static final int PAGE = 1000;

  /** The most splits read ahead of the readers: beyond them the log waits. */
  static final int MAX_QUEUED = 10 * PAGE;

  /** In {@link Consistency#TABLE}, the most splits given out and not yet finished. */
  static final int MAX_OUTSTANDING = PAGE;

  /**
   * What the source asks of its enumerator.
   *
   * @param startAfter the {@code commit_seq} after which the changes start; null: after the log's
   *     last commit when the job starts
   */
  public record Settings(
      TableSelection tables, Consistency consistency, Long startAfter, Duration pollInterval)
      implements Serializable {}

  private final SplitEnumeratorContext<CommitSplit> context;
  private final CatalogConnection catalog;
  private final Settings settings;
  private final DatabaseChangelog changelog;

  /** Splits read from the log and not given out, by {@code commit_seq} (one table per commit). */
  private final NavigableMap<Long, CommitSplit> queue = new TreeMap<>();

  /** The {@code commit_seq}s of queued splits a failed reader gave back. */
  private final Set<Long> returned = new HashSet<>();

  /** Splits given out and not reported finished, by id. */
  private final Map<String, CommitSplit> unfinished = new HashMap<>();

  /** The boundaries of checkpoints neither completed nor aborted: checkpoint → commit. */
  private final NavigableMap<Long, Long> openBoundaries = new TreeMap<>();

  /** The log read up to here: every split of a commit up to it is queued or given out. */
  private long read;

  private boolean reading;

  /** Whether the log is read again once the read under way ends. */
  private boolean readAgain;

  private CommitSubscription feed;
  private volatile boolean closed;

  public DatabaseEnumerator(
      SplitEnumeratorContext<CommitSplit> context,
      CatalogConnection catalog,
      Settings settings,
      DatabaseEnumeratorState restored) {
    this.context = context;
    this.catalog = catalog;
    this.settings = settings;
    this.changelog = new DatabaseChangelog(catalog, settings.tables(), ChangelogOptions.defaults());
    if (restored != null) {
      for (CommitSplit split : restored.givenBack()) {
        queue.put(split.commitSeq(), split);
        returned.add(split.commitSeq());
      }
    }
    this.read =
        restored != null
            ? restored.commitSeq()
            : settings.startAfter() != null ? settings.startAfter() : catalog.feed().commitSeq();
  }

  @Override
  public void start() {
    if (catalog.pushesCommits() && !catalog.isRemote()) {
      listen(catalog.feed().subscribeCommits());
    } else if (catalog.pushesCommits()) {
      context.callAsync(
          () -> catalog.feed().subscribeCommits(),
          (subscription, error) -> {
            if (error != null) {
              LOG.warn(
                  "skade database source: could not follow the server's commit feed; polling"
                      + " every {} instead",
                  settings.pollInterval(),
                  error);
            } else if (closed) {
              subscription.close();
            } else {
              listen(subscription);
            }
          });
    }
    long poll = settings.pollInterval().toMillis();
    context.callAsync(
        catalog.feed()::commitSeq,
        (seq, error) -> {
          if (error != null) {
            LOG.warn("skade database source: polling the commit log failed; retrying", error);
          } else if (seq > read) {
            readLog();
          }
        },
        poll,
        poll);
    readLog();
  }

  private void listen(CommitSubscription subscription) {
    feed = subscription;
    feed.onAvailable(() -> context.runInCoordinatorThread(this::onFeed));
  }

  /** A commit was pushed: the log holds it, so it is read from there. */
  private void onFeed() {
    try {
      while (feed.poll() != null) {
        // drained: the read below starts at the log's cursor
      }
    } catch (CommitFeedLaggedException lagged) {
      // the log has the commits the feed dropped
    }
    readLog();
  }

  /**
   * Reads the next page of the log off the coordinator thread, one read at a time; a call while one
   * runs has it read again after, so that a commit pushed meanwhile is not left to the next poll.
   */
  private void readLog() {
    if (reading) {
      readAgain = true;
      return;
    }
    if (closed || queue.size() >= MAX_QUEUED) {
      return;
    }
    reading = true;
    readAgain = false;
    long after = read;
    context.callAsync(
        () -> changelog.commitsAfter(after, PAGE),
        (page, error) -> {
          reading = false;
          if (error != null) {
            LOG.warn(
                "skade database source: reading the commit log after {} failed; retrying at the"
                    + " next poll",
                after,
                error);
            return;
          }
          accept(page);
        });
  }

  private void accept(Page page) {
    for (TableCommit commit : page.commits()) {
      queue.put(commit.commit().commitSeq(), CommitSplit.of(commit));
    }
    // fewer than a page read: the log had no more (it is gapless)
    boolean more = page.lastCommitSeq() - read >= PAGE;
    read = page.lastCommitSeq();
    assign();
    if (more || readAgain) {
      readLog();
    }
  }

  /** Gives out whole atomic commits, in order, as far as the consistency allows. */
  private void assign() {
    Map<Integer, List<CommitSplit>> batch = new HashMap<>();
    while (!queue.isEmpty()
        && (settings.consistency() == Consistency.COMMIT
            ? unfinished.isEmpty() && batch.isEmpty()
            : unfinished.size() < MAX_OUTSTANDING)) {
      List<CommitSplit> commit = nextCommit();
      if (!commit.stream()
          .allMatch(split -> context.registeredReaders().containsKey(owner(split)))) {
        break; // its reader starts later: nothing after it goes out before it
      }
      for (CommitSplit split : commit) {
        queue.remove(split.commitSeq());
        returned.remove(split.commitSeq());
        unfinished.put(split.splitId(), split);
        batch.computeIfAbsent(owner(split), reader -> new ArrayList<>()).add(split);
      }
    }
    if (!batch.isEmpty()) {
      context.assignSplits(new SplitsAssignment<>(batch));
    }
  }

  /** The splits of the atomic commit at the head of the queue. */
  private List<CommitSplit> nextCommit() {
    long start = queue.firstEntry().getValue().transactionStart();
    List<CommitSplit> splits = new ArrayList<>();
    for (CommitSplit split : queue.values()) {
      if (split.transactionStart() != start) {
        break;
      }
      splits.add(split);
    }
    return splits;
  }

  /** The reader that reads every split of the split's table. */
  private int owner(CommitSplit split) {
    return Math.floorMod(split.commit().tableKey().hashCode(), context.currentParallelism());
  }

  @Override
  public void handleSourceEvent(int subtaskId, SourceEvent event) {
    if (event instanceof SplitsFinishedEvent finished) {
      finished.splitIds().forEach(unfinished::remove);
      assign();
      readLog();
    }
  }

  /**
   * A reader failed alone (a partial failover: its region restored the last checkpoint while the
   * other readers went on) and the splits it was given since come back: they are given to it again,
   * first. They are older than the commits other readers may have read since, so they do not move
   * the next checkpoint's boundary back: the checkpoint lists those not given out again yet.
   */
  @Override
  public void addSplitsBack(List<CommitSplit> splits, int subtaskId) {
    for (CommitSplit split : splits) {
      unfinished.remove(split.splitId());
      queue.put(split.commitSeq(), split);
      returned.add(split.commitSeq());
    }
  }

  @Override
  public void addReader(int subtaskId) {
    openBoundaries.forEach(
        (checkpoint, commitSeq) ->
            context.sendEventToSourceReader(
                subtaskId, new CheckpointBoundaryEvent(checkpoint, commitSeq)));
    assign();
  }

  @Override
  public void handleSplitRequest(int subtaskId, String requesterHostname) {
    // splits are pushed as commits come
  }

  @Override
  public DatabaseEnumeratorState snapshotState(long checkpointId) {
    // Every split up to the boundary is given out, or given back and listed in the checkpoint.
    long boundary = read;
    List<CommitSplit> givenBack = new ArrayList<>();
    for (CommitSplit split : queue.values()) {
      if (!returned.contains(split.commitSeq())) {
        boundary = split.commitSeq() - 1;
        break;
      }
      givenBack.add(split);
    }
    openBoundaries.put(checkpointId, boundary);
    for (int reader : context.registeredReaders().keySet()) {
      context.sendEventToSourceReader(reader, new CheckpointBoundaryEvent(checkpointId, boundary));
    }
    return new DatabaseEnumeratorState(boundary, givenBack);
  }

  @Override
  public void notifyCheckpointComplete(long checkpointId) {
    openBoundaries.headMap(checkpointId, true).clear();
  }

  @Override
  public void notifyCheckpointAborted(long checkpointId) {
    openBoundaries.remove(checkpointId);
  }

  @Override
  public void close() {
    closed = true;
    try {
      if (feed != null) {
        feed.close();
      }
    } finally {
      catalog.close();
    }
  }
}
