package io.skade.catalog;

import java.time.Instant;
import java.util.Objects;

/**
 * A consumer's row in the catalog: its cursor and when it was last stored. A consumer not seen for
 * longer than the catalog's {@code consumer.expiry-timeout} no longer holds expiry back.
 *
 * @param consumerId the id the cursor is stored under
 * @param cursor the last acknowledged cursor
 * @param lastSeen when the cursor was stored (millisecond precision)
 * @param owner the name of the server token that owns the consumer, or null for one stored in
 *     process or by an admin token (see {@link SkadeCatalog#storeConsumer(String, ConsumerCursor,
 *     String)})
 */
public record StoredConsumer(
    String consumerId, ConsumerCursor cursor, Instant lastSeen, String owner) {
  public StoredConsumer {
    Objects.requireNonNull(consumerId, "consumerId");
    Objects.requireNonNull(cursor, "cursor");
    Objects.requireNonNull(lastSeen, "lastSeen");
  }

  /** A consumer with no owner. */
  public StoredConsumer(String consumerId, ConsumerCursor cursor, Instant lastSeen) {
    this(consumerId, cursor, lastSeen, null);
  }
}
