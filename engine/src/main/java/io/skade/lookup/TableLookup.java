package io.skade.lookup;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.skade.catalog.CatalogConnection;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.remote.RemoteRetry;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.types.Types;

/**
 * One table as a lookup join sees it: the rows of a key at the table's latest commit (or a pinned
 * snapshot), only those a row filter keeps, served by {@link PointLookup} probes, a row cache keyed
 * by snapshot and key (never stale: a new snapshot misses it), or every row in memory kept current
 * by each new snapshot's changelog ({@link FullCache}). A failure that can heal (I/O, a file gone
 * while the table moved on) is retried with backoff; any other fails at once.
 *
 * <p>Rows go to the caller as {@code R}, mapped once per table version by a {@link RowMapper}, so a
 * cached row is mapped once. Thread-safe.
 *
 * <p>On remote storage (a table whose location is not a local path) probes read byte ranges of the
 * data files, through a disk cache when {@link Settings#diskCacheDir} names one, and the data files
 * a commit adds are opened ahead of their first probe ({@link FetchAhead}); close the lookup to
 * stop that.
 *
 * @param <R> what a row becomes for the caller (Flink's {@code RowData}, or Iceberg's {@code
 *     Record} itself)
 */
public final class TableLookup<R> implements AutoCloseable {
  /** How lookups are answered. */
  public enum Caching {
    /** Every lookup probes the table (probes keep the decoded Parquet pages they read). */
    PROBE,
    /** A row cache keyed by snapshot and key in front of the probes. */
    ROWS,
    /** Every row in memory, kept current by applying each new snapshot's changes. */
    FULL
  }

  /**
   * How one table is looked up.
   *
   * @param keyColumns the columns a lookup gives values for (names match regardless of case)
   * @param snapshotId the snapshot lookups are pinned to; null for the latest commit
   * @param pollInterval in a process that does not own the catalog, how often the log is checked
   *     for a new snapshot
   * @param caching how lookups are answered
   * @param rowCacheMaxRows the keys the row cache holds ({@link Caching#ROWS})
   * @param filter the rows a lookup may return; a row it does not keep is never returned or cached
   * @param maxRetries how often a lookup that failed with an error that can heal is retried
   * @param diskCacheDir where byte ranges of remote data files are kept on local disk, shared by
   *     the JVM's lookups (and safely by other processes; {@link #defaultDiskCacheDir()} is the
   *     usual choice); null for no disk cache. A table on local disk never uses it.
   * @param diskCacheMaxBytes the bound of the disk cache, in bytes
   * @param asOfRetention for lookups as of a time ({@link #lookupAsOf}): how far back they reach;
   *     the snapshots current since then are held from expiry and an older time is refused. Null:
   *     no hold, and a time is answered while the table still holds its history
   */
  public record Settings(
      List<String> keyColumns,
      Long snapshotId,
      Duration pollInterval,
      Caching caching,
      long rowCacheMaxRows,
      Expression filter,
      int maxRetries,
      String diskCacheDir,
      long diskCacheMaxBytes,
      Duration asOfRetention)
      implements Serializable {

    /** The default bound of the disk cache: 1 GiB. */
    public static final long DEFAULT_DISK_CACHE_MAX_BYTES = DiskCache.DEFAULT_MAX_BYTES;

    /**
     * The disk cache's directory when none is chosen: {@code skade-lookup-cache-<user>} in the
     * JVM's temporary directory ({@code java.io.tmpdir}, which Flink's {@code io.tmp.dirs} defaults
     * to), so that a host's TaskManagers share it.
     */
    public static String defaultDiskCacheDir() {
      return DiskCache.defaultDirectory().toString();
    }

    /** Settings without a disk cache. */
    public Settings(
        List<String> keyColumns,
        Long snapshotId,
        Duration pollInterval,
        Caching caching,
        long rowCacheMaxRows,
        Expression filter,
        int maxRetries) {
      this(
          keyColumns,
          snapshotId,
          pollInterval,
          caching,
          rowCacheMaxRows,
          filter,
          maxRetries,
          null,
          DEFAULT_DISK_CACHE_MAX_BYTES,
          null);
    }

    /**
     * These settings with the disk cache in {@code dir} (null: none), bounded by {@code maxBytes}.
     */
    public Settings withDiskCache(String dir, long maxBytes) {
      return new Settings(
          keyColumns,
          snapshotId,
          pollInterval,
          caching,
          rowCacheMaxRows,
          filter,
          maxRetries,
          dir,
          maxBytes,
          asOfRetention);
    }

    /**
     * These settings with lookups as of a time reaching back {@code retention} (null: as far as the
     * table's history).
     */
    public Settings withAsOfRetention(Duration retention) {
      return new Settings(
          keyColumns,
          snapshotId,
          pollInterval,
          caching,
          rowCacheMaxRows,
          filter,
          maxRetries,
          diskCacheDir,
          diskCacheMaxBytes,
          retention);
    }

    public Settings {
      keyColumns = List.copyOf(keyColumns);
      Objects.requireNonNull(pollInterval, "pollInterval");
      Objects.requireNonNull(caching, "caching");
      filter = filter == null ? Expressions.alwaysTrue() : filter;
      if (caching == Caching.ROWS && rowCacheMaxRows <= 0) {
        throw new IllegalArgumentException(
            "a row cache holds at least one key, got " + rowCacheMaxRows);
      }
      if (maxRetries < 0) {
        throw new IllegalArgumentException("retries are 0 or more, got " + maxRetries);
      }
      if (asOfRetention != null && (asOfRetention.isNegative() || asOfRetention.isZero())) {
        throw new IllegalArgumentException(
            "an as-of lookup's retention is a positive duration, got " + asOfRetention);
      }
      if (diskCacheDir != null && diskCacheDir.isBlank()) {
        diskCacheDir = null;
      }
      if (diskCacheMaxBytes <= 0) {
        throw new IllegalArgumentException(
            "a lookup disk cache holds a positive number of bytes, got " + diskCacheMaxBytes);
      }
    }
  }

