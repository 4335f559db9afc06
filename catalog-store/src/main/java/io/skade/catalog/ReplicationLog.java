package io.skade.catalog;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;

/**
 * The replication log of a store: in family {@code replication}, {@code seq → epoch, write batch},
 * one row per group commit written while a {@link ReplicationGate} is set (the leader of a server
 * group), and per batch applied from a leader (a standby). Its last {@code seq} is in the {@code
 * meta} family, written in the same batch as the row, so a store's log and its state never part.
 * The oldest rows are trimmed: a standby further behind installs a checkpoint instead.
 *
 * <p>The leader's newest batches are also kept in memory, from the moment they are staged: a
 * standby's fetch is answered from there, before the leader's own synced write of the batch ends.
 */
final class ReplicationLog {
  static final String FAMILY = "replication";

  /** Rows kept at least; older ones are removed in the batch that passes a multiple of 1,024. */
  static final long RETAINED = 100_000;

  /** The newest batches kept in memory: at most this many, and about this many bytes. */
  private static final int RECENT_BATCHES = 1024;

  private static final long RECENT_BYTES = 16L * 1024 * 1024;

  private static final byte[] META_SEQ = TableKeys.bytes("replication_seq");

  private final RocksDB db;
  private final ColumnFamilyHandle log;
  private final ColumnFamilyHandle meta;
  private volatile ReplicationGate gate;
  private long lastSeq;

  /** The last batch staged: {@link #lastSeq}, or the one whose write is under way. */
  private long stagedSeq;

  /** Staged batches, oldest first, ending at {@link #stagedSeq}. */
  private final ArrayDeque<ReplicatedBatch> recent = new ArrayDeque<>();

  private long recentBytes;

  ReplicationLog(RocksDB db, ColumnFamilyHandle log, ColumnFamilyHandle meta)
      throws RocksDBException {
    this.db = db;
    this.log = log;
    this.meta = meta;
    byte[] seq = db.get(meta, META_SEQ);
    this.lastSeq = seq == null ? 0 : ByteBuffer.wrap(seq).getLong();
    this.stagedSeq = lastSeq;
  }

  void gate(ReplicationGate gate) {
    this.gate = gate;
  }

  ReplicationGate gate() {
    return gate;
  }

  synchronized long lastSeq() {
    return lastSeq;
  }

  synchronized long stagedSeq() {
    return stagedSeq;
  }

  /**
   * Adds {@code batch}'s own content to the log, in {@code batch}, when a gate is set, and offers
   * it to the gate; returns the row's {@code seq}, or 0 when nothing is logged. Called by the one
   * writer, before its write; after a failed write it stages nothing more (its committer stops).
   */
  synchronized long stage(WriteBatch batch) throws RocksDBException {
    ReplicationGate current = gate;
    if (current == null) {
      return 0;
    }
    ReplicatedBatch staged = new ReplicatedBatch(stagedSeq + 1, current.epoch(), batch.data());
    put(batch, staged);
    recent.addLast(staged);
    recentBytes += staged.data().length;
    while (recent.size() > RECENT_BATCHES || (recent.size() > 1 && recentBytes > RECENT_BYTES)) {
      recentBytes -= recent.removeFirst().data().length;
    }
    stagedSeq = staged.seq();
    current.offered(stagedSeq);
    return stagedSeq;
  }

  /** After the write of a staged batch: it is durable here. */
  synchronized void written(long seq) {
    lastSeq = Math.max(lastSeq, seq);
  }

  /**
   * Applies a batch a leader wrote: its content, its row and the log's new end, in one synced
   * write.
   *
   * @throws IllegalStateException when it is not the next batch
   */
  synchronized void apply(ReplicatedBatch replicated, org.rocksdb.WriteOptions sync)
      throws RocksDBException {
    if (replicated.seq() != lastSeq + 1) {
      throw new IllegalStateException(
          "replicated batch "
              + replicated.seq()
              + " does not follow this replica's last batch "
              + lastSeq
              + "; batches are applied in order, without gaps");
    }
    try (WriteBatch batch = new WriteBatch(replicated.data())) {
      put(batch, replicated);
      db.write(sync, batch);
    }
    lastSeq = replicated.seq();
    stagedSeq = lastSeq;
  }

  private void put(WriteBatch batch, ReplicatedBatch replicated) throws RocksDBException {
    byte[] data = replicated.data();
    byte[] row =
        ByteBuffer.allocate(Long.BYTES + data.length).putLong(replicated.epoch()).put(data).array();
    batch.put(log, CatalogStore.longBytes(replicated.seq()), row);
    batch.put(meta, META_SEQ, CatalogStore.longBytes(replicated.seq()));
    if (replicated.seq() % 1024 == 0 && replicated.seq() > RETAINED) {
      batch.deleteRange(
          log, CatalogStore.longBytes(0), CatalogStore.longBytes(replicated.seq() - RETAINED));
    }
  }

  /**
   * The rows after {@code after}, oldest first, at most {@code maxBatches} and about {@code
   * maxBytes}.
   */
  List<ReplicatedBatch> since(long after, int maxBatches, long maxBytes) throws RocksDBException {
    List<ReplicatedBatch> batches = new ArrayList<>();
    long bytes = 0;
    synchronized (this) {
      if (!recent.isEmpty() && recent.getFirst().seq() <= after + 1) {
        for (ReplicatedBatch batch : recent) {
          if (batches.size() == maxBatches || !batches.isEmpty() && bytes >= maxBytes) {
            break;
          }
          if (batch.seq() > after) {
            batches.add(batch);
            bytes += batch.data().length;
          }
        }
        return batches;
      }
    }
    try (RocksIterator it = db.newIterator(log)) {
      for (it.seek(CatalogStore.longBytes(after + 1));
          it.isValid() && batches.size() < maxBatches && (batches.isEmpty() || bytes < maxBytes);
          it.next()) {
        ReplicatedBatch batch = decode(it.key(), it.value());
        batches.add(batch);
        bytes += batch.data().length;
      }
      it.status();
    }
    return batches;
  }

  /** The epoch of row {@code seq}, or -1 when the log has no such row (trimmed, or not yet). */
  long epochAt(long seq) throws RocksDBException {
    synchronized (this) {
      for (Iterator<ReplicatedBatch> it = recent.descendingIterator(); it.hasNext(); ) {
        ReplicatedBatch batch = it.next();
        if (batch.seq() == seq) {
          return batch.epoch(); // perhaps not durable here yet: its write is under way
        }
      }
    }
    byte[] row = db.get(log, CatalogStore.longBytes(seq));
    return row == null ? -1 : ByteBuffer.wrap(row).getLong();
  }

  /** The oldest row's {@code seq}, or {@code lastSeq + 1} when the log holds none. */
  long firstSeq() {
    try (RocksIterator it = db.newIterator(log)) {
      it.seekToFirst();
      return it.isValid() ? ByteBuffer.wrap(it.key()).getLong() : lastSeq() + 1;
    }
  }

  private static ReplicatedBatch decode(byte[] key, byte[] row) {
    ByteBuffer value = ByteBuffer.wrap(row);
    long epoch = value.getLong();
    byte[] data = new byte[value.remaining()];
    value.get(data);
    return new ReplicatedBatch(ByteBuffer.wrap(key).getLong(), epoch, data);
  }
}
