package io.skade.lookup;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitFeedLaggedException;
import io.skade.catalog.CommitSubscription;
import io.skade.catalog.SkadeRuntime;
import io.skade.scan.FetchPool;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.iceberg.catalog.TableIdentifier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens the data files a commit adds to a table being looked up before a probe asks for them: it
 * follows the catalog's commit feed and, on a commit of its table, has the lookup load the new
 * version and open its new files ({@link PointLookup#fetchAhead}), which reads each file's footer,
 * page indexes and bloom filters (one ranged read when they lie together at its end, as Parquet
 * writes them). The first probe of a new file then reads only its pages.
 *
 * <p>The work runs on the JVM's fetch-ahead threads ({@value #THREADS}, owned by the {@link
 * SkadeRuntime}), at most one round per lookup at a time: commits that arrive during a round are
 * taken by the next one. Closing stops the subscription and the round in progress between files.
 */
final class FetchAhead implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FetchAhead.class);

  /** Threads that fetch ahead, shared by the JVM's lookups. */
  static final int THREADS = 2;

  private final String name;
  private final CatalogConnection connection;
  private final TableIdentifier table;
  private final Consumer<BooleanSupplier> round;
  private final ExecutorService pool;
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private volatile boolean closed;
  private volatile CommitSubscription subscription;

  /**
   * Follows commits of {@code table} and runs {@code round} (given whether to stop) after each.
   *
   * @param round loads the table's new version and opens its new files; it stops early when the
   *     supplier says so
   */
  FetchAhead(CatalogConnection connection, TableIdentifier table, Consumer<BooleanSupplier> round) {
    this.name = table.toString();
    this.connection = connection;
    this.table = table;
    this.round = round;
    this.pool = SkadeRuntime.get().component(Pool.class, Pool::new).executor();
    if (connection.isRemote()) {
      // Subscribing asks the server for its cursor: off the caller's thread.
      submit(
          () -> {
            try {
              subscribe();
            } catch (RuntimeException e) {
              LOG.warn(
                  "skade lookup on {}: cannot follow the server's commit feed; new data files"
                      + " are opened by their first probe",
                  name,
                  e);
            }
          });
    } else {
      subscribe();
    }
  }

  /** The JVM's fetch-ahead threads, shut down with the runtime. */
  private static final class Pool extends FetchPool {
    Pool() {
      super(THREADS, "skade-lookup-fetch-ahead");
    }
  }

  private void subscribe() {
    if (closed) {
      return;
    }
    CommitSubscription subscribed = connection.feed().subscribeCommits();
    subscription = subscribed;
    subscribed.onAvailable(this::schedule);
    if (closed) {
      subscribed.close(); // closed while subscribing
    }
  }

  /** On the committer's thread: only schedules a round (one at a time). */
  private void schedule() {
    if (!closed && scheduled.compareAndSet(false, true)) {
      submit(this::drain);
    }
  }

  private void submit(Runnable work) {
    try {
      pool.execute(work);
    } catch (RejectedExecutionException e) {
      scheduled.set(false); // the runtime is closing
    }
  }

  /** Takes the buffered commits; runs a round when one is of this table (or some were missed). */
  private void drain() {
    scheduled.set(false); // a commit from now on schedules the next round
    CommitSubscription from = subscription;
    if (closed || from == null) {
      return;
    }
    String key = connection.feed().commitTableKey(table);
    boolean ours = false;
    try {
      for (CommitEvent event = from.poll(); event != null; event = from.poll()) {
        ours |= event.tableKey().equals(key);
      }
    } catch (CommitFeedLaggedException lagged) {
      ours = true; // commits were dropped: one of them may be ours
    } catch (IllegalStateException subscriptionClosed) {
      return;
    }
    if (!ours || closed) {
      return;
    }
    try {
      round.accept(() -> closed || Thread.currentThread().isInterrupted());
    } catch (RuntimeException e) {
      // Only a head start is lost: the first probe of a file opens it.
      LOG.warn("skade lookup on {}: fetching new data files ahead failed", name, e);
    }
  }

  @Override
  public void close() {
    closed = true;
    CommitSubscription subscribed = subscription;
    if (subscribed != null) {
      subscribed.close();
    }
  }
}
