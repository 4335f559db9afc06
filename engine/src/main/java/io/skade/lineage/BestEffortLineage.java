package io.skade.lineage;

import io.skade.catalog.SkadeRuntime;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers lineage to a {@link LineageSink} on its own thread, best effort: handing an event over
 * never blocks (a full queue drops it), and a sink that fails or hangs is logged and counted but
 * never fails or delays the commit or job the event describes.
 */
public final class BestEffortLineage implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BestEffortLineage.class);

  /** Events waiting for the sink; past this, new events are dropped. */
  public static final int DEFAULT_QUEUE = 10_000;

  private static final Object STOP = new Object();

  private final LineageSink sink;
  private final BlockingQueue<Object> queue;
  private final Thread worker;
  private final Duration closeTimeout;
  private final LongAdder delivered = new LongAdder();
  private final LongAdder failed = new LongAdder();
  private final LongAdder dropped = new LongAdder();
  private final LongAdder accepted = new LongAdder();
  private volatile boolean closed;

  /**
   * Starts delivering to {@code sink}, keeping at most {@code queueSize} events waiting; {@link
   * #close} waits at most {@code closeTimeout} for them.
   */
  public BestEffortLineage(LineageSink sink, int queueSize, Duration closeTimeout) {
    this.sink = sink;
    this.queue = new ArrayBlockingQueue<>(queueSize + 1); // + 1: room for STOP
    this.closeTimeout = closeTimeout;
    this.worker =
        SkadeRuntime.thread(this::deliver, "skade-lineage-" + sink.getClass().getSimpleName());
    worker.start();
  }

  /** As {@link #BestEffortLineage(LineageSink, int, Duration)}, with the default bounds. */
  public BestEffortLineage(LineageSink sink) {
    this(sink, DEFAULT_QUEUE, Duration.ofSeconds(10));
  }

  /** Hands a commit's lineage over; never blocks. */
  public void commit(LineageEvent event) {
    offer(event);
  }

  /** Hands a job run's lineage over; never blocks. */
  public void jobRun(JobRunEvent event) {
    offer(event);
  }

  private void offer(Object event) {
    if (!closed && queue.remainingCapacity() > 1 && queue.offer(event)) {
      accepted.increment();
    } else {
      dropped.increment();
      if (!closed) {
        LOG.warn(
            "skade lineage: {} is behind by {} events; dropped an event",
            sink.getClass().getSimpleName(),
            queue.size());
      }
    }
  }

  /** Events the sink took. */
  public long delivered() {
    return delivered.sum();
  }

  /** Events the sink failed on (logged, not retried). */
  public long failed() {
    return failed.sum();
  }

  /** Events dropped: the queue was full, or this was closed. */
  public long dropped() {
    return dropped.sum();
  }

  /**
   * Waits until the sink took (or failed on) every event handed over so far, at most {@code
   * timeout}; returns whether it did.
   */
  public boolean awaitDelivered(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    long target = accepted.sum();
    while (delivered.sum() + failed.sum() < target) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  private void deliver() {
    try {
      while (true) {
        Object event = queue.poll();
        if (event == null) {
          call("flush", null);
          event = queue.take();
        }
        if (event == STOP) {
          call("flush", null);
          return;
        }
        call("deliver", event);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // closing, and the sink did not finish in time
    }
  }

  private void call(String what, Object event) {
    try {
      if (event instanceof LineageEvent commit) {
        sink.commit(commit);
      } else if (event instanceof JobRunEvent run) {
        sink.jobRun(run);
      } else {
        sink.flush();
        return;
      }
      delivered.increment();
    } catch (Exception | LinkageError e) {
      if (event != null) {
        failed.increment();
      }
      LOG.warn(
          "skade lineage: {} failed to {} {}; the commit or job it describes is not" + " affected",
          sink.getClass().getSimpleName(),
          what,
          event == null ? "" : event,
          e);
    }
  }

  /**
   * Delivers what is queued, waiting at most the close timeout, then closes the sink; events still
   * queued then are counted as dropped.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    queue.offer(STOP); // the queue always keeps room for it
    try {
      worker.join(closeTimeout.toMillis());
      if (worker.isAlive()) {
        worker.interrupt();
        worker.join(TimeUnit.SECONDS.toMillis(1));
        dropped.add(queue.size());
        LOG.warn(
            "skade lineage: {} did not finish within {}; {} events not delivered",
            sink.getClass().getSimpleName(),
            closeTimeout,
            queue.size());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      sink.close();
    } catch (Exception e) {
      LOG.warn("skade lineage: closing {} failed", sink.getClass().getSimpleName(), e);
    }
  }
}
