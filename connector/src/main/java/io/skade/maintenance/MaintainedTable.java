package io.skade.maintenance;

import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.StoredConsumer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ExpireSnapshots;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotAncestryValidator;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.util.PropertyUtil;

/**
 * A table as skade's maintenance sees it; everything not named here is the table's own.
 *
 * <ul>
 *   <li>Its rewrites (compactions) also remove the delete files they leave dangling (see {@link
 *       DanglingDeletes}), in the same {@code replace} snapshot: what the rewrite of Iceberg's
 *       Flink maintenance commits becomes data files with their deletes folded in. The dangling
 *       deletes are found when the rewrite commits, against the table as it is then and the files
 *       the rewrite removes and adds; a commit of new rows meanwhile only adds files with higher
 *       sequence numbers, which no removed delete would have applied to.
 *   <li>Its snapshot expiries stop short of the oldest snapshot a stored consumer still needs,
 *       instead of being refused whole by the catalog's expiry guard: maintenance keeps expiring
 *       what may go while a consumer lags. (The guard still refuses anything else.)
 *   <li>Its snapshot expiries never delete a file a live snapshot's deletes are in: on format v3
 *       one Puffin file holds the deletion vectors of several data files, and Iceberg's incremental
 *       cleanup deletes it once an expired snapshot removed one of them (see {@link
 *       LiveDeletionVectors}).
 * </ul>
 */
public final class MaintainedTable extends BaseTable {
  private static final long serialVersionUID = 1L;

  private final transient Supplier<List<StoredConsumer>> consumers;

  /** {@code table}, maintained; {@code consumers} lists the stored consumers of the table. */
  public static Table of(Table table, Supplier<List<StoredConsumer>> consumers) {
    if (table instanceof MaintainedTable || !(table instanceof BaseTable base)) {
      return table;
    }
    return new MaintainedTable(base.operations(), base.name(), consumers);
  }

  private MaintainedTable(
      TableOperations operations, String name, Supplier<List<StoredConsumer>> consumers) {
    super(operations, name);
    this.consumers = consumers;
  }

  @Override
  public RewriteFiles newRewrite() {
    return new FoldingRewrite(super.newRewrite(), operations());
  }

  @Override
  public ExpireSnapshots expireSnapshots() {
    return new ConsumerBoundExpiry(super.expireSnapshots(), operations(), consumers);
  }

  /**
   * Iceberg's expiry, whose age limit is lowered at commit to the timestamp of the oldest snapshot
   * a consumer of this table still needs (a consumer that has seen no snapshot yet needs all of
   * them: then nothing expires). Consumers are counted whether or not the catalog still deems them
   * live: a consumer gone for good holds maintenance back until it is dropped.
   */
  private static final class ConsumerBoundExpiry implements ExpireSnapshots {
    private final ExpireSnapshots expiry;
    private final TableOperations operations;
    private final Supplier<List<StoredConsumer>> consumers;
    private Long olderThan;
    private Consumer<String> delete;

    ConsumerBoundExpiry(
        ExpireSnapshots expiry,
        TableOperations operations,
        Supplier<List<StoredConsumer>> consumers) {
      this.expiry = expiry;
      this.operations = operations;
      this.consumers = consumers;
    }

    @Override
    public ExpireSnapshots expireSnapshotId(long snapshotId) {
      expiry.expireSnapshotId(snapshotId);
      return this;
    }

    @Override
    public ExpireSnapshots expireOlderThan(long timestampMillis) {
      this.olderThan = timestampMillis;
      return this;
    }

    @Override
    public ExpireSnapshots retainLast(int count) {
      expiry.retainLast(count);
      return this;
    }

    @Override
    public ExpireSnapshots deleteWith(Consumer<String> delete) {
      this.delete = delete;
      return this;
    }

    @Override
    public ExpireSnapshots executeDeleteWith(ExecutorService executor) {
      expiry.executeDeleteWith(executor);
      return this;
    }

    @Override
    public ExpireSnapshots planWith(ExecutorService executor) {
      expiry.planWith(executor);
      return this;
    }

    @Override
    public ExpireSnapshots cleanExpiredFiles(boolean clean) {
      expiry.cleanExpiredFiles(clean);
      return this;
    }

    @Override
    public ExpireSnapshots cleanupLevel(CleanupLevel level) {
      expiry.cleanupLevel(level);
      return this;
    }

    @Override
    public ExpireSnapshots cleanExpiredMetadata(boolean clean) {
      expiry.cleanExpiredMetadata(clean);
      return this;
    }

    @Override
    public List<Snapshot> apply() {
      bound();
      return expiry.apply();
    }

    @Override
    public void commit() {
      if (bound()) {
        Consumer<String> keeping = LiveDeletionVectors.keeping(operations, delete);
        if (keeping != null) {
          expiry.deleteWith(keeping);
        }
        expiry.commit();
      }
    }