  /** How a table version's rows (records of its schema) become the caller's rows. */
  @FunctionalInterface
  public interface RowMapper<R> {
    /** The mapping of rows of {@code table}'s schema; asked once per table version. */
    Function<Record, R> forTable(Table table);
  }

  private final String name;

  /** What a retried lookup is called in the log: built once, not per probe. */
  private final String retried;

  private final Settings settings;
  private final LookupCaches caches;
  private final RowMapper<R> mapper;
  private final LatestTable latest;
  private final PointLookup.Counters counters = new PointLookup.Counters();
  private final Cache<RowKey, List<R>> rowCache;
  private volatile Version<R> version; // the table probed, with what probes of it reuse
  private FullCache full; // guarded by this
  private final FetchAhead fetchAhead; // null: local files, a pinned snapshot or every row kept
  private long fetchedUpTo; // the snapshot whose files were fetched ahead; guarded by fetchAhead

  private final CatalogConnection connection;
  private final TableIdentifier table;

  /** The snapshot timeline of the table version last probed as of a time. */
  private volatile Timeline timeline;

  /** When the history of as-of lookups was last held ({@link System#nanoTime}). */
  private final AtomicLong heldAt = new AtomicLong();

  /** How often the history of as-of lookups is held again, moving the hold on with the clock. */
  static final Duration HOLD_INTERVAL = Duration.ofMinutes(1);

  private final Object timelineLock = new Object();

  /** A table version and its snapshot timeline. */
  private record Timeline(Table table, SnapshotTimeline history) {}

  /** New data files one commit has opened ahead of their first probe, at most. */
  static final int FETCH_AHEAD_FILES = 256;

  /** A table version: its point lookup and how its rows map. */
  private record Version<R>(Table table, PointLookup probes, Function<Record, R> rows) {}

