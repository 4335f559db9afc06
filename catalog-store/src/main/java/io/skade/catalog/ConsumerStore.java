package io.skade.catalog;

import java.util.List;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Where consumers keep their cursors: the catalog itself in the process that owns it ({@link
 * SkadeCatalog}), or a skade server's consumer routes from any other ({@link
 * io.skade.catalog.remote.SkadeServerClient}). A stored cursor holds back the expiry of the
 * snapshots it still needs.
 */
public interface ConsumerStore {

  /** Stores (or replaces) the cursor of {@code consumerId}, stamped with the current time. */
  StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor);

  /** The consumer stored under {@code consumerId}, if any. */
  Optional<StoredConsumer> consumer(String consumerId);

  /** Every stored consumer, live or not, in id order. */
  List<StoredConsumer> consumers();

  /** The stored consumers of {@code table}, in id order. */
  List<StoredConsumer> consumers(TableIdentifier table);

  /** Removes a consumer, so it no longer holds expiry back; returns whether it was stored. */
  boolean dropConsumer(String consumerId);
}
