package io.skade.catalog;

/**
 * A commit subscription's buffer overflowed and the commits it held were dropped. Recover by
 * reading {@link CommitFeed#commitsSince} from your cursor, then keep polling the same
 * subscription, skipping events at or below the cursor.
 */
public class CommitFeedLaggedException extends RuntimeException {
  public CommitFeedLaggedException(int capacity) {
    super(
        "commit subscription lagged: more than "
            + capacity
            + " commits arrived before they were"
            + " polled; read the missed commits with commitsSince(yourCursor) and continue polling");
  }
}
