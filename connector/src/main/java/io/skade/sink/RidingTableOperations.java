package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import java.net.ConnectException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Predicate;
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
 * A remote table's operations for Iceberg's Flink committer, riding through a skade server's
 * restart instead of failing the job: a refresh is tried again through any transient failure
 * ({@link CatalogConnection#isTransient}); a commit is sent again only through a refused
 * connection, which proves the server never saw it. A commit whose answer was lost (a reset, a
 * time-out, a 5xx) is settled from the table once the server answers again: when the table has the
 * commit's snapshots it was made; when not, it was not (the server makes a commit in one write, or
 * not at all), and a {@link CommitFailedException} has Iceberg apply it again to the table as it
 * is. Should the lost commit land after that look (a server that was slow, not dead), the catalog
 * refuses to apply the same checkpoint's files twice.
 */
final class RidingTableOperations implements TableOperations {
  private final TableOperations delegate;
  private final CatalogConnection connection;

  RidingTableOperations(TableOperations delegate, CatalogConnection connection) {
    this.delegate = delegate;
    this.connection = connection;
  }

  @Override
  public TableMetadata current() {
    return delegate.current();
  }

  @Override
  public TableMetadata refresh() {
    return ride(delegate::refresh, connection::isTransient);
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    try {
      ride(
          () -> {
            delegate.commit(base, metadata);
            return null;
          },
          RidingTableOperations::refused);
    } catch (RuntimeException e) {
      if (!(e instanceof CommitStateUnknownException) && !connection.isTransient(e)) {
        throw e;
      }
      settle(base, metadata, e);
    }
  }

  /**
   * Returns when the table, read again, has the snapshots {@code metadata} adds to {@code base}.
   */
  private void settle(TableMetadata base, TableMetadata metadata, RuntimeException lost) {
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
    TableMetadata now = refresh();
    if (added.stream().allMatch(id -> now.snapshot(id) != null)) {
      return;
    }
    throw new CommitFailedException(
        lost,
        "the answer to the commit of snapshot %s was lost"
            + " and the table, read again from %s, does not have it: it was not made",
        added.get(added.size() - 1),
        connection.location());
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

  /** {@code call}, ridden through the transient failures that {@code again} accepts. */
  private <T> T ride(Callable<T> call, Predicate<Throwable> again) {
    try {
      return connection.riding(
          () -> {
            try {
              return call.call();
            } catch (RuntimeException e) {
              if (again.test(e)) {
                throw e; // the connection tries it again
              }
              throw new Final(e);
            }
          });
    } catch (Final e) {
      throw e.failure;
    }
  }

  /** A failure not to try again, carried past the connection's retries. */
  private static final class Final extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final RuntimeException failure;

    Final(RuntimeException failure) {
      super(null, null, false, false);
      this.failure = failure;
    }
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