  /** A key of the row cache: the snapshot, and the key's value (or values). */
  private record RowKey(long snapshot, Object key) {}

  /**
   * Lookups of {@code table} of the catalog {@code connection} reaches, probing with {@code
   * caches}.
   *
   * @throws IllegalArgumentException when a key column, the filter or the pinned snapshot does not
   *     fit the table
   */
  public TableLookup(
      CatalogConnection connection,
      TableIdentifier table,
      Settings settings,
      LookupCaches caches,
      RowMapper<R> mapper) {
    this.name = table.toString();
    this.connection = connection;
    this.table = table;
    this.retried = "skade lookup on " + name;
    this.settings = settings;
    this.caches = caches;
    this.mapper = mapper;
    this.rowCache =
        settings.caching() == Caching.ROWS
            ? Caffeine.newBuilder().maximumSize(settings.rowCacheMaxRows()).build()
            : null;
    this.latest = new LatestTable(connection, table, settings.pollInterval());
    if (settings.snapshotId() != null && latest.table().snapshot(settings.snapshotId()) == null) {
      throw new IllegalArgumentException(
          "table "
              + name
              + " has no snapshot "
              + settings.snapshotId()
              + " (unknown or expired) to pin lookups to; choose one of its"
              + " snapshots");
    }
    Table first =
        current().table(); // a bad key column or filter fails here, before the first lookup
    if (settings.diskCacheDir() != null && !isLocal(first.location())) {
      // a local file is read in place: no copy of its ranges on the same disk
      caches.useDiskCache(
          DiskCache.shared(
              java.nio.file.Path.of(settings.diskCacheDir()), settings.diskCacheMaxBytes()));
    }
    if (settings.asOfRetention() != null) {
      heldAt.set(System.nanoTime());
      holdHistory(first); // before the first probe: the history is held from the start
    }
    if (settings.snapshotId() == null
        && settings.caching() != Caching.FULL
        && !isLocal(first.location())) {
      Snapshot at = first.currentSnapshot();
      fetchedUpTo = at == null ? -1 : at.snapshotId();
      fetchAhead = new FetchAhead(connection, table, this::fetchAhead);
    } else {
      fetchAhead = null;
    }
  }

  private static boolean isLocal(String location) {
    String scheme = new org.apache.hadoop.fs.Path(location).toUri().getScheme();
    return scheme == null || scheme.equals("file");
  }

  /** A fetch-ahead round: the latest version loaded, the files its commits added opened. */
  private void fetchAhead(java.util.function.BooleanSupplier cancelled) {
    synchronized (fetchAhead) {
      Version<R> at = current();
      Snapshot now = at.table().currentSnapshot();
      if (now == null || now.snapshotId() == fetchedUpTo) {
        return;
      }
      at.probes().fetchAhead(fetchedUpTo, FETCH_AHEAD_FILES, cancelled);
      if (!cancelled.getAsBoolean()) {
        fetchedUpTo = now.snapshotId();
      }
    }
  }

  /** Stops fetching new files ahead; probes still work (the caches are the caller's). */
  @Override
  public void close() {
    if (fetchAhead != null) {
      fetchAhead.close();
    }
  }

  /** The key columns of the table probed, in the order {@link #lookup} takes their values. */
  public List<Types.NestedField> keyColumns() {
    return current().probes().keyColumns();
  }

  /** What the probes of this lookup cost so far. */
  public LookupStats stats() {
    return counters.stats();
  }

  /**
   * The rows whose key columns hold {@code keyValues} (Iceberg internal values, as {@link
   * PointLookup#lookup} takes them) that the filter keeps; none when a value is null. Retried up to
   * {@link Settings#maxRetries} times, with backoff, on a failure that can heal.
   *
   * @throws IOException when the retries are spent, or the thread is interrupted meanwhile
   */
  public List<R> lookup(List<?> keyValues) throws IOException {
    return lookup(keyValues, false, null);
  }

