package io.skade.maintenance;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotAncestryValidator;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;

/**
 * A table whose rewrites (compactions) also remove the delete files they leave dangling (see
 * {@link DanglingDeletes}), in the same {@code replace} snapshot: what the rewrite of Iceberg's
 * Flink maintenance commits becomes data files with their deletes folded in. Everything else is
 * the table's own.
 *
 * <p>The dangling deletes are found when the rewrite commits, against the table as it is then
 * and the files the rewrite removes and adds; a commit of new rows meanwhile only adds files
 * with higher sequence numbers, which no removed delete would have applied to.
 */
public final class FoldingTable extends BaseTable {
  private static final long serialVersionUID = 1L;

  /** {@code table}, with its rewrites folding deletes. */
  public static Table of(Table table) {
    if (table instanceof FoldingTable || !(table instanceof BaseTable base)) {
      return table;
    }
    return new FoldingTable(base.operations(), base.name());
  }

  private FoldingTable(TableOperations operations, String name) {
    super(operations, name);
  }

  @Override
  public RewriteFiles newRewrite() {
    return new FoldingRewrite(super.newRewrite(), operations());
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
    public RewriteFiles rewriteFiles(Set<DataFile> data, Set<DeleteFile> deletes,
        Set<DataFile> newData, Set<DeleteFile> newDeletes) {
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
        Snapshot head = current.snapshot(current.ref(branch) == null ? -1
            : current.ref(branch).snapshotId());
        DanglingDeletes.after(current, head, operations.io(), removed, added, dataSequence)
            .forEach(rewrite::deleteFile);
      }
      rewrite.commit();
    }
  }
}
