package io.skade.catalog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.TableIdentifier;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The catalog's RocksDB, and the only class that knows its layout; the byte encoding of the values
 * it writes is {@link StoreRecords}'.
 *
 * <p>Column families: {@code tables} (table key → pointer), {@code commits} ((table key, snapshot
 * id) → the {@code commitSeq} that added the snapshot), {@code commit_log} (8-byte big-endian
 * {@code commitSeq} → commit record), {@code meta} (format version, current {@code commitSeq}, and
 * the table locks, {@code lock/<table key>\0<name>} → holder and time: written with the group, but
 * no log row), {@code namespaces} (namespace key → properties), {@code consumers} (consumer id →
 * cursor and last-seen time; written with the group, but no log row and no {@code commitSeq}),
 * {@code idempotency_keys} (a client's idempotency key → what the commit made under it; written in
 * the commit's own batch; created in a catalog made before it existed).
 *
 * <p>Only the methods used by the catalog's single committer thread write, always through {@link
 * #write}: one {@link WriteBatch}, {@code sync=true}. Everything else reads.
 */
final class CatalogStore implements AutoCloseable {
  static final int FORMAT_VERSION = 1;

  private static final String CF_TABLES = "tables";
  private static final String CF_COMMITS = "commits";
  private static final String CF_COMMIT_LOG = "commit_log";
  private static final String CF_META = "meta";
  private static final String CF_NAMESPACES = "namespaces";
  private static final String CF_CONSUMERS = "consumers";
  private static final String CF_IDEMPOTENCY = "idempotency_keys";

  /** The families every catalog has; an owner adds those it lacks from {@link #FAMILIES}. */
  private static final List<String> REQUIRED_FAMILIES =
      List.of(CF_TABLES, CF_COMMITS, CF_COMMIT_LOG, CF_META, CF_NAMESPACES, CF_CONSUMERS);

  private static final List<String> FAMILIES =
      List.of(
          CF_TABLES,
          CF_COMMITS,
          CF_COMMIT_LOG,
          CF_META,
          CF_NAMESPACES,
          CF_CONSUMERS,
          CF_IDEMPOTENCY,
          ReplicationLog.FAMILY);

  private static final byte[] META_FORMAT = TableKeys.bytes("format_version");
  private static final byte[] META_COMMIT_SEQ = TableKeys.bytes("commit_seq");
  private static final String META_LOCK_PREFIX = "lock/";

  static {
    RocksDB.loadLibrary();
  }

  private final String path;
  private final boolean follower;
  private final DBOptions options;
  private final ColumnFamilyOptions familyOptions;
  private final Statistics statistics;
  private final RocksDB db;
  private final List<ColumnFamilyHandle> handles;
  private final ColumnFamilyHandle tables;
  private final ColumnFamilyHandle commits;
  private final ColumnFamilyHandle commitLog;
  private final ColumnFamilyHandle meta;
  private final ColumnFamilyHandle namespaces;
  private final ColumnFamilyHandle consumers;
  private final ColumnFamilyHandle idempotency;
  private final ReplicationLog replicationLog;
  private final WriteOptions syncWrite = new WriteOptions().setSync(true);

  /** Reads and writes hold it shared; close holds it exclusively, so no call meets a freed DB. */
  private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();

  private boolean closed;

  private CatalogStore(
      String path,
      boolean follower,
      DBOptions options,
      ColumnFamilyOptions familyOptions,
      Statistics statistics,
      RocksDB db,
      List<ColumnFamilyHandle> handles) {
    this.path = path;
    this.follower = follower;
    this.options = options;
    this.familyOptions = familyOptions;
    this.statistics = statistics;
    this.db = db;
    this.handles = handles;
    // handles.get(0) is RocksDB's default family, unused.
    this.tables = handles.get(1);
    this.commits = handles.get(2);
    this.commitLog = handles.get(3);
    this.meta = handles.get(4);
    this.namespaces = handles.get(5);
    this.consumers = handles.get(6);
    this.idempotency = handles.get(7);
    try {
      this.replicationLog = new ReplicationLog(db, handles.get(8), meta);
    } catch (RocksDBException e) {
      throw new IllegalStateException(
          "cannot read the replication log of the skade catalog at " + path + ": " + e, e);
    }
  }

  /**
   * Opens the catalog at {@code dir} as its single writer, creating it when new and {@code create}
   * allows; otherwise a missing catalog is a {@link CatalogMissingException} and nothing is
   * created.
   */
  static CatalogStore openOwner(Path dir, boolean create) {
    String path = dir.toAbsolutePath().toString();
    boolean existing = checkLayout(dir);
    if (!existing && !create) {
      throw new CatalogMissingException(path);
    }
    if (!existing) {
      try {
        Files.createDirectories(dir);
      } catch (IOException | SecurityException e) {
        throw new IllegalArgumentException(
            "cannot create the skade catalog directory "
                + path
                + " (catalog.path): "
                + e
                + "; choose a writable catalog.path",
            e);
      }
    }
    String real = realPath(dir, path);
    DBOptions options =
        new DBOptions()
            .setCreateIfMissing(true)
            .setCreateMissingColumnFamilies(true) // the layout was checked: only newer families
            .setKeepLogFileNum(4);
    return open(
        real,
        false,
        options,
        (descriptors, handles) -> RocksDB.open(options, real, descriptors, handles));
  }

  /**
   * The directory's real path: RocksDB's lock against a second open in this JVM compares path
   * strings, so a symlinked path must not look like another directory.
   */
  private static String realPath(Path dir, String path) {
    try {
      return dir.toRealPath().toString();
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot resolve the skade catalog directory "
              + path
              + " (catalog.path): "
              + e
              + "; choose a readable catalog.path",
          e);
    }
  }

  /**
   * Opens the catalog at {@code dir}, owned by another process, as a read-only RocksDB secondary
   * instance whose own files live in {@code secondaryDir}. It sees the owner's commits after {@link
   * #catchUp()}.
   */
  static CatalogStore openFollower(Path dir, Path secondaryDir) {
    String path = dir.toAbsolutePath().toString();
    if (!checkLayout(dir)) {
      throw new IllegalArgumentException(
          "no skade catalog at "
              + path
              + " to follow (catalog.path): the owner process creates"
              + " it on first open; start the owner first or fix catalog.path");
    }
    try {
      Files.createDirectories(secondaryDir);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot create the follower's scratch directory "
              + secondaryDir
              + " (catalog.follower-path)",
          e);
    }
    String secondary = secondaryDir.toAbsolutePath().toString();
    DBOptions options = new DBOptions().setMaxOpenFiles(-1); // required of a secondary
    return open(
        path,
        true,
        options,
        (descriptors, handles) ->
            RocksDB.openAsSecondary(options, path, secondary, descriptors, handles));
  }

  private interface Opener {
    RocksDB open(List<ColumnFamilyDescriptor> descriptors, List<ColumnFamilyHandle> handles)
        throws RocksDBException;
  }

  /** Opens the DB; whatever fails, everything allocated so far is released again. */
  private static CatalogStore open(
      String path, boolean follower, DBOptions options, Opener opener) {
    Statistics statistics = new Statistics();
    options.setStatistics(statistics);
    ColumnFamilyOptions familyOptions = new ColumnFamilyOptions();
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    descriptors.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, familyOptions));
    for (String family : FAMILIES) {
      descriptors.add(new ColumnFamilyDescriptor(TableKeys.bytes(family), familyOptions));
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    RocksDB db;
    try {
      db = opener.open(descriptors, handles);
    } catch (RocksDBException e) {
      familyOptions.close();
      options.close();
      statistics.close();
      throw openFailure(path, follower, e);
    }
    CatalogStore store =
        new CatalogStore(path, follower, options, familyOptions, statistics, db, handles);
    try {
      store.initialiseOrCheckFormat();
      return store;
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
  }

  /**
   * Returns whether {@code dir} holds a skade catalog, false when it is missing or empty, and
   * throws when it holds something else — without changing anything there.
   */
  private static boolean checkLayout(Path dir) {
    String path = dir.toAbsolutePath().toString();
    if (!Files.exists(dir)) {
      return false;
    }
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException(
          "catalog.path "
              + path
              + " is a file, not a directory; point catalog.path at a skade"
              + " catalog directory or at a path where one may be created");
    }
    try (Stream<Path> entries = Files.list(dir)) {
      if (entries.findAny().isEmpty()) {
        return false;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list catalog.path " + path, e);
    }
    List<String> families = List.of();
    if (Files.exists(dir.resolve("CURRENT"))) {
      try (Options options = new Options()) {
        families =
            RocksDB.listColumnFamilies(options, path).stream().map(TableKeys::string).toList();
      } catch (RocksDBException e) {
        throw notACatalog(path, "its RocksDB files cannot be read (" + e.getMessage() + ")");
      }
    }
    if (!families.containsAll(REQUIRED_FAMILIES)) {
      throw notACatalog(
          path,
          families.isEmpty()
              ? "it is a non-empty directory without a RocksDB database"
              : "it is a RocksDB database without skade's column families " + REQUIRED_FAMILIES);
    }
    return true;
  }

  private static IllegalArgumentException notACatalog(String path, String why) {
    return new IllegalArgumentException(
        "catalog.path "
            + path
            + " is not a skade catalog: "
            + why
            + ". Point catalog.path at an"
            + " existing skade catalog, or at a new or empty directory; nothing was changed there");
  }

  /**
   * Checks the format version; a new store (or one whose creation was cut short before its first
   * row) gets its format and counter rows in one synced batch.
   */
  private void initialiseOrCheckFormat() {
    byte[] format = get(meta, META_FORMAT);
    if (format == null) {
      boolean empty = isEmpty(tables) && isEmpty(commitLog) && isEmpty(namespaces);
      if (!empty) {
        throw notACatalog(path, "it has data but no format version");
      }
      if (follower) {
        throw new IllegalStateException(
            "the skade catalog at "
                + path
                + " is still being"
                + " created by its owner; open the follower again once the owner is open");
      }
      try (WriteBatch batch = new WriteBatch()) {
        batch.put(meta, META_FORMAT, intBytes(FORMAT_VERSION));
        batch.put(meta, META_COMMIT_SEQ, longBytes(0));
        db.write(syncWrite, batch);
      } catch (RocksDBException e) {
        throw new IllegalStateException(
            "cannot initialise the skade catalog at "
                + path
                + ": "
                + e.getMessage()
                + "; check that catalog.path is writable",
            e);
      }
      return;
    }
    int version = ByteBuffer.wrap(format).getInt();
    if (version > FORMAT_VERSION) {
      throw new IllegalStateException(
          "skade catalog at "
              + path
              + " has format version "
              + version
              + ", newer than the "
              + FORMAT_VERSION
              + " this build reads; upgrade skade");
    }
  }

  private boolean isEmpty(ColumnFamilyHandle family) {
    try (RocksIterator it = db.newIterator(family)) {
      it.seekToFirst();
      return !it.isValid();
    }
  }

  private static RuntimeException openFailure(String path, boolean follower, RocksDBException e) {
    String message = String.valueOf(e.getMessage());
    // RocksDB's words for a held LOCK file: another process, or another open in this JVM.
    if (message.contains("lock hold by current process")) {
      return new CatalogLockedException(path, true, e);
    }
    if (message.contains("While lock file")) {
      return new CatalogLockedException(path, false, e);
    }
    if (follower) {
      return new IllegalStateException(
          "cannot follow the skade catalog at " + path + " read-only: " + message, e);
    }
    return new IllegalArgumentException(
        "cannot open the skade catalog at "
            + path
            + " (catalog.path): "
            + message
            + "; check that the directory is writable and not used by anything else",
        e);
  }

  String path() {
    return path;
  }

  boolean isFollower() {
    return follower;
  }

  /** A follower catches up with the owner's WAL and flushed files; a no-op for the owner. */
  void catchUp() {
    if (follower) {
      guarded(
          () -> {
            synchronized (this) {
              db.tryCatchUpWithPrimary();
            }
            return null;
          });
    }
  }

  /** How many times RocksDB synced its WAL since this store was opened. */
  long walSyncs() {
    return guarded(() -> statistics.getTickerCount(TickerType.WAL_FILE_SYNCED));
  }

  // ---- reads -------------------------------------------------------------------------------

  long commitSeq() {
    byte[] value = get(meta, META_COMMIT_SEQ);
    return value == null ? 0 : ByteBuffer.wrap(value).getLong();
  }

  TablePointer pointer(String tableKey) {
    byte[] value = get(tables, TableKeys.bytes(tableKey));
    return value == null ? null : StoreRecords.decodePointer(value);
  }

  /** Keys of the tables whose key starts with {@code prefix}, in key order. */
  List<String> tableKeys(String prefix) {
    return keysWithPrefix(tables, prefix);
  }

  Map<String, String> namespace(String namespaceKey) {
    byte[] value = get(namespaces, TableKeys.bytes(namespaceKey));
    return value == null ? null : StoreRecords.decodeProperties(value);
  }

  List<String> namespaceKeys(String prefix) {
    return keysWithPrefix(namespaces, prefix);
  }

  StoredConsumer consumer(String consumerId) {
    byte[] value = get(consumers, TableKeys.bytes(TableKeys.consumerKey(consumerId)));
    return value == null ? null : StoreRecords.decodeConsumer(consumerId, value);
  }

  /** Every stored consumer id, in key order. */
  List<String> consumerIds() {
    return keysWithPrefix(consumers, "");
  }

  List<CommitEvent> commitsSince(long after, int limit) {
    if (limit <= 0) {
      throw new IllegalArgumentException("commitsSince: limit must be positive, got " + limit);
    }
    if (after == Long.MAX_VALUE) {
      return List.of();
    }
    byte[] start = longBytes(Math.max(after, 0) + 1);
    return guarded(
        () -> {
          List<CommitEvent> page = new ArrayList<>(Math.min(limit, 1024));
          try (RocksIterator it = db.newIterator(commitLog)) {
            for (it.seek(start); it.isValid() && page.size() < limit; it.next()) {
              page.add(StoreRecords.decodeEvent(ByteBuffer.wrap(it.key()).getLong(), it.value()));
            }
            it.status();
          }
          return page;
        });
  }

  /** The {@code commitSeq} that added {@code snapshotId} to the table, or -1 when unknown. */
  long commitSeqOfSnapshot(String tableKey, long snapshotId) {
    byte[] value = get(commits, snapshotKey(tableKey, snapshotId));
    return value == null ? -1 : ByteBuffer.wrap(value).getLong();
  }

  private List<String> keysWithPrefix(ColumnFamilyHandle family, String prefix) {
    byte[] start = TableKeys.bytes(prefix);
    return guarded(
        () -> {
          List<String> keys = new ArrayList<>();
          try (RocksIterator it = db.newIterator(family)) {
            for (it.seek(start); it.isValid() && startsWith(it.key(), start); it.next()) {
              keys.add(TableKeys.string(it.key()));
            }
            it.status();
          }
          return keys;
        });
  }

  private byte[] get(ColumnFamilyHandle family, byte[] key) {
    return guarded(() -> db.get(family, key));
  }

  interface StoreCall<T> {
    T call() throws RocksDBException;
  }

  /** Runs a call on the open DB; after {@link #close} it fails cleanly instead of crashing. */
  private <T> T guarded(StoreCall<T> call) {
    Lock shared = lifecycle.readLock();
    shared.lock();
    try {
      if (closed) {
        throw new IllegalStateException("the skade catalog at " + path + " is closed");
      }
      return call.call();
    } catch (RocksDBException e) {
      throw new IllegalStateException(
          "cannot use the skade catalog at " + path + ": " + e.getMessage(), e);
    } finally {
      shared.unlock();
    }
  }

  // ---- the one write -----------------------------------------------------------------------

  /** Everything one group commit changes; built by the committer, written by {@link #write}. */
  static final class Batch {
    /** Table pointers to write; a null value removes the pointer. */
    final Map<String, TablePointer> pointers = new LinkedHashMap<>();

    /** Namespace properties to write; a null value removes the namespace. */
    final Map<String, Map<String, String>> namespaces = new LinkedHashMap<>();

    /** Log rows, in {@code commitSeq} order. */
    final List<CommitEvent> commits = new ArrayList<>();

    /** For each {@link CommitOperation#RENAME_TO} row's {@code commitSeq}, the old table key. */
    final Map<Long, String> renamedFrom = new HashMap<>();

    /** Consumer rows to write (keyed by id); a null value removes the consumer. */
    final Map<String, StoredConsumer> consumers = new LinkedHashMap<>();

    /** Idempotency keys to write; a null value removes the key. */
    final Map<String, IdempotencyRecord> idempotency = new LinkedHashMap<>();

    /** Table locks to write (keyed by {@link #lockKey}); a null value releases the lock. */
    final Map<String, MaintenanceLock> locks = new LinkedHashMap<>();

    boolean isEmpty() {
      return pointers.isEmpty()
          && namespaces.isEmpty()
          && commits.isEmpty()
          && consumers.isEmpty()
          && idempotency.isEmpty()
          && locks.isEmpty();
    }
  }

  /**
   * Writes a group in one {@link WriteBatch} with {@code sync=true}: pointers, namespaces,
   * consumers, one log row per commit, the snapshot index, and the new {@code commitSeq}. When this
   * returns the group is durable and visible to every read; when it throws, the outcome is unknown.
   */
  void write(Batch group) {
    if (follower) {
      throw new UnsupportedOperationException("a follower never writes");
    }
    long replicated =
        guarded(
            () -> {
              try (WriteBatch batch = build(group)) {
                long seq = replicationLog.stage(batch);
                db.write(syncWrite, batch);
                replicationLog.written(seq);
                return seq;
              }
            });
    ReplicationGate gate = replicationLog.gate();
    if (replicated > 0 && gate != null) {
      try {
        gate.awaitReplicated(replicated); // outside the lifecycle lock: a close need not wait
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(notReplicated(replicated), e);
      } catch (Exception e) {
        throw new IllegalStateException(notReplicated(replicated) + ": " + e.getMessage(), e);
      }
    }
  }

  private String notReplicated(long seq) {
    return "the group commit (replication batch "
        + seq
        + ") is durable in the catalog at "
        + path
        + " but no standby acknowledged it";
  }

  /** The write batch of a group: every row it changes. */
  private WriteBatch build(Batch group) throws RocksDBException {
    WriteBatch batch = new WriteBatch();
    try {
      putOrDelete(batch, tables, group.pointers, StoreRecords::encodePointer);
      putOrDelete(batch, namespaces, group.namespaces, StoreRecords::encodeProperties);
      putOrDelete(batch, consumers, group.consumers, StoreRecords::encodeConsumer);
      putOrDelete(batch, idempotency, group.idempotency, StoreRecords::encodeIdempotency);
      putOrDelete(batch, meta, group.locks, StoreRecords::encodeLock);
      SnapshotIndex index = new SnapshotIndex(batch);
      for (CommitEvent commit : group.commits) {
        batch.put(commitLog, longBytes(commit.commitSeq()), StoreRecords.encodeEvent(commit));
        index.apply(commit, group.renamedFrom.get(commit.commitSeq()));
      }
      if (!group.commits.isEmpty()) {
        long lastSeq = group.commits.get(group.commits.size() - 1).commitSeq();
        batch.put(meta, META_COMMIT_SEQ, longBytes(lastSeq));
      }
      return batch;
    } catch (RocksDBException | RuntimeException e) {
      batch.close();
      throw e;
    }
  }

  // ---- replication -------------------------------------------------------------------------

  /** This store's replication log. */
  ReplicationLog replicationLog() {
    return replicationLog;
  }

  /** Reads the replication log under the lifecycle lock. */
  <T> T replicationRead(StoreCall<T> read) {
    return guarded(read);
  }

  /** Applies a batch a leader wrote (a standby's store). */
  void applyReplicated(ReplicatedBatch batch) {
    guarded(
        () -> {
          replicationLog.apply(batch, syncWrite);
          return null;
        });
  }

  /**
   * Writes a consistent copy of the store into {@code dir} (which must not exist): RocksDB's
   * checkpoint, hard links where it can.
   */
  void checkpoint(Path dir) {
    guarded(
        () -> {
          try (org.rocksdb.Checkpoint checkpoint = org.rocksdb.Checkpoint.create(db)) {
            checkpoint.createCheckpoint(dir.toAbsolutePath().toString());
          }
          return null;
        });
  }

  /** Puts each row of {@code rows} into {@code family}, or deletes it when its value is null. */
  private static <V> void putOrDelete(
      WriteBatch batch, ColumnFamilyHandle family, Map<String, V> rows, Function<V, byte[]> encoder)
      throws RocksDBException {
    for (Map.Entry<String, V> e : rows.entrySet()) {
      byte[] key = TableKeys.bytes(e.getKey());
      if (e.getValue() == null) {
        batch.delete(family, key);
      } else {
        batch.put(family, key, encoder.apply(e.getValue()));
      }
    }
  }

  /**
   * The {@code (table, snapshot) → commitSeq} rows of one batch, applied in {@code commitSeq}
   * order. A WriteBatch applies its operations in order, so a drop's range delete removes rows put
   * before it in the batch and not those put after; a rename moves the stored rows plus those this
   * batch added, since the stored rows alone do not show them.
   */
  private final class SnapshotIndex {
    private final WriteBatch batch;
    private final Map<String, Map<Long, byte[]>> added = new HashMap<>();
    private final Set<String> cleared = new HashSet<>();

    SnapshotIndex(WriteBatch batch) {
      this.batch = batch;
    }

    void apply(CommitEvent commit, String renamedFrom) throws RocksDBException {
      String key = commit.tableKey();
      switch (commit.operation()) {
        case DROP -> clear(key);
        case RENAME_FROM -> {} // the rows move with the RENAME_TO row that follows
        case RENAME_TO -> {
          Map<Long, byte[]> rows = new LinkedHashMap<>();
          if (!cleared.contains(renamedFrom)) {
            rows.putAll(stored(renamedFrom));
          }
          rows.putAll(added.getOrDefault(renamedFrom, Map.of()));
          clear(renamedFrom);
          for (Map.Entry<Long, byte[]> row : rows.entrySet()) {
            put(key, row.getKey(), row.getValue());
          }
        }
        default -> {
          for (long snapshotId : commit.addedSnapshotIds()) {
            put(key, snapshotId, longBytes(commit.commitSeq()));
          }
        }
      }
    }

    private void put(String tableKey, long snapshotId, byte[] seq) throws RocksDBException {
      batch.put(commits, snapshotKey(tableKey, snapshotId), seq);
      added.computeIfAbsent(tableKey, k -> new LinkedHashMap<>()).put(snapshotId, seq);
    }

    private void clear(String tableKey) throws RocksDBException {
      batch.deleteRange(commits, snapshotPrefix(tableKey), snapshotPrefixEnd(tableKey));
      added.remove(tableKey);
      cleared.add(tableKey);
    }

    private Map<Long, byte[]> stored(String tableKey) throws RocksDBException {
      byte[] prefix = snapshotPrefix(tableKey);
      Map<Long, byte[]> rows = new LinkedHashMap<>();
      try (RocksIterator it = db.newIterator(commits)) {
        for (it.seek(prefix); it.isValid() && startsWith(it.key(), prefix); it.next()) {
          rows.put(ByteBuffer.wrap(it.key(), prefix.length, Long.BYTES).getLong(), it.value());
        }
        it.status();
      }
      return rows;
    }
  }

  private static byte[] snapshotPrefix(String tableKey) {
    byte[] key = TableKeys.bytes(tableKey);
    return Arrays.copyOf(key, key.length + 1); // table key, then 0x00 (never inside a key)
  }

  private static byte[] snapshotPrefixEnd(String tableKey) {
    byte[] end = snapshotPrefix(tableKey);
    end[end.length - 1] = 1;
    return end;
  }

  private static byte[] snapshotKey(String tableKey, long snapshotId) {
    byte[] prefix = snapshotPrefix(tableKey);
    return ByteBuffer.allocate(prefix.length + Long.BYTES).put(prefix).putLong(snapshotId).array();
  }

  // ---- locks and idempotency keys ---------------------------------------------------------

  /** The key of the lock {@code name} of {@code table} in the {@code meta} family. */
  static String lockKey(TableIdentifier table, String name) {
    return META_LOCK_PREFIX + TableKeys.tableKey(table) + "\0" + name;
  }

  /** The lock {@code name} of {@code table}, or null when no one holds it. */
  MaintenanceLock lock(TableIdentifier table, String name) {
    byte[] value = get(meta, TableKeys.bytes(lockKey(table, name)));
    return value == null ? null : StoreRecords.decodeLock(table, name, value);
  }

  /** What was committed under an idempotency key, or null. */
  IdempotencyRecord idempotency(String key) {
    byte[] value = get(idempotency, TableKeys.bytes(key));
    return value == null ? null : StoreRecords.decodeIdempotency(key, value);
  }

  /** Every stored idempotency key. */
  List<String> idempotencyKeys() {
    return keysWithPrefix(idempotency, "");
  }

  // ---- key encodings -----------------------------------------------------------------------

  static byte[] longBytes(long value) {
    return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
  }

  private static byte[] intBytes(int value) {
    return ByteBuffer.allocate(Integer.BYTES).putInt(value).array();
  }

  private static boolean startsWith(byte[] key, byte[] prefix) {
    if (key.length < prefix.length) {
      return false;
    }
    return Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }

  @Override
  public void close() {
    Lock exclusive = lifecycle.writeLock();
    exclusive.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      syncWrite.close();
      for (ColumnFamilyHandle handle : handles) {
        handle.close();
      }
      db.close();
      familyOptions.close();
      options.close();
      statistics.close();
    } finally {
      exclusive.unlock();
    }
  }
}
