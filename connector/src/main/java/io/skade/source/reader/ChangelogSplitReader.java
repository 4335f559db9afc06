package io.skade.source.reader;

import io.skade.changelog.ChangelogBatch;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.changelog.MetadataCache;
import io.skade.source.split.ChangelogSplit;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Queue;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.io.FileIO;

/**
 * Reads changelog splits one at a time, in the order they were assigned (so one reader emits
 * the changes of its ordering units in commit order), each from where it was left: a split is
 * opened from its own metadata file with the table's file IO (never the catalog), its first
 * {@code emitted} changes are skipped, and the rest are fetched in bounded batches. A split is
 * finished when it has no change left.
 */
public final class ChangelogSplitReader implements SplitReader<ChangeRecord, ChangelogSplit> {
  private final FileIO io;
  private final ChangelogOptions options;
  private final int batchRows;
  /** How many queued windows' metadata is read ahead. */
  private static final int PREFETCH_SPLITS = 2;
  private final Queue<ChangelogSplit> assigned = new ArrayDeque<>();
  private final BufferAllocator allocator = new RootAllocator();
  private ChangelogSplit current;
  private Table table;
  private CloseableIterator<ChangelogBatch> batches;
  private long emitted;

  /**
   * @param io the table's file IO
   * @param options how windows are read (mode, before-images, projection, filter)
   * @param batchRows the most changes one fetch returns (one more to keep an update pair whole)
   */
  public ChangelogSplitReader(FileIO io, ChangelogOptions options, int batchRows) {
    this.io = io;
    this.options = options;
    this.batchRows = batchRows;
  }

  @Override
  public RecordsWithSplitIds<ChangeRecord> fetch() throws IOException {
    RecordsBySplits.Builder<ChangeRecord> records = new RecordsBySplits.Builder<>();
    if (current == null && !open()) {
      return records.build(); // nothing assigned
    }
    String splitId = current.splitId();
    if (batches.hasNext()) {
      try (ChangelogBatch batch = batches.next()) {
        long snapshotId = -1;
        long commitMillis = 0;
        for (int i = 0; i < batch.rowCount(); i++) {
          if (batch.snapshotId(i) != snapshotId) {
            snapshotId = batch.snapshotId(i);
            commitMillis = table.snapshot(snapshotId).timestampMillis();
          }
          emitted++;
          records.add(splitId, new ChangeRecord(batch.rowData(i), snapshotId, commitMillis,
              emitted));
        }
      }
    }
    if (!batches.hasNext()) {
      records.addFinishedSplit(splitId);
      closeCurrent();
    }
    return records.build();
  }

  /** Opens the next assigned split; false when there is none. */
  private boolean open() {
    ChangelogSplit next = assigned.poll();
    if (next == null) {
      return false;
    }
    table = MetadataCache.shared().table(next.metadataLocation(), io, next.tableKey());
    ChangelogReader reader = new ChangelogReader(table,
        options.withFilter(Expressions.and(options.filter(), next.filter())));
    batches = next.fullSnapshot()
        ? reader.readSnapshotBatches(next.toSnapshotId(), allocator, batchRows, next.emitted())
        : reader.readBatches(next.fromExclusive(), next.toSnapshotId(), allocator, batchRows,
            next.emitted());
    current = next;
    emitted = next.emitted();
    prefetchNext();
    return true;
  }

  /** Warms the metadata of the next assigned windows while this one is read. */
  private void prefetchNext() {
    assigned.stream().limit(PREFETCH_SPLITS).forEach(split -> MetadataCache.shared().prefetch(
        split.metadataLocation(), io, split.tableKey(), split.toSnapshotId()));
  }

  private void closeCurrent() throws IOException {
    batches.close();
    batches = null;
    current = null;
  }

  @Override
  public void handleSplitsChanges(SplitsChange<ChangelogSplit> change) {
    if (!(change instanceof SplitsAddition)) {
      throw new UnsupportedOperationException("a skade reader only takes new splits, got "
          + change.getClass().getSimpleName());
    }
    assigned.addAll(change.splits());
  }

  @Override
  public void wakeUp() {
    // A fetch reads at most one bounded batch and never blocks waiting: nothing to interrupt.
  }

  @Override
  public void close() throws Exception {
    if (batches != null) {
      closeCurrent();
    }
    allocator.close();
  }
}
