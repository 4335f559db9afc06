package io.skade.lookup;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.scan.TableVersions;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A table kept at its latest committed version for lookups, so that a probe that starts after this
 * process learnt of a commit sees it ({@link CatalogConnection#commitsSeen}):
 *
 * <ul>
 *   <li>in the JVM that owns the catalog, a commit is known the moment it is durable (the catalog's
 *       commit sequence is read from memory);
 *   <li>through a skade server, a commit is known when the server's commit feed takes it (one round
 *       trip after it is durable), and the table's new version is then built from the one held and
 *       the updates the feed carried when the commit was made onto it ({@link TableVersions}; no
 *       request of the whole table), else loaded: a probe after that sees the commit, and no probe
 *       pays a round trip to ask whether one happened;
 *   <li>a read-only follower checks the log at most once per poll interval.
 * </ul>
 *
 * <p>With a poll interval of zero a probe sees every commit that was durable when it began,
 * wherever the catalog is: a follower reads the log at each probe, and through a server each probe
 * first learns the server's newest commit ({@link CatalogConnection#catchUp}, a round trip that the
 * probes of the process under way at once share; an asynchronous probe waits for it holding no
 * thread, {@link #caughtUp}). A delta join needs that: a row one source emitted must be found by
 * the next probe of its table, from any process.
 */
public final class LatestTable {
  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final CatalogConnection connection;
  private final TableIdentifier identifier;
  private final long pollNanos;

  /** The table's versions as the commits this process learns of name them. */
  private final TableVersions versions;

  private volatile Table table;
  private volatile long seenSeq;
  private volatile long checkedNanos;

  /**
   * The table {@code identifier} of {@code connection}, loaded now.
   *
   * @param pollInterval for a read-only follower, how often the log is checked; zero for every
   *     probe to see every commit durable when it began, in any process
   */
  public LatestTable(
      CatalogConnection connection, TableIdentifier identifier, Duration pollInterval) {
    this.connection = connection;
    this.identifier = identifier;
    this.pollNanos = pollInterval.toNanos();
    // Read before the load: a commit racing it shows as a change, and at worst loads again.
    this.seenSeq = connection.commitsSeen(identifier);
    this.versions = new TableVersions(connection, identifier);
    this.table = load();
    this.checkedNanos = System.nanoTime();
  }

  /**
   * The table as of the latest commit this process knows of. Through a server, a load that fails
   * while the server restarts is tried again until it answers (the connection's catalog rides its
   * retry policy): a probe waits rather than see a table older than a commit the process knows of.
   */
  public Table table() {
    if (pollNanos == 0) {
      connection.catchUp();
    }
    return known();
  }

  /**
   * Completes when {@link #known} shows every commit a probe begun now must see: with a poll
   * interval of zero, once this process knows every commit durable now ({@link
   * CatalogConnection#caughtUp}, holding no thread meanwhile); otherwise at once.
   */
  public CompletableFuture<Void> caughtUp() {
    return pollNanos == 0 ? connection.caughtUp() : DONE;
  }

  /**
   * A number that changes whenever this process learns of a commit of the table ({@link
   * CatalogConnection#commitsSeen}): a probe that read {@link #known} after this was {@code n} has
   * seen every commit this process knows of for as long as it is still {@code n}.
   */
  public long commitsSeen() {
    return connection.commitsSeen(identifier);
  }

  /**
   * As {@link #table}, without catching up with the catalog first: for a caller that waited for
   * {@link #caughtUp} since its probe began.
   */
  public Table known() {
    if (pollNanos != 0
        && !connection.pushesCommits()
        && System.nanoTime() - checkedNanos < pollNanos) {
      return table;
    }
    long seq = connection.commitsSeen(identifier);
    if (seq != seenSeq) {
      synchronized (this) {
        if (seq != seenSeq) {
          table = load();
          seenSeq = seq; // only once loaded: a failed load is tried again by the next probe
        }
      }
    }
    checkedNanos = System.nanoTime();
    return table;
  }

  /**
   * The table as of the newest commit this process knows of: built from the version held when that
   * commit was made onto it ({@link TableVersions#next}), otherwise loaded from the catalog.
   */
  private Table load() {
    Optional<CommitEvent> newest = connection.newestCommitSeen(identifier);
    Table next = newest.isPresent() ? versions.next(newest.get()) : null;
    if (next != null) {
      return next;
    }
    Table loaded = connection.catalog().loadTable(identifier);
    versions.loaded(loaded);
    return loaded;
  }
}