  /**
   * The rows whose key columns held {@code keyValues} at {@code asOfMicros} (microseconds since the
   * epoch), as {@link #lookup} answers for now: in the snapshot that was current then, the last one
   * committed at or before it by the catalog's stamps ({@link SnapshotTimeline}); none before the
   * table's first snapshot. The row cache serves every snapshot (its key is the snapshot and the
   * key); the full cache holds only the latest rows and takes no such lookup.
   *
   * @throws SnapshotTimeline.HistoryNotRetainedException when that time is older than {@link
   *     Settings#asOfRetention} or than the history the table still holds
   * @throws IOException as {@link #lookup}
   */
  public List<R> lookupAsOf(long asOfMicros, List<?> keyValues) throws IOException {
    return lookup(keyValues, false, asOfMicros);
  }

  /** As {@link #lookupAsOf}, for a caller that waited for {@link #caughtUp} since it began. */
  public List<R> lookupAsOfCaughtUp(long asOfMicros, List<?> keyValues) throws IOException {
    return lookup(keyValues, true, asOfMicros);
  }

  /**
   * Completes when a probe begun now may be made with {@link #lookupCaughtUp}: once this process
   * knows every commit it must see ({@link LatestTable#caughtUp}), holding no thread meanwhile. An
   * asynchronous lookup function waits for it, then probes on a thread of its own.
   */
  public CompletableFuture<Void> caughtUp() {
    return latest.caughtUp();
  }

  /**
   * A probe begun now, made without holding the calling thread: {@code probe} (a call of {@link
   * #lookupCaughtUp}, with what the caller converts around it) runs on {@code executor} at once,
   * while the catch-up a probe begun now needs ({@link #caughtUp}) is under way, and its answer is
   * taken when the catch-up shows that this process learnt of no commit of the table meanwhile (the
   * version it read then holds every commit durable when the probe began); otherwise {@code probe}
   * runs again after the catch-up. Through a server the round trip and the read overlap. The answer
   * is completed on {@code executor}. Fails as {@link #caughtUp} or the probe after it fails.
   */
  public <T> CompletableFuture<T> lookupAsync(Callable<T> probe, Executor executor) {
    CompletableFuture<Void> caughtUp = caughtUp();
    if (caughtUp.isDone() && !caughtUp.isCompletedExceptionally()) {
      return CompletableFuture.supplyAsync(() -> call(probe), executor);
    }
    long seen = latest.commitsSeen(); // before the early read chooses its version
    CompletableFuture<T> early = CompletableFuture.supplyAsync(() -> call(probe), executor);
    return early
        .handle(
            (rows, failure) -> failure == null ? Optional.ofNullable(rows) : Optional.<T>empty())
        .thenCombine(caughtUp, (rows, done) -> rows)
        // Back on the executor: the caller's callbacks never run on the threads of the feed.
        .thenApplyAsync(
            rows -> rows.isPresent() && latest.commitsSeen() == seen ? rows.get() : call(probe),
            executor);
  }

  private static <T> T call(Callable<T> probe) {
    try {
      return probe.call();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new CompletionException(e);
    }
  }

  /**
   * As {@link #lookup}, for a caller that waited for {@link #caughtUp} since the probe began: its
   * first attempt does not catch up with the catalog again.
   */
  public List<R> lookupCaughtUp(List<?> keyValues) throws IOException {
    return lookup(keyValues, true, null);
  }

