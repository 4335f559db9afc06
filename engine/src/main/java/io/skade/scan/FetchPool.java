package io.skade.scan;

import io.skade.catalog.SkadeRuntime;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A JVM-wide pool of named daemon threads that fetch files, kept as a {@link SkadeRuntime}
 * component and shut down with it. Idle threads end after a while, so a JVM that stopped fetching
 * holds none. Each user subclasses it, since the runtime keeps one component per class.
 */
public abstract class FetchPool implements AutoCloseable {
  private final String name;
  private final AtomicInteger threads = new AtomicInteger();
  private final ThreadPoolExecutor executor;

  /** A pool of at most {@code size} threads named {@code name-<n>}. */
  protected FetchPool(int size, String name) {
    this.name = name;
    this.executor =
        new ThreadPoolExecutor(
            size,
            size,
            30,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            work -> SkadeRuntime.thread(work, name + "-" + threads.incrementAndGet()));
    executor.allowCoreThreadTimeOut(true);
  }

  /** The pool's executor. */
  public ThreadPoolExecutor executor() {
    return executor;
  }

  @Override
  public void close() {
    SkadeRuntime.shutDown(executor, name);
  }
}
