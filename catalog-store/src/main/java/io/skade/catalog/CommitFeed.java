package io.skade.catalog;

import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The catalog's commit spine, for consumers: a durable, gapless log of every pointer change, and an
 * in-process push of each commit once it is durable and visible to {@code loadTable}.
 *
 * <p>The live push is a low-latency hint; the log is the truth. A consumer keeps a cursor (the last
 * {@code commitSeq} it handled), takes events {@code > cursor} from its subscription, and falls
 * back to {@link #commitsSince} when the subscription reports it lagged, after a restart, or when
 * the catalog lives in another process.
 */
public interface CommitFeed {

  /** Default bound of a subscription's buffer. */
  int DEFAULT_SUBSCRIBER_BUFFER = 1024;

  /** How many commits {@link #commitsSince(long)} reads per page. */
  int PAGE = 1000;

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
  default Iterable<CommitEvent> commitsSince(long after) {
    return () ->
        new Iterator<>() {
          private long cursor = after;
          private Iterator<CommitEvent> page = List.<CommitEvent>of().iterator();
          private boolean exhausted;

          @Override
          public boolean hasNext() {
            if (!page.hasNext() && !exhausted) {
              List<CommitEvent> next = commitsSince(cursor, PAGE);
              exhausted = next.size() < PAGE;
              page = next.iterator();
            }
            return page.hasNext();
          }

          @Override
          public CommitEvent next() {
            if (!hasNext()) {
              throw new NoSuchElementException();
            }
            CommitEvent event = page.next();
            cursor = event.commitSeq();
            return event;
          }
        };
  }

  /** At most {@code limit} commits with {@code commitSeq > after}, oldest first: one page. */
  List<CommitEvent> commitsSince(long after, int limit);

  /** The current cursor: the {@code commitSeq} of the newest durable commit (0 when none). */
  long commitSeq();

  /** The {@link CommitEvent#tableKey()} of a table, without knowing the key encoding. */
  String commitTableKey(TableIdentifier identifier);

  /** The table a {@link CommitEvent#tableKey()} names: the inverse of {@link #commitTableKey}. */
  TableIdentifier commitTableIdentifier(String tableKey);
}
