package io.skade.catalog;

import java.util.List;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The catalog's commit spine, for consumers: a durable, gapless log of every pointer change, and
 * an in-process push of each commit once it is durable and visible to {@code loadTable}.
 *
 * <p>The live push is a low-latency hint; the log is the truth. A consumer keeps a cursor (the
 * last {@code commitSeq} it handled), takes events {@code > cursor} from its subscription, and
 * falls back to {@link #commitsSince} when the subscription reports it lagged, after a restart,
 * or when the catalog lives in another process.
 */
public interface CommitFeed {

  /** Default bound of a subscription's buffer. */
  int DEFAULT_SUBSCRIBER_BUFFER = 1024;

  /**
   * Subscribes to live commits with the default buffer. The subscription is registered before its
   * {@link CommitSubscription#startCursor() start cursor} is read, so a commit racing this call is
   * either covered by the cursor or delivered: never lost, never both.
   */
  default CommitSubscription subscribeCommits() {
    return subscribeCommits(DEFAULT_SUBSCRIBER_BUFFER);
  }

  /** As {@link #subscribeCommits()}, with a buffer of {@code bufferSize} events. */
  CommitSubscription subscribeCommits(int bufferSize);

  /**
   * Every commit with {@code commitSeq > after}, oldest first, gapless, read from the durable log
   * lazily, a page at a time, so a long log is never loaded whole.
   */
  Iterable<CommitEvent> commitsSince(long after);

  /** At most {@code limit} commits with {@code commitSeq > after}, oldest first: one page. */
  List<CommitEvent> commitsSince(long after, int limit);

  /** The current cursor: the {@code commitSeq} of the newest durable commit (0 when none). */
  long commitSeq();

  /** The {@link CommitEvent#tableKey()} of a table, without knowing the key encoding. */
  String commitTableKey(TableIdentifier identifier);

  /** The table a {@link CommitEvent#tableKey()} names: the inverse of {@link #commitTableKey}. */
  TableIdentifier commitTableIdentifier(String tableKey);
}
