package io.skade.catalog.remote;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeRuntime;
import io.skade.catalog.TableKeys;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The commit feed of a catalog a skade server owns, for a process that is its client: the same
 * {@link CommitFeed} the owner's catalog is, over the server's long-poll.
 *
 * <p>Live subscriptions share one long-poll thread, started with the first: it asks for the commits
 * after the newest it delivered, the server answers as soon as one lands, so a subscriber learns of
 * a commit one round trip after it is durable. While the server is away (restarting), the thread
 * retries with {@link RemoteRetry}'s backoff, without its deadline, and then goes on from where it
 * was, so no commit is skipped and none delivered twice. Every other call rides the policy with its
 * deadline.
 */
public final class RemoteCommitFeed implements CommitFeed, AutoCloseable {
  /** How long one long-poll waits on the server. */
  private static final Duration WAIT = Duration.ofSeconds(20);

  /** Most commits one long-poll asks for. */
  private static final int POLL_PAGE = 1000;

  private final SkadeServerClient client;
  private final Set<CommitSubscription> subscriptions = ConcurrentHashMap.newKeySet();

  /** Per table key, the newest commit the poller took, noted before any subscriber hears it. */
  private final Map<String, Long> newestByTable = new ConcurrentHashMap<>();

  private volatile Thread poller; // set under this

  /** The newest commit the poller delivered; guarded by this, which is notified as it grows. */
  private long delivered;

  private volatile boolean closed;

  /** Guards the {@link #catchUp} checks, and is notified as each ends. */
  private final Object checks = new Object();

  private boolean checking;

  /** Whether a check completed; when the newest began ({@link System#nanoTime}), what it found. */
  private boolean checked;

  private long checkedAtNanos;
  private long checkedSeq;

  /** The feed of the server {@code client} calls, riding the client's retry policy. */
  public RemoteCommitFeed(SkadeServerClient client) {
    this.client = client;
  }

  @Override
  public synchronized CommitSubscription subscribeCommits(int bufferSize) {
    if (closed) {
      throw new IllegalStateException("the commit feed of " + client.uri() + " is closed");
    }
    CommitSubscription subscription = new CommitSubscription(bufferSize, subscriptions::remove);
    startPolling();
    subscription.startAt(delivered); // under the lock: the poller delivers what comes after
    subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Starts the long-poll (once): from now on every commit is taken from the server one round trip
   * after it is durable, for the subscriptions and for {@link #newestCommitOf}.
   */
  public void follow() {
    if (poller == null) {
      startPolling();
    }
  }

  private synchronized void startPolling() {
    if (closed) {
      throw new IllegalStateException("the commit feed of " + client.uri() + " is closed");
    }
    if (poller == null) {
      delivered = client.commitSeq();
      poller = SkadeRuntime.thread(this::poll, "skade-remote-feed " + client.uri());
      poller.start();
    }
  }

  /**
   * The {@code commit_seq} of the newest commit of {@code table} the long-poll took since it was
   * {@link #follow() started}, 0 when none. It is noted before any subscriber hears of the commit:
   * a caller that learnt of a commit from this feed finds it here.
   */
  public long newestCommitOf(TableIdentifier table) {
    return newestByTable.getOrDefault(TableKeys.tableKey(table), 0L);
  }

  /**
   * Returns once this feed has taken every commit that was durable on the server when the call
   * began: it asks the server for its newest {@code commit_seq} (one round trip) and waits for the
   * long-poll to take it. Concurrent callers share a check that began after they did, so a burst of
   * callers costs about one round trip, not one each.
   *
   * @throws UncheckedIOException when the server cannot be reached, or the thread is interrupted
   */
  public void catchUp() {
    follow();
    long begun = System.nanoTime();
    long seq;
    while (true) {
      synchronized (checks) {
        while (checking && !(checked && checkedAtNanos - begun >= 0)) {
          awaitOn(checks); // a check in flight, which may have begun before this call
        }
        if (checked && checkedAtNanos - begun >= 0) {
          seq = checkedSeq;
          break;
        }
        checking = true; // none in flight, none begun since this call: make one
      }
      long start = System.nanoTime();
      long found = -1;
      try {
        found = client.commitSeq();
      } finally {
        synchronized (checks) {
          checking = false;
          if (found >= 0 && (!checked || start - checkedAtNanos > 0)) {
            checked = true;
            checkedAtNanos = start;
            checkedSeq = found;
          }
          checks.notifyAll();
        }
      }
    }
    synchronized (this) {
      while (delivered < seq && !closed) {
        awaitOn(this);
      }
    }
  }

  private static void awaitOn(Object monitor) {
    try {
      monitor.wait(1_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(
          new InterruptedIOException(
              "interrupted while catching up with the skade server's commits"));
    }
  }

  private void poll() {
    long after;
    synchronized (this) {
      after = delivered;
    }
    while (!closed) {
      long from = after;
      // No deadline: while subscriptions remain, the thread outlives any restart of the server.
      CommitPage page =
          client
              .retry()
              .untilStopped(
                  "skade commit feed of " + client.uri(),
                  () -> closed,
                  () -> client.commitsOnce(from, POLL_PAGE, WAIT));
      if (page == null) {
        closed = true; // closed, or the thread interrupted
        return;
      }
      long now = System.nanoTime();
      synchronized (this) {
        for (CommitEvent event : page.commits()) {
          newestByTable.merge(event.tableKey(), event.commitSeq(), Math::max);
          for (CommitSubscription subscription : subscriptions) {
            subscription.deliver(event, now);
          }
          delivered = event.commitSeq();
        }
        after = delivered;
        notifyAll(); // callers of catchUp wait for delivered to grow
      }
    }
  }

  @Override
  public List<CommitEvent> commitsSince(long after, int limit) {
    return client.commits(after, Math.min(limit, SkadeProtocol.MAX_LIMIT), Duration.ZERO).commits();
  }

  @Override
  public long commitSeq() {
    return client.commitSeq();
  }

  @Override
  public String commitTableKey(TableIdentifier identifier) {
    return TableKeys.tableKey(identifier);
  }

  @Override
  public TableIdentifier commitTableIdentifier(String tableKey) {
    return TableKeys.identifier(tableKey);
  }

  /** Ends every subscription and the long-poll thread. */
  @Override
  public void close() {
    Thread thread;
    synchronized (this) {
      closed = true;
      thread = poller;
      notifyAll();
    }
    subscriptions.forEach(CommitSubscription::catalogClosed);
    subscriptions.clear();
    if (thread != null) {
      thread.interrupt();
    }
  }
}