  private List<R> lookup(List<?> keyValues, boolean caughtUp, Long asOfMicros) throws IOException {
    int[] attempts = {0};
    try {
      // Not the remote retry policy's deadline: that one rides a server's restart inside each
      // remote call; this retries a probe whose file vanished while the table moved on, which
      // heals on the next version of the table, as often as the user allows.
      return RemoteRetry.attempts(
          retried,
          settings.maxRetries(),
          this::heals,
          () -> {
            // A retry catches up again: the table may have moved past a file that vanished.
            boolean first = attempts[0]++ == 0;
            return attempt(keyValues, caughtUp && first, asOfMicros);
          });
    } catch (UncheckedIOException | NotFoundException e) {
      throw new IOException(
          "skade lookup on "
              + name
              + " failed after "
              + attempts[0]
              + " attempt(s) for key "
              + keyValues
              + ": "
              + e.getMessage(),
          e);
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while retrying a skade lookup on " + name, interrupted);
    }
  }

  /** Whether a failed probe can heal: a file gone, only when the table moved on (never pinned). */
  private boolean heals(Exception failure) {
    if (RemoteRetry.deadlinePassed(failure)) {
      return false; // a server that did not answer within the retry timeout: no more waiting
    }
    return failure instanceof UncheckedIOException
        || failure instanceof NotFoundException && settings.snapshotId() == null;
  }

  private List<R> attempt(List<?> keyValues, boolean caughtUp, Long asOfMicros) {
    for (Object value : keyValues) {
      if (value == null
          || value instanceof Double d && d.isNaN()
          || value instanceof Float f && f.isNaN()) {
        return List.of(); // NULL and NaN never equal anything
      }
    }
    Version<R> at = current(caughtUp);
    Long snapshot;
    if (asOfMicros != null) {
      snapshot = snapshotAsOf(at.table(), asOfMicros);
      if (snapshot == null) {
        return List.of(); // before the table's first snapshot: it had no rows
      }
    } else if (settings.caching() == Caching.FULL) {
      return map(full.rows(normalized(keyValues)), at);
    } else {
      snapshot = snapshotOf(at.table());
    }
    if (rowCache == null || snapshot == null) {
      return map(at.probes().lookup(snapshot, keyValues), at);
    }
    // Read, then put: a miss costs no per-key lock, and two probes of one key racing both
    // read the same immutable snapshot.
    List<Object> key = normalized(keyValues);
    RowKey cacheKey = new RowKey(snapshot, key.size() == 1 ? key.get(0) : key);
    List<R> rows = rowCache.getIfPresent(cacheKey);
    if (rows == null) {
      rows = map(at.probes().lookup(snapshot, keyValues), at);
      rowCache.put(cacheKey, rows);
    }
    return rows;
  }

  /**
   * The snapshot of {@code table} current at {@code micros}, null before its first; refused beyond
   * the retention or the retained history.
   */
  private Long snapshotAsOf(Table table, long micros) {
    if (settings.caching() == Caching.FULL || settings.snapshotId() != null) {
      throw new IllegalStateException(
          "skade lookup on "
              + name
              + ": a lookup as of a time reads the snapshot current then, but this lookup"
              + (settings.caching() == Caching.FULL
                  ? " keeps only the latest rows in memory (full caching)"
                  : " is pinned to snapshot " + settings.snapshotId())
              + "; use probes or the row cache");
    }
    Duration retention = settings.asOfRetention();
    if (retention != null) {
      long oldest = retentionStartMicros();
      if (micros < oldest) {
        throw new SnapshotTimeline.HistoryNotRetainedException(
            "skade lookup on "
                + name
                + ": a lookup as of "
                + SnapshotTimeline.time(micros)
                + " is older than the as-of retention ("
                + retention
                + ", 'lookup.as-of.retention' in SQL) allows: the oldest time it holds is now "
                + SnapshotTimeline.time(oldest)
                + ". Raise the retention to reach it");
      }
      long held = heldAt.get();
      long now = System.nanoTime();
      if (now - held >= HOLD_INTERVAL.toNanos() && heldAt.compareAndSet(held, now)) {
        holdHistory(table);
      }
    }
    return timeline(table).snapshotAt(micros).orElse(null);
  }

