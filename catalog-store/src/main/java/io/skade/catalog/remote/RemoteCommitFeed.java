package io.skade.catalog.remote;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeed;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.CommittedMetadata;
import io.skade.catalog.SkadeRuntime;
import io.skade.catalog.TableKeys;
import io.skade.catalog.remote.SkadeProtocol.CommitPage;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import org.apache.iceberg.MetadataUpdate;
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
  private final Map<String, CommitEvent> newestByTable = new ConcurrentHashMap<>();

  /** The table keys {@link #newestCommitOf} was asked for. */
  private final Map<TableIdentifier, String> tableKeys = new ConcurrentHashMap<>();

  /** How many commits' updates are kept: enough for the commits planners have not built yet. */
  private static final int RECENT_UPDATES = 256;

  /** The updates the recent commits came with, by metadata file, newest last; guarded by itself. */
  private final Map<String, CommittedMetadata.Updates> recentUpdates =
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, CommittedMetadata.Updates> eldest) {
          return size() > RECENT_UPDATES;
        }
      };

  private volatile Thread poller; // set under this

  /** The newest commit the poller delivered; guarded by this. */
  private long delivered;

  private volatile boolean closed;

  /**
   * Callers of {@link #caughtUp} no check covers yet, oldest first; guarded by itself, which the
   * checker thread waits on.
   */
  private final ArrayDeque<Waiter> unchecked = new ArrayDeque<>();

  /** Callers that know the {@code commit_seq} they wait for, until delivered; guarded by this. */
  private final PriorityQueue<Waiter> undelivered =
      new PriorityQueue<>(Comparator.comparingLong(Waiter::seq));

  private Thread checker; // set under unchecked

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
   * The updates that made metadata file {@code location} from file {@code base}, when the long-poll
   * took them with a recent commit (a server sends them with the commits it made lately); else
   * empty.
   */
  public Optional<List<MetadataUpdate>> updates(String location, String base) {
    CommittedMetadata.Updates updates;
    synchronized (recentUpdates) {
      updates = recentUpdates.get(location);
    }
    return updates != null && updates.base().equals(base)
        ? Optional.of(updates.updates())
        : Optional.empty();
  }

  /**
   * The {@code commit_seq} of the newest commit of {@code table} the long-poll took since it was
   * {@link #follow() started}, 0 when none. It is noted before any subscriber hears of the commit:
   * a caller that learnt of a commit from this feed finds it here.
   */
  public long newestCommitOf(TableIdentifier table) {
    CommitEvent newest = newestEventOf(table);
    return newest == null ? 0L : newest.commitSeq();
  }

  /**
   * The newest commit of {@code table} the long-poll took ({@link #newestCommitOf}), when that
   * commit left the table in place (not a drop or a rename away).
   */
  public Optional<CommitEvent> newestPointerCommitOf(TableIdentifier table) {
    CommitEvent newest = newestEventOf(table);
    return newest != null && newest.operation().leavesPointer()
        ? Optional.of(newest)
        : Optional.empty();
  }

  private CommitEvent newestEventOf(TableIdentifier table) {
    // Asked at each probe of a lookup: the key is made once per table, not per call.
    return newestByTable.get(tableKeys.computeIfAbsent(table, TableKeys::tableKey));
  }

  /**
   * Completes once this feed has taken every commit that was durable on the server when the call
   * began, without holding the calling thread. The server is asked for its newest {@code
   * commit_seq} (one round trip) by one check thread that every caller of this feed shares: a check
   * covers each caller that came before it was sent, so callers that arrive together cost one round
   * trip, and one that arrives while a check is under way waits for the next. A long-poll answer
   * covers the callers that came before its request was sent, as a check would (it carries the
   * server's newest {@code commit_seq}).
   *
   * <p>Fails with the check's failure when the server cannot be reached within the retry policy's
   * deadline, and with an {@link IllegalStateException} when the feed is closed first.
   */
  public CompletableFuture<Void> caughtUp() {
    follow();
    Waiter waiter = new Waiter(System.nanoTime());
    synchronized (unchecked) {
      if (closed) {
        waiter.future.completeExceptionally(closedError());
        return waiter.future;
      }
      unchecked.addLast(waiter);
      if (checker == null) {
        checker = SkadeRuntime.thread(this::check, "skade-remote-catch-up " + client.uri());
        checker.start();
      }
      unchecked.notifyAll();
    }
    return waiter.future;
  }

  /**
   * Returns once this feed has taken every commit that was durable on the server when the call
   * began ({@link #caughtUp}).
   *
   * @throws UncheckedIOException when the server cannot be reached, or the thread is interrupted
   */
  public void catchUp() {
    try {
      caughtUp().get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(
          new InterruptedIOException(
              "interrupted while catching up with the skade server's commits"));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException failure) {
        throw failure;
      }
      throw new UncheckedIOException(
          "catching up with the commits of the skade server " + client.uri(),
          new IOException(e.getCause()));
    }
  }

  /** The check thread: each round asks the server for the callers that came before it. */
  private void check() {
    while (true) {
      List<Waiter> round;
      synchronized (unchecked) {
        while (unchecked.isEmpty() && !closed) {
          try {
            unchecked.wait();
          } catch (InterruptedException e) {
            return; // closed
          }
        }
        if (closed) {
          return;
        }
        round = new ArrayList<>(unchecked);
        unchecked.clear();
      }
      long seq;
      try {
        seq = client.commitSeq(); // sent after every caller of the round came
      } catch (RuntimeException e) {
        round.forEach(waiter -> waiter.future.completeExceptionally(e));
        continue;
      }
      awaitDelivery(round, seq);
    }
  }

  /**
   * The callers that came before a request sent at {@code sentNanos}, whose answer said the
   * server's newest commit was {@code seq}, wait for the long-poll to deliver it.
   */
  private void covered(long sentNanos, long seq) {
    List<Waiter> round = new ArrayList<>();
    synchronized (unchecked) {
      while (!unchecked.isEmpty() && unchecked.peekFirst().beganNanos - sentNanos <= 0) {
        round.add(unchecked.pollFirst());
      }
    }
    if (!round.isEmpty()) {
      awaitDelivery(round, seq);
    }
  }

  private void awaitDelivery(List<Waiter> round, long seq) {
    synchronized (this) {
      if (closed) {
        round.forEach(waiter -> waiter.future.completeExceptionally(closedError()));
        return;
      }
      if (delivered < seq) {
        for (Waiter waiter : round) {
          waiter.seq = seq;
          undelivered.add(waiter);
        }
        return;
      }
    }
    round.forEach(waiter -> waiter.future.complete(null)); // outside the lock
  }

  private IllegalStateException closedError() {
    return new IllegalStateException("the commit feed of " + client.uri() + " is closed");
  }

  /** A caller of {@link #caughtUp}: when it came, and once checked, the commit it waits for. */
  private static final class Waiter {
    final long beganNanos;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    long seq;

    Waiter(long beganNanos) {
      this.beganNanos = beganNanos;
    }

    long seq() {
      return seq;
    }
  }

  private void poll() {
    long after;
    synchronized (this) {
      after = delivered;
    }
    while (!closed) {
      long from = after;
      long[] sent = new long[1];
      // No deadline: while subscriptions remain, the thread outlives any restart of the server.
      CommitPage page =
          client
              .retry()
              .untilStopped(
                  "skade commit feed of " + client.uri(),
                  () -> closed,
                  () -> {
                    sent[0] = System.nanoTime();
                    return client.commitsOnce(from, POLL_PAGE, WAIT);
                  });
      if (page == null) {
        close(); // closed, or the thread interrupted
        return;
      }
      long now = System.nanoTime();
      List<Waiter> done = new ArrayList<>();
      synchronized (this) {
        for (CommitEvent event : page.commits()) {
          newestByTable.merge(
              event.tableKey(), event, (a, b) -> a.commitSeq() >= b.commitSeq() ? a : b);
          List<MetadataUpdate> updates = page.updates().get(event.commitSeq());
          if (updates != null && event.previousMetadataLocation() != null) {
            synchronized (recentUpdates) {
              recentUpdates.put(
                  event.metadataLocation(),
                  new CommittedMetadata.Updates(event.previousMetadataLocation(), updates));
            }
          }
          for (CommitSubscription subscription : subscriptions) {
            subscription.deliver(event, now);
          }
          delivered = event.commitSeq();
        }
        // Commits of namespaces the token may not read are left out of the page, not lost.
        delivered = Math.max(delivered, page.coveredCommitSeq());
        after = delivered;
        while (!undelivered.isEmpty() && undelivered.peek().seq <= delivered) {
          done.add(undelivered.poll());
        }
      }
      done.forEach(waiter -> waiter.future.complete(null)); // outside the lock
      covered(sent[0], page.lastCommitSeq());
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
    List<Waiter> waiting = new ArrayList<>();
    synchronized (this) {
      closed = true;
      thread = poller;
      waiting.addAll(undelivered);
      undelivered.clear();
    }
    Thread check;
    synchronized (unchecked) {
      check = checker;
      waiting.addAll(unchecked);
      unchecked.clear();
      unchecked.notifyAll();
    }
    waiting.forEach(waiter -> waiter.future.completeExceptionally(closedError()));
    subscriptions.forEach(CommitSubscription::catalogClosed);
    subscriptions.clear();
    if (thread != null && thread != Thread.currentThread()) {
      thread.interrupt();
    }
    if (check != null) {
      check.interrupt();
    }
  }
}
