package io.skade.catalog;

import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.relocated.com.google.common.util.concurrent.MoreExecutors;

/**
 * A table of a skade catalog: Iceberg's own, but for where an append does its manifest work — in
 * the committing thread instead of Iceberg's worker pool — and for its appends telling the commit
 * which files they add ({@link KnownAppend}).
 *
 * <p>Why: Iceberg runs each step of a commit's manifest work (filtering, merging, the manifest
 * list's entries) as tasks on its worker pool and waits for them by polling with a 10 ms sleep
 * ({@code Tasks.waitFor}), three to four times an append. An append's steps are small — it deletes
 * nothing, merges one bin of manifests at most, and reads only manifests it writes — so the sleeps
 * were nearly all of the time between an attempt's refresh and its swap: 33-50 ms, in which another
 * writer's commit made the attempt lose. Run in the caller, an append takes 15 ms (median, one
 * writer, local disk), and 16 writers appending to one table commit about twice as fast ({@code
 * CommitBenchmark}'s contended cells). Operations that filter many manifests (overwrites, row
 * deltas, rewrites) keep the pool, where reading manifests in parallel pays.
 */
final class SkadeTable extends BaseTable {
  private static final long serialVersionUID = 1L;

  /** Runs each task in the thread that submits it. */
  private static final ExecutorService IN_CALLER = MoreExecutors.newDirectExecutorService();

  private SkadeTable(BaseTable table) {
    super(table.operations(), table.name(), table.reporter());
  }

  /** {@code table} as a skade table; a metadata table or any other kind stays as it is. */
  static Table of(Table table) {
    return table.getClass() == BaseTable.class ? new SkadeTable((BaseTable) table) : table;
  }

  @Override
  public AppendFiles newAppend() {
    return new KnownAppend(super.newAppend().scanManifestsWith(IN_CALLER), operations());
  }

  @Override
  public AppendFiles newFastAppend() {
    return new KnownAppend(super.newFastAppend().scanManifestsWith(IN_CALLER), operations());
  }

  /** A table builder whose {@link #create} returns a skade table. */
  static final class Builder implements Catalog.TableBuilder {
    private final Catalog.TableBuilder builder;

    Builder(Catalog.TableBuilder builder) {
      this.builder = builder;
    }

    @Override
    public Catalog.TableBuilder withPartitionSpec(PartitionSpec spec) {
      builder.withPartitionSpec(spec);
      return this;
    }

    @Override
    public Catalog.TableBuilder withSortOrder(SortOrder sortOrder) {
      builder.withSortOrder(sortOrder);
      return this;
    }

    @Override
    public Catalog.TableBuilder withLocation(String location) {
      builder.withLocation(location);
      return this;
    }

    @Override
    public Catalog.TableBuilder withProperties(Map<String, String> properties) {
      builder.withProperties(properties);
      return this;
    }

    @Override
    public Catalog.TableBuilder withProperty(String key, String value) {
      builder.withProperty(key, value);
      return this;
    }

    @Override
    public Table create() {
      return of(builder.create());
    }

    @Override
    public Transaction createTransaction() {
      return builder.createTransaction();
    }

    @Override
    public Transaction replaceTransaction() {
      return builder.replaceTransaction();
    }

    @Override
    public Transaction createOrReplaceTransaction() {
      return builder.createOrReplaceTransaction();
    }
  }
}