  /** The snapshot timeline of {@code table}, a version of the table probed. */
  private SnapshotTimeline timeline(Table version) {
    Timeline known = timeline;
    if (known != null && known.table() == version) {
      return known.history();
    }
    synchronized (timelineLock) {
      known = timeline;
      if (known == null || known.table() != version) {
        SnapshotTimeline history =
            SnapshotTimeline.of(
                name,
                version,
                snapshot -> connection.commitOf(table, snapshot),
                known == null ? null : known.history());
        known = new Timeline(version, history);
        timeline = known;
      }
      return known.history();
    }
  }

  /**
   * Holds from expiry the snapshots as-of lookups may read: the one current at the retention's
   * start and every newer one, by a consumer cursor the catalog's expiry guard honours (a read-only
   * follower stores none: its owner's maintenance decides).
   */
  private void holdHistory(Table version) {
    if (!connection.storesConsumers()) {
      return;
    }
    long snapshot =
        timeline(version).heldFrom(retentionStartMicros()).orElse(ConsumerCursor.NO_SNAPSHOT);
    connection
        .consumers()
        .storeConsumer(
            holdId(table, settings.asOfRetention()),
            new ConsumerCursor(
                table, version.uuid().toString(), snapshot, connection.commitsSeen(table)));
  }

  /**
   * The consumer id under which as-of lookups of {@code table} reaching back {@code retention} hold
   * its history: shared by every task and job with the same retention, which all hold the same
   * snapshots.
   */
  public static String holdId(TableIdentifier table, Duration retention) {
    return "skade-lookup-as-of/" + table + "/" + retention;
  }

  /** The oldest time as-of lookups reach now, microseconds since the epoch. */
  private long retentionStartMicros() {
    return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now().minus(settings.asOfRetention()));
  }

  /** The pinned snapshot, or the table's current one (null before its first). */
  private Long snapshotOf(Table table) {
    if (settings.snapshotId() != null) {
      return settings.snapshotId();
    }
    Snapshot current = table.currentSnapshot();
    return current == null ? null : current.snapshotId();
  }

  private static <R> List<R> map(List<Record> records, Version<R> at) {
    if (records.isEmpty()) {
      return List.of();
    }
    List<R> rows = new ArrayList<>(records.size());
    for (Record record : records) {
      rows.add(at.rows().apply(record));
    }
    return rows;
  }

  /** The latest table version (or the pinned snapshot's table). */
  private Version<R> current() {
    return current(false);
  }

  /** As {@link #current()}; without catching up first when the caller has. */
  private Version<R> current(boolean caughtUp) {
    Table table = caughtUp ? latest.known() : latest.table();
    Version<R> known = version;
    return known != null && known.table() == table ? known : advance(table);
  }

  private synchronized Version<R> advance(Table table) {
    if (version == null || table != version.table()) {
      Version<R> next =
          new Version<>(
              table,
              new PointLookup(table, settings.keyColumns(), settings.filter(), caches, counters),
              mapper.forTable(table));
      if (settings.caching() == Caching.FULL) {
        if (full == null) {
          full = new FullCache(table, snapshotOf(table), settings.keyColumns(), settings.filter());
        } else {
          full.advance(table, snapshotOf(table));
        }
      }
      version = next; // after the full cache: reading the version shows it too
    }
    return version;
  }

  /**
   * Key values as the caches compare them, equal when SQL's {@code =} holds: character sequences as
   * strings (Iceberg hands out several kinds), a float or double zero as positive zero, the rest as
   * they are (binary values are {@code ByteBuffer}s already).
   */
  static List<Object> normalized(List<?> values) {
    Object[] normalized = new Object[values.size()];
    for (int i = 0; i < normalized.length; i++) {
      Object value = values.get(i);
      if (value instanceof CharSequence chars) {
        value = chars.toString();
      } else if (value instanceof Double d && d == 0.0d) {
        value = 0.0d;
      } else if (value instanceof Float f && f == 0.0f) {
        value = 0.0f;
      }
      normalized[i] = value;
    }
    return Arrays.asList(normalized);
  }
}
