package io.skade.catalog;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The catalog's one commit path: every change to the store goes through here.
 *
 * <p>Callers submit a {@link Mutation} and wait. One named thread takes every pending mutation at
 * once (a group), runs each against a {@link Stage} that sees the store plus the group's earlier
 * winners, so each compare-and-swap is checked against the pointer as it will be; a mutation that
 * throws is a loser and stages nothing. The winners are written in ONE RocksDB batch with {@code
 * sync=true} (one fsync per group), each pointer change taking the next {@code commitSeq} — so the
 * log is gapless and a multi-table commit is all or nothing. Then the callers are completed, and
 * only then one {@link CommitEvent} per log row is published to subscribers, in {@code commitSeq}
 * order, without ever waiting for them. Consumer cursors are written in the same batch but are not
 * commits: they take no {@code commitSeq} and publish nothing.
 *
 * <p>A failed batch write leaves the outcome unknown: its winners get {@link
 * CommitStateUnknownException} and the committer refuses further work until the catalog is reopened
 * (which reads the truth back from disk).
 */
final class Committer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Committer.class);

  /** Default bound of one group: enough to coalesce any realistic burst into one fsync. */
  static final int DEFAULT_MAX_GROUP = 4096;

  /** One change, run on the committer thread. Throw to reject it; it then stages nothing. */
  interface Mutation<R> {
    R apply(Stage stage);
  }

  /** Makes one group durable. The store's write; replaced only by tests that inject a fault. */
  interface BatchWriter {
    void write(CatalogStore.Batch batch) throws Exception;
  }

  /**
   * @param idempotencyKey the client's key the mutation commits under, or null
   */
  private record Request<R>(
      Mutation<R> mutation, CompletableFuture<R> result, String idempotencyKey) {}

  private static final Request<Void> STOP = new Request<>(stage -> null, null, null);

  /**
   * The idempotency key the calling thread's next commit is made under ({@link
   * SkadeCatalog#withIdempotencyKey}); taken by the first commit submitted, so one request commits
   * under its key once.
   */
  static final ThreadLocal<String> IDEMPOTENCY_KEY = new ThreadLocal<>();

  private final CatalogStore store;
  private final int maxGroup;
  private final BlockingQueue<Request<?>> queue = new LinkedBlockingQueue<>();
  private final List<CommitSubscription> subscribers = new CopyOnWriteArrayList<>();
  private final Thread thread;
  private final AtomicLong groups = new AtomicLong();
  private volatile BatchWriter writer;
  private volatile long durableSeq;

  /**
   * The stamp of the newest durable commit: a group is stamped no earlier, so stamps never go back
   * along the log (a clock stepped back, a new leader's clock behind the old one's), and a
   * watermark on commit time holds across commits.
   */
  private long lastTsMicros;

  private volatile boolean closed;
  private volatile RuntimeException failure;

  Committer(CatalogStore store, String name, int maxGroup) {
    this.store = store;
    this.maxGroup = maxGroup;
    this.durableSeq = store.commitSeq();
    List<CommitEvent> newest = store.commitsSince(durableSeq - 1, 1);
    this.lastTsMicros = newest.isEmpty() ? Long.MIN_VALUE : newest.get(0).tsMicros();
    this.writer = store::write;
    this.thread = SkadeRuntime.thread(this::run, "skade-committer-" + name);
    thread.start();
  }

  /** Runs {@code mutation} in the next group and returns once its group is durable. */
  <R> R submit(Mutation<R> mutation) {
    return submit(mutation, () -> {});
  }

  /**
   * As {@link #submit(Mutation)}, running {@code whileQueued} on the calling thread once the
   * mutation is queued: work of the caller's that then overlaps the group's sync instead of
   * following it. It must not throw.
   */
  <R> R submit(Mutation<R> mutation, Runnable whileQueued) {
    CompletableFuture<R> result = new CompletableFuture<>();
    String key = IDEMPOTENCY_KEY.get();
    synchronized (queue) {
      checkOpen();
      queue.add(new Request<>(mutation, result, key));
    }
    whileQueued.run();
    try {
      R value = result.join();
      if (key != null) {
        IDEMPOTENCY_KEY.remove(); // committed under it: the request's later commits are not
      }
      return value;
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        // Re-thrown on the caller's thread, with the committer-side stack as the cause's trace.
        throw cause;
      }
      throw e;
    }
  }

  BatchWriter batchWriter() {
    return writer;
  }

  /** For fault-injection tests only. */
  void writeBatchesWith(BatchWriter replacement) {
    this.writer = replacement;
  }

  /** The newest durable {@code commitSeq}. */
  long durableSeq() {
    return durableSeq;
  }

  /** How many batches were written (each one fsync). */
  long groupsWritten() {
    return groups.get();
  }

  CommitSubscription subscribe(int bufferSize) {
    return subscribe(bufferSize, subscription -> {});
  }

  /** A subscription that also tells {@code onClose} when its owner closes it. */
  CommitSubscription subscribe(int bufferSize, Consumer<CommitSubscription> onClose) {
    CommitSubscription subscription =
        new CommitSubscription(
            bufferSize,
            closing -> {
              subscribers.remove(closing);
              onClose.accept(closing);
            });
    synchronized (queue) { // against close: a subscription is either told of it or refused
      checkOpen();
      // Registered before the cursor is read: a commit racing this call is delivered, not lost.
      subscribers.add(subscription);
      subscription.startAt(durableSeq);
    }
    return subscription;
  }

  /**
   * Ends {@code subscription} as the catalog's close does (its pollers see it closed once its
   * buffer is drained), when the catalog instance that made it closes before the store.
   */
  void end(CommitSubscription subscription) {
    subscribers.remove(subscription);
    subscription.catalogClosed();
  }

  private void checkOpen() {
    if (failure != null) {
      throw new IllegalStateException(
          "skade catalog at "
              + store.path()
              + " stopped committing after a failed write; reopen"
              + " the catalog to read the outcome from disk",
          failure);
    }
    if (closed) {
      throw new IllegalStateException("skade catalog at " + store.path() + " is closed");
    }
  }

  private void run() {
    List<Request<?>> group = new ArrayList<>();
    while (true) {
      try {
        group.add(queue.take());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      queue.drainTo(group, maxGroup - 1);
      boolean stop = group.remove(STOP);
      try {
        commitGroup(group);
      } catch (RuntimeException | Error e) {
        // Never leave a caller waiting on a dead thread: fail the group and stop committing.
        failure = new IllegalStateException("the committer failed", e);
        LOG.error("skade catalog at {}: the committer failed", store.path(), e);
        group.forEach(
            request -> request.result().completeExceptionally(new CommitStateUnknownException(e)));
      }
      group.clear();
      if (stop) {
        return;
      }
    }
  }

  private void commitGroup(List<Request<?>> group) {
    if (failure != null) {
      for (Request<?> request : group) {
        request
            .result()
            .completeExceptionally(
                new IllegalStateException(
                    "skade catalog at " + store.path() + " stopped committing after a failed write",
                    failure));
      }
      return;
    }
    Stage stage = new Stage(store, durableSeq, lastTsMicros);
    List<Runnable> completions = new ArrayList<>(group.size());
    for (Request<?> request : group) {
      completions.add(run(stage, request));
    }
    CatalogStore.Batch batch = stage.group;
    long durableNanos = 0;
    if (!batch.isEmpty()) {
      try {
        writer.write(batch);
        durableNanos = System.nanoTime();
        groups.incrementAndGet();
      } catch (Exception e) {
        failure = new IllegalStateException("batch write failed", e);
        LOG.error(
            "skade catalog at {}: a batch write failed; commits {}..{} have an unknown"
                + " outcome",
            store.path(),
            durableSeq + 1,
            stage.lastSeq,
            e);
        for (Request<?> request : group) {
          request.result().completeExceptionally(new CommitStateUnknownException(e));
        }
        return;
      }
      durableSeq = stage.lastSeq;
      lastTsMicros = stage.tsMicros;
    }
    // Subscribers first: a committer's caller wakes to post-commit work of its own, which would
    // otherwise take the CPU the feed's consumers need to react to the commit.
    for (CommitEvent event : batch.commits) {
      for (CommitSubscription subscriber : subscribers) {
        subscriber.deliver(event, durableNanos);
      }
    }
    completions.forEach(Runnable::run);
  }

  private static <R> Runnable run(Stage stage, Request<R> request) {
    try {
      String key = request.idempotencyKey();
      IdempotencyRecord used = key == null ? null : stage.idempotency(key);
      if (used != null) {
        throw new IdempotencyKeyUsedException(used);
      }
      R value = request.mutation().apply(stage);
      if (key != null) {
        stage.putIdempotency(key);
      }
      stage.accept();
      return () -> request.result().complete(value);
    } catch (RuntimeException e) {
      stage.discard();
      // Told only after the group is durable: the winners' state is then real.
      return () -> request.result().completeExceptionally(e);
    }
  }

  @Override
  public void close() {
    synchronized (queue) {
      if (closed) {
        return;
      }
      closed = true;
      // Every request queued before STOP is still committed.
      queue.add(STOP);
    }
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (CommitSubscription subscriber : subscribers) {
      subscriber.catalogClosed();
    }
    subscribers.clear();
  }

  /**
   * What a mutation sees and changes: the store, plus the group's earlier winners, plus its own
   * changes so far. Its changes join the group only when it returns normally.
   */
  static final class Stage {
    private final CatalogStore store;
    private final CatalogStore.Batch group = new CatalogStore.Batch();
    private CatalogStore.Batch pending = new CatalogStore.Batch();
    private long lastSeq;
    private long pendingSeq;
    private final long tsMicros;

    private Stage(CatalogStore store, long durableSeq, long notBeforeMicros) {
      this.store = store;
      this.lastSeq = durableSeq;
      this.pendingSeq = durableSeq;
      Instant now = Instant.now();
      this.tsMicros =
          Math.max(notBeforeMicros, now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000);
    }

    /** The table's pointer as this mutation would see it committed, or null. */
    TablePointer pointer(String tableKey) {
      return lookup(tableKey, pending.pointers, group.pointers, store::pointer);
    }

    /** Keys of the tables whose key starts with {@code prefix}. */
    List<String> tableKeys(String prefix) {
      return overlay(store.tableKeys(prefix), prefix, group.pointers, pending.pointers);
    }

    /** The namespace's properties as this mutation would see them committed, or null. */
    Map<String, String> namespace(String namespaceKey) {
      return lookup(namespaceKey, pending.namespaces, group.namespaces, store::namespace);
    }

    List<String> namespaceKeys(String prefix) {
      return overlay(store.namespaceKeys(prefix), prefix, group.namespaces, pending.namespaces);
    }

    /** The consumer as this mutation would see it stored, or null. */
    StoredConsumer consumer(String consumerId) {
      return lookup(consumerId, pending.consumers, group.consumers, store::consumer);
    }

    /** Every consumer as this mutation would see them stored, in id order. */
    List<StoredConsumer> consumers() {
      return overlay(store.consumerIds(), "", group.consumers, pending.consumers).stream()
          .map(this::consumer)
          .toList();
    }

    /**
     * Moves (or creates, or removes) a table pointer and appends its log row with the next {@code
     * commitSeq}, which it returns.
     *
     * @param newLocation the new metadata location; for a removal, the last one
     * @param snapshotId the table's current snapshot after the change ({@link
     *     TablePointer#NO_SNAPSHOT} when none)
     */
    long commit(
        String tableKey,
        CommitOperation operation,
        List<Long> addedSnapshotIds,
        String newLocation,
        long snapshotId) {
      TablePointer previous = pointer(tableKey);
      long seq = ++pendingSeq;
      pending.pointers.put(
          tableKey,
          operation.leavesPointer() ? new TablePointer(newLocation, snapshotId, seq) : null);
      pending.commits.add(
          new CommitEvent(
              seq,
              tableKey,
              operation,
              addedSnapshotIds,
              newLocation,
              previous == null ? null : previous.metadataLocation(),
              tsMicros));
      return seq;
    }

    /**
     * Marks the {@code size} commits from {@code firstSeq} on (made by this mutation) as one
     * multi-table commit, when there are several.
     */
    void markTransaction(long firstSeq, int size) {
      if (size < 2) {
        return;
      }
      pending.commits.replaceAll(
          e ->
              e.commitSeq() < firstSeq || e.commitSeq() >= firstSeq + size
                  ? e
                  : new CommitEvent(
                      e.commitSeq(),
                      e.tableKey(),
                      e.operation(),
                      e.addedSnapshotIds(),
                      e.metadataLocation(),
                      e.previousMetadataLocation(),
                      e.tsMicros(),
                      firstSeq,
                      size));
    }

    /** Moves a table from {@code fromKey} to {@code toKey}: two log rows, one batch. */
    void rename(String fromKey, String toKey) {
      TablePointer pointer = pointer(fromKey);
      commit(
          fromKey,
          CommitOperation.RENAME_FROM,
          List.of(),
          pointer.metadataLocation(),
          TablePointer.NO_SNAPSHOT);
      long toSeq =
          commit(
              toKey,
              CommitOperation.RENAME_TO,
              List.of(),
              pointer.metadataLocation(),
              pointer.snapshotId());
      pending.renamedFrom.put(toSeq, fromKey);
    }

    void putNamespace(String namespaceKey, Map<String, String> properties) {
      pending.namespaces.put(namespaceKey, Map.copyOf(properties));
    }

    void removeNamespace(String namespaceKey) {
      pending.namespaces.put(namespaceKey, null);
    }

    /** Stores a consumer's row: no {@code commitSeq}, no log row, no event. */
    void putConsumer(StoredConsumer consumer) {
      pending.consumers.put(consumer.consumerId(), consumer);
    }

    void removeConsumer(String consumerId) {
      pending.consumers.put(consumerId, null);
    }

    /** The lock {@code name} of {@code table} as this mutation would see it, or null. */
    MaintenanceLock lock(TableIdentifier table, String name) {
      return lookup(
          CatalogStore.lockKey(table, name),
          pending.locks,
          group.locks,
          key -> store.lock(table, name));
    }

    /** Stores a table lock's row (null {@code lock}: releases it); no log row, no event. */
    void putLock(TableIdentifier table, String name, MaintenanceLock lock) {
      pending.locks.put(CatalogStore.lockKey(table, name), lock);
    }

    /** What was committed under {@code key}, as this mutation would see it stored, or null. */
    IdempotencyRecord idempotency(String key) {
      return lookup(key, pending.idempotency, group.idempotency, store::idempotency);
    }

    /** Records this mutation's commits under {@code key}, in its own batch. */
    void putIdempotency(String key) {
      pending.idempotency.put(
          key,
          new IdempotencyRecord(
              key,
              Instant.ofEpochSecond(tsMicros / 1_000_000, (tsMicros % 1_000_000) * 1_000),
              pending.commits.stream()
                  .filter(c -> c.operation().leavesPointer())
                  .map(CommitEvent::metadataLocation)
                  .toList()));
    }

    void removeIdempotency(String key) {
      pending.idempotency.put(key, null);
    }

    private void accept() {
      group.pointers.putAll(pending.pointers);
      group.namespaces.putAll(pending.namespaces);
      group.commits.addAll(pending.commits);
      group.renamedFrom.putAll(pending.renamedFrom);
      group.consumers.putAll(pending.consumers);
      group.idempotency.putAll(pending.idempotency);
      group.locks.putAll(pending.locks);
      lastSeq = pendingSeq;
      pending = new CatalogStore.Batch();
    }

    private void discard() {
      pendingSeq = lastSeq;
      pending = new CatalogStore.Batch();
    }

    /** This mutation's change, else the group's, else the store's value (null = absent). */
    private static <V> V lookup(
        String key, Map<String, V> pending, Map<String, V> group, Function<String, V> stored) {
      if (pending.containsKey(key)) {
        return pending.get(key);
      }
      return group.containsKey(key) ? group.get(key) : stored.apply(key);
    }

    private static <V> List<String> overlay(
        List<String> stored, String prefix, Map<String, V> group, Map<String, V> pending) {
      TreeSet<String> keys = new TreeSet<>(stored);
      for (Map<String, V> layer : List.of(group, pending)) {
        for (Map.Entry<String, V> e : layer.entrySet()) {
          if (e.getKey().startsWith(prefix)) {
            if (e.getValue() == null) {
              keys.remove(e.getKey());
            } else {
              keys.add(e.getKey());
            }
          }
        }
      }
      return new ArrayList<>(keys);
    }
  }
}
