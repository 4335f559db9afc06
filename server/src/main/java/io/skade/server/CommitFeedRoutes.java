package io.skade.server;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.TableKeys;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.rest.RESTUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit feed over HTTP: a long-poll on the durable commit log ({@link SkadeProtocol#COMMITS}).
 * A request for commits after {@code SEQ} is answered at once when the log has some; otherwise it
 * is parked (no thread held) until a commit lands or its wait ends. Every answer is read from the
 * log itself, so it is gapless and oldest first whatever a client missed: the server keeps no
 * buffer per client, only the parked requests.
 *
 * <p>One subscription to the catalog's in-process feed wakes the parked requests; its events are
 * only a signal, so a lagged subscription loses nothing.
 */
final class CommitFeedRoutes implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CommitFeedRoutes.class);
  private static final int DEFAULT_LIMIT = 1000;

  /** A parked request: commits after {@code after}, at most {@code limit}. */
  private static final class Waiter {
    final Exchange exchange;
    final long after;
    final int limit;
    volatile ScheduledFuture<?> timeout;

    Waiter(Exchange exchange, long after, int limit) {
      this.exchange = exchange;
      this.after = after;
      this.limit = limit;
    }
  }

  private final SkadeCatalog catalog;
  private final ServerMetrics metrics;
  private final Set<Waiter> waiters = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService timers;

  /** Wakes waiters, off the committer's thread (which a subscription callback must not block). */
  private final ExecutorService waker;

  private final CommitSubscription subscription;
  private volatile boolean closing;

  CommitFeedRoutes(SkadeCatalog catalog, ServerMetrics metrics) {
    this.catalog = catalog;
    this.metrics = metrics;
    this.timers = Executors.newSingleThreadScheduledExecutor(daemon("skade-feed-timeouts"));
    this.waker = Executors.newSingleThreadExecutor(daemon("skade-feed-waker"));
    this.subscription = catalog.subscribeCommits();
    subscription.onAvailable(() -> waker.execute(this::drain));
    metrics.feedWaiters(waiters::size);
  }

  /** Daemon threads named {@code name}, for the server's background work. */
  static java.util.concurrent.ThreadFactory daemon(String name) {
    return runnable -> {
      Thread thread = new Thread(runnable, name);
      thread.setDaemon(true);
      return thread;
    };
  }

  /** Handles the feed's routes; false for any other path. */
  boolean handle(Exchange exchange) {
    if (exchange.pathIs("skade", "v1", "commits")) {
      exchange.route("GET " + SkadeProtocol.COMMITS);
      requireGet(exchange);
      exchange.require(Caller.Role.READ);
      commits(exchange);
      return true;
    }
    if (exchange.pathIs("skade", "v1", "commits", "of")) {
      exchange.route("GET " + SkadeProtocol.COMMIT_OF);
      requireGet(exchange);
      exchange.require(Caller.Role.READ);
      commitOf(exchange);
      return true;
    }
    return false;
  }

  static void requireGet(Exchange exchange) {
    if (!exchange.method().equals("GET")) {
      throw new UnsupportedOperationException(
          exchange.method() + " is not served on " + exchange.route().substring(4) + "; use GET");
    }
  }

  private void commits(Exchange exchange) {
    long after = parameter(exchange, "after", 0, 0, Long.MAX_VALUE);
    // limit=0 asks for the cursor alone.
    int limit = (int) parameter(exchange, "limit", DEFAULT_LIMIT, 0, SkadeProtocol.MAX_LIMIT);
    long waitMs = parameter(exchange, "wait-ms", 0, 0, SkadeProtocol.MAX_WAIT_MS);
    long current = catalog.commitSeq();
    if (after > current) {
      throw new IllegalArgumentException(
          "after="
              + after
              + " is beyond the catalog's newest"
              + " commit_seq "
              + current
              + ": the cursor does not come from this catalog (or its"
              + " log was replaced); start from a commit_seq at most "
              + current);
    }
    if (after < current || waitMs == 0 || limit == 0 || closing) {
      answer(exchange, after, limit);
      return;
    }
    Waiter waiter = new Waiter(exchange, after, limit);
    waiters.add(waiter); // before its timer, so that the timer always finds it
    waiter.timeout =
        timers.schedule(
            () -> {
              if (waiters.remove(waiter)) {
                answer(exchange, after, limit);
              }
            },
            waitMs,
            TimeUnit.MILLISECONDS);
    // A commit that landed between the read above and the registration woke nobody.
    if (catalog.commitSeq() > after || closing) {
      wake(waiter);
    }
  }

  private void answer(Exchange exchange, long after, int limit) {
    try {
      List<CommitEvent> commits = limit == 0 ? List.of() : catalog.commitsSince(after, limit);
      long last = catalog.commitSeq(); // after the page: never behind its newest commit
      long covered = commits.isEmpty() ? after : commits.get(commits.size() - 1).commitSeq();
      Caller caller = exchange.caller();
      if (!caller.namespaces().isEmpty()) { // the commits of other namespaces are not its to see
        commits =
            commits.stream()
                .filter(event -> caller.reaches(TableKeys.identifier(event.tableKey()).namespace()))
                .toList();
      }
      exchange.json(
          200, SkadeProtocol.commitPage(new CommitPage(commits, last, updates(commits), covered)));
    } catch (RuntimeException e) {
      RestErrors.answer(exchange, e);
    }
  }

  /**
   * Per commit among {@code commits} that this server made lately, the updates that made its
   * metadata file from the previous one: a follower builds the table from them with no request of
   * its own.
   */
  private static Map<Long, List<MetadataUpdate>> updates(List<CommitEvent> commits) {
    Map<Long, List<MetadataUpdate>> updates = new HashMap<>();
    for (CommitEvent event : commits) {
      CommittedMetadata.Updates made = CommittedMetadata.updates(event.metadataLocation());
      if (made != null && made.base().equals(event.previousMetadataLocation())) {
        updates.put(event.commitSeq(), made.updates());
      }
    }
    return updates;
  }

  private void wake(Waiter waiter) {
    if (waiters.remove(waiter)) {
      ScheduledFuture<?> timeout = waiter.timeout;
      if (timeout != null) {
        timeout.cancel(false);
      }
      answer(waiter.exchange, waiter.after, waiter.limit);
    }
  }

  /** Takes what the subscription delivered, then answers every waiter the log has commits for. */
  private void drain() {
    try {
      while (subscription.poll() != null) {
        metrics.commit();
      }
    } catch (CommitFeedLaggedException e) {
      LOG.debug("skade server: the feed's wake-up subscription lagged; waking every waiter");
    } catch (IllegalStateException e) {
      return; // the subscription closed with the catalog
    }
    long current = catalog.commitSeq();
    for (Waiter waiter : waiters) {
      if (waiter.after < current) {
        wake(waiter);
      }
    }
  }

  private void commitOf(Exchange exchange) {
    String namespace = exchange.query("namespace");
    String table = exchange.query("table");
    if (namespace == null || table == null) {
      throw new IllegalArgumentException(
          "query parameters 'namespace' and 'table' are required," + " with 'snapshot-id'");
    }
    long snapshotId =
        parameter(exchange, "snapshot-id", Long.MIN_VALUE, Long.MIN_VALUE, Long.MAX_VALUE);
    if (snapshotId == Long.MIN_VALUE) {
      throw new IllegalArgumentException("query parameter 'snapshot-id' is required");
    }
    TableIdentifier identifier =
        TableIdentifier.of(RESTUtil.namespaceFromQueryParam(namespace), table);
    exchange.require(Caller.Role.READ, identifier.namespace());
    CommitEvent commit =
        catalog
            .commitOf(identifier, snapshotId)
            .orElseThrow(
                () ->
                    new NotFoundException(
                        "the catalog recorded no commit of snapshot %s of %s",
                        snapshotId, identifier));
    exchange.json(200, SkadeProtocol.commit(commit));
  }

  /** A numeric query parameter in {@code [min, max]}, or {@code absent} when not given. */
  static long parameter(Exchange exchange, String name, long absent, long min, long max) {
    String value = exchange.query(name);
    if (value == null) {
      return absent;
    }
    try {
      long parsed = Long.parseLong(value.trim());
      if (parsed >= min && parsed <= max) {
        return parsed;
      }
    } catch (NumberFormatException e) {
      // answered below
    }
    throw new IllegalArgumentException(
        "query parameter '"
            + name
            + "' = '"
            + value
            + "' must be an integer from "
            + min
            + " to "
            + max);
  }

  /** Answers every parked request now, and answers new ones at once, for a shutdown. */
  void release() {
    closing = true;
    for (Waiter waiter : waiters) {
      wake(waiter);
    }
  }

  @Override
  public void close() {
    release();
    subscription.close();
    waker.shutdownNow();
    timers.shutdownNow();
  }
}
