package io.skade.table;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.AsyncLookupFunction;
import org.apache.flink.table.functions.FunctionContext;

/**
 * The asynchronous lookup function of a skade table ({@code lookup.async}): probes run on a pool of
 * its own threads, so one task keeps several probes in flight (Flink bounds how many with {@code
 * table.exec.async-lookup.buffer-capacity}).
 */
public final class SkadeAsyncLookupFunction extends AsyncLookupFunction {
  private static final long serialVersionUID = 1L;

  /** How long closing waits for the probes in flight. */
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

  private final SkadeLookup lookup;
  private final int threads;
  private transient ExecutorService pool;

  /** The probes asked for and not yet answered, which closing waits for. */
  private transient Set<CompletableFuture<?>> inFlight;

  SkadeAsyncLookupFunction(SkadeLookup lookup, int threads) {
    this.lookup = lookup;
    this.threads = threads;
  }

  @Override
  public void open(FunctionContext context) {
    lookup.open(context.getMetricGroup());
    inFlight = ConcurrentHashMap.newKeySet();
    AtomicInteger count = new AtomicInteger();
    pool =
        Executors.newFixedThreadPool(
            threads,
            runnable -> {
              Thread thread = new Thread(runnable, "skade-lookup-" + count.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
  }

  /**
   * Probes on the pool while the probe's catch-up with the catalog is under way, holding no thread
   * of Flink's ({@link SkadeLookup#lookupAsync}), so that probes waiting for one round trip to a
   * server neither fill the pool nor wait for their read after it.
   */
  @Override
  public CompletableFuture<Collection<RowData>> asyncLookup(RowData keyRow) {
    CompletableFuture<Collection<RowData>> probe = lookup.lookupAsync(keyRow, pool);
    inFlight.add(probe);
    probe.whenComplete((rows, failure) -> inFlight.remove(probe));
    return probe;
  }

  /**
   * Lets the probes in flight finish before the lookup's resources close, within {@link
   * #CLOSE_WAIT}: interrupting them (as on a task's cancel, a failover or a stop with a savepoint)
   * made each fail, and a failure while a job stops with a savepoint fails the job.
   */
  @Override
  public void close() throws InterruptedException {
    if (pool != null) {
      long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
      try {
        CompletableFuture.allOf(inFlight.toArray(CompletableFuture[]::new))
            .get(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (ExecutionException | TimeoutException e) {
        // a failed probe failed its own request; one still waiting is given up below
      }
      pool.shutdown();
      long left = Math.max(0, deadline - System.nanoTime());
      if (!pool.awaitTermination(left, TimeUnit.NANOSECONDS)) {
        pool.shutdownNow();
      }
    }
    lookup.close();
  }
}
