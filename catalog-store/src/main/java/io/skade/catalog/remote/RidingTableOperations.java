package io.skade.catalog.remote;

import java.net.ConnectException;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * A remote table's operations, riding a skade server's restart instead of failing the caller (a
 * Flink committer, a maintenance job, a lookup's refresh): a refresh is tried again through any
 * transient failure ({@link RemoteRetry#isTransient}); a commit is sent again only through a
 * refused connection, which proves the server never saw it. A commit whose answer was lost (a
 * reset, a time-out, a 5xx) is settled from the table once the server answers again: when the table
 * has the commit's snapshots it was made; when not, it was not (the server makes a commit in one
 * write, or not at all), and a {@link CommitFailedException} has Iceberg apply it again to the
 * table as it is. Should the lost commit land after that look (a server that was slow, not dead),
 * the catalog refuses to apply the same checkpoint's files twice. The sending and the settling
 * share one deadline ({@link RemoteRetry}).
 *
 * <p>Every table the {@link RidingCatalog} of a {@link RemoteConnection} loads has these
 * operations.
 */
final class RidingTableOperations implements TableOperations {
  private final TableOperations delegate;
  private final RemoteRetry retry;
  private final String table;

  RidingTableOperations(TableOperations delegate, RemoteRetry retry, String table) {
    this.delegate = delegate;
    this.retry = retry;
    this.table = table;
  }

  @Override
  public TableMetadata current() {
    return delegate.current();
  }

  @Override
  public TableMetadata refresh() {
    return refresh(retry.deadline());
  }

  private TableMetadata refresh(long deadline) {
    return retry.call(
        "refreshing " + table + " from " + retry.server(),
        RemoteRetry::isTransient,
        deadline,
        delegate::refresh);
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    long deadline = retry.deadline();
    try {
      retry.call(
          "committing to " + table + " at " + retry.server(),
          RidingTableOperations::refused,
          deadline,
          () -> {
            delegate.commit(base, metadata);
            return null;
          });
    } catch (RuntimeException e) {
      if (!(e instanceof CommitStateUnknownException) && !RemoteRetry.isTransient(e)) {
        throw e;
      }
      settle(base, metadata, e, deadline);
    }
  }

  /**
   * Returns when the table, read again before {@code deadline}, has the snapshots {@code metadata}
   * adds to {@code base}.
   */
  private void settle(
      TableMetadata base, TableMetadata metadata, RuntimeException lost, long deadline) {
    Set<Long> before =
        base == null
            ? Set.of()
            : base.snapshots().stream().map(Snapshot::snapshotId).collect(Collectors.toSet());
    List<Long> added =
        metadata.snapshots().stream()
            .map(Snapshot::snapshotId)
            .filter(id -> !before.contains(id))
            .toList();
    if (added.isEmpty()) {
      throw lost; // a commit of no snapshot: nothing in the table tells whether it was made
    }
    TableMetadata now;
    try {
      now = refresh(deadline);
    } catch (RuntimeException unreadable) {
      unreadable.addSuppressed(lost);
      throw unreadable;
    }
    if (added.stream().allMatch(id -> now.snapshot(id) != null)) {
      return;
    }
    throw new CommitFailedException(
        lost,
        "the answer to the commit of snapshot %s was lost"
            + " and the table, read again from %s, does not have it: it was not made",
        added.get(added.size() - 1),
        retry.server());
  }

  /** Whether the connection was refused: the request was never sent. */
  private static boolean refused(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof ConnectException) {
        return true;
      }
    }
    return false;
  }

  @Override
  public FileIO io() {
    return delegate.io();
  }

  @Override
  public EncryptionManager encryption() {
    return delegate.encryption();
  }

  @Override
  public String metadataFileLocation(String fileName) {
    return delegate.metadataFileLocation(fileName);
  }

  @Override
  public LocationProvider locationProvider() {
    return delegate.locationProvider();
  }

  @Override
  public TableOperations temp(TableMetadata uncommittedMetadata) {
    return delegate.temp(uncommittedMetadata);
  }

  @Override
  public long newSnapshotId() {
    return delegate.newSnapshotId();
  }

  @Override
  public boolean requireStrictCleanup() {
    return delegate.requireStrictCleanup();
  }
}