    /** Applies the age limit lowered for the consumers; false when nothing may expire. */
    private boolean bound() {
      TableMetadata current = operations.refresh();
      // Iceberg's own default limit, when none was set.
      long limit =
          olderThan != null
              ? olderThan
              : System.currentTimeMillis()
                  - PropertyUtil.propertyAsLong(
                      current.properties(),
                      TableProperties.MAX_SNAPSHOT_AGE_MS,
                      TableProperties.MAX_SNAPSHOT_AGE_MS_DEFAULT);
      for (StoredConsumer consumer : consumers.get()) {
        ConsumerCursor cursor = consumer.cursor();
        if (!cursor.tableUuid().equals(current.uuid())) {
          continue;
        }
        if (cursor.snapshotId() == ConsumerCursor.NO_SNAPSHOT) {
          return false;
        }
        Snapshot needed = current.snapshot(cursor.snapshotId());
        if (needed != null) {
          limit = Math.min(limit, needed.timestampMillis());
        }
      }
      expiry.expireOlderThan(limit);
      return true;
    }
  }

  /** Iceberg's rewrite, with the deletes it leaves dangling removed when it commits. */
  private static final class FoldingRewrite implements RewriteFiles {
    private final RewriteFiles rewrite;
    private final TableOperations operations;
    private final Set<String> removed = new HashSet<>();
    private final List<DataFile> added = new ArrayList<>();
    private Long dataSequence;
    private String branch = SnapshotRef.MAIN_BRANCH;

    FoldingRewrite(RewriteFiles rewrite, TableOperations operations) {
      this.rewrite = rewrite;
      this.operations = operations;
    }

    @Override
    public RewriteFiles deleteFile(DataFile file) {
      removed.add(file.location());
      rewrite.deleteFile(file);
      return this;
    }

    @Override
    public RewriteFiles deleteFile(DeleteFile file) {
      rewrite.deleteFile(file);
      return this;
    }

    @Override
    public RewriteFiles addFile(DataFile file) {
      added.add(file);
      rewrite.addFile(file);
      return this;
    }

    @Override
    public RewriteFiles addFile(DeleteFile file) {
      rewrite.addFile(file);
      return this;
    }

    @Override
    public RewriteFiles addFile(DeleteFile file, long sequence) {
      rewrite.addFile(file, sequence);
      return this;
    }

    @Override
    public RewriteFiles dataSequenceNumber(long sequence) {
      this.dataSequence = sequence;
      rewrite.dataSequenceNumber(sequence);
      return this;
    }

    @Override
    public RewriteFiles rewriteFiles(Set<DataFile> data, Set<DataFile> newData, long sequence) {
      data.forEach(this::deleteFile);
      newData.forEach(this::addFile);
      return dataSequenceNumber(sequence);
    }

    @Override
    public RewriteFiles rewriteFiles(
        Set<DataFile> data,
        Set<DeleteFile> deletes,
        Set<DataFile> newData,
        Set<DeleteFile> newDeletes) {
      data.forEach(this::deleteFile);
      deletes.forEach(this::deleteFile);
      newData.forEach(this::addFile);
      newDeletes.forEach(this::addFile);
      return this;
    }

    @Override
    public RewriteFiles validateFromSnapshot(long snapshotId) {
      rewrite.validateFromSnapshot(snapshotId);
      return this;
    }

    @Override
    public RewriteFiles set(String property, String value) {
      rewrite.set(property, value);
      return this;
    }

    @Override
    public RewriteFiles deleteWith(Consumer<String> deleteFunc) {
      rewrite.deleteWith(deleteFunc);
      return this;
    }

    @Override
    public RewriteFiles stageOnly() {
      rewrite.stageOnly();
      return this;
    }

    @Override
    public RewriteFiles scanManifestsWith(ExecutorService executor) {
      rewrite.scanManifestsWith(executor);
      return this;
    }

    @Override
    public RewriteFiles toBranch(String name) {
      this.branch = name;
      rewrite.toBranch(name);
      return this;
    }

    @Override
    public RewriteFiles validateWith(SnapshotAncestryValidator validator) {
      rewrite.validateWith(validator);
      return this;
    }

    @Override
    public Snapshot apply() {
      return rewrite.apply();
    }

    @Override
    public Object updateEvent() {
      return rewrite.updateEvent();
    }

    @Override
    public void commit() {
      if (!removed.isEmpty()) {
        TableMetadata current = operations.refresh();
        SnapshotRef ref = current.ref(branch);
        Snapshot head = ref == null ? null : current.snapshot(ref.snapshotId());
        DanglingDeletes.after(current, head, operations.io(), removed, added, dataSequence)
            .forEach(rewrite::deleteFile);
      }
      rewrite.commit();
    }
  }
}
