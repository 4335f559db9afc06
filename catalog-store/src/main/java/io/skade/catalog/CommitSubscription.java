package io.skade.catalog;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A live subscription to a catalog's commits, in {@code commitSeq} order.
 *
 * <p>Its buffer is bounded. The committer never waits for a subscriber: when the buffer is full,
 * the subscription drops what it holds and marks itself lagged, and the next {@link #poll} throws
 * {@link CommitFeedLaggedException}. The consumer then reads the missed commits with {@link
 * CommitFeed#commitsSince} from its cursor and keeps polling, skipping events at or below the
 * cursor. Nothing is dropped silently.
 *
 * <p>Only commits after the {@link #startCursor() start cursor} are returned: a commit that became
 * durable before the subscription started but was published after it is filtered out here.
 *
 * <p>Consumers get subscriptions from a {@link CommitFeed}. The constructor, {@link #startAt},
 * {@link #deliver} and {@link #catalogClosed} are the feed's side, <b>internal</b> to skade's
 * catalog store: public only for the remote feed ({@code io.skade.catalog.remote}).
 */
public final class CommitSubscription implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CommitSubscription.class);
  private final int capacity;
  private final Consumer<CommitSubscription> onClose;
  private volatile long startCursor;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notEmpty = lock.newCondition();
  private final ArrayDeque<Delivery> buffer;
  private boolean lagged;
  private boolean closed;
  private Runnable listener;
  private long lastDurableNanos;

  private record Delivery(CommitEvent event, long durableNanos) {}

  /**
   * A subscription with a buffer of {@code capacity} events, which tells {@code onClose} when its
   * consumer closes it. Internal: for the commit feeds of skade's catalog store.
   */
  public CommitSubscription(int capacity, Consumer<CommitSubscription> onClose) {
    if (capacity <= 0) {
      throw new IllegalArgumentException(
          "commit subscription buffer size must be positive, got " + capacity);
    }
    this.capacity = capacity;
    this.onClose = onClose;
    this.buffer = new ArrayDeque<>(Math.min(capacity, 1024));
  }

  /**
   * The catalog's durable {@code commitSeq} when this subscription started. Every commit after it
   * is delivered, and none at or below it.
   */
  public long startCursor() {
    return startCursor;
  }

  /**
   * Takes the next commit, waiting up to {@code timeout}; null when none arrived in time.
   *
   * @throws CommitFeedLaggedException when commits were dropped because the buffer overflowed;
   *     thrown once per overflow, after which newer commits are delivered again
   * @throws IllegalStateException when the subscription or its catalog was closed
   */
  public CommitEvent poll(Duration timeout) throws InterruptedException {
    long remaining = timeout.toNanos();
    lock.lock();
    try {
      while (true) {
        if (lagged) {
          lagged = false;
          throw new CommitFeedLaggedException(capacity);
        }
        Delivery next = buffer.poll();
        if (next != null && next.event().commitSeq() <= startCursor) {
          continue; // durable before the subscription started, published after it
        }
        if (next != null) {
          lastDurableNanos = next.durableNanos();
          return next.event();
        }
        if (closed) {
          throw new IllegalStateException("commit subscription is closed");
        }
        if (remaining <= 0) {
          return null;
        }
        remaining = notEmpty.awaitNanos(remaining);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Takes the next commit if one is buffered, without waiting; null otherwise. */
  public CommitEvent poll() {
    try {
      return poll(Duration.ZERO);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /**
   * Registers a callback run on the committer's thread after each delivery (and on lag). It must
   * only schedule work elsewhere — never block, never poll on that thread.
   */
  public void onAvailable(Runnable callback) {
    lock.lock();
    try {
      this.listener = callback;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The {@link System#nanoTime()} reading taken when the batch holding the last polled event became
   * durable, so a consumer in this JVM can measure the feed's latency.
   */
  public long lastDurableNanos() {
    lock.lock();
    try {
      return lastDurableNanos;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Set once, right after the subscription was registered with its feed. Internal: for the commit
   * feeds of skade's catalog store.
   */
  public void startAt(long cursor) {
    this.startCursor = cursor;
  }

  /**
   * Hands the subscription one commit; never blocks. Internal: called by the committer (or the
   * remote feed's poller) only.
   */
  public void deliver(CommitEvent event, long durableNanos) {
    Runnable callback;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      if (buffer.size() >= capacity) {
        buffer.clear();
        lagged = true;
      }
      if (!lagged) {
        buffer.add(new Delivery(event, durableNanos));
      }
      notEmpty.signalAll();
      callback = listener;
    } finally {
      lock.unlock();
    }
    if (callback != null) {
      try {
        callback.run();
      } catch (Throwable e) { // a subscriber's fault must never stop the committer
        LOG.warn("a commit subscription callback failed; the committer carries on", e);
      }
    }
  }

  /** Ends the subscription; its buffered events are discarded. Idempotent. */
  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      buffer.clear();
      notEmpty.signalAll();
    } finally {
      lock.unlock();
    }
    onClose.accept(this);
  }

  /**
   * Called when the catalog closes: wakes waiting pollers, who then see the closed state. Internal:
   * for the commit feeds of skade's catalog store.
   */
  public void catalogClosed() {
    lock.lock();
    try {
      closed = true;
      notEmpty.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
