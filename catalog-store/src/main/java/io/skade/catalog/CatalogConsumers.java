package io.skade.catalog;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ForbiddenException;

/**
 * The consumers of an embedded catalog: their cursors in the store's {@code consumers} family,
 * written through the one commit path ({@link Committer}) but not commits — no {@code commitSeq},
 * no event. {@link ExpiryGuard} reads them on the commit path to hold snapshot expiry back. {@link
 * SkadeCatalog} is the {@link ConsumerStore} users see and delegates here.
 */
final class CatalogConsumers implements ConsumerStore {
  private final SkadeCatalog catalog;

  CatalogConsumers(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException for an empty id or one with control characters
   * @throws UnsupportedOperationException in a read-only follower
   */
  @Override
  public StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor) {
    return storeConsumer(consumerId, cursor, null);
  }

  /** See {@link SkadeCatalog#storeConsumer(String, ConsumerCursor, String)}. */
  StoredConsumer storeConsumer(String consumerId, ConsumerCursor cursor, String owner) {
    String key = TableKeys.consumerKey(consumerId);
    TableKeys.validate(cursor.table()); // before the committer thread, which must not fail
    return catalog
        .committer()
        .submit(
            stage -> {
              StoredConsumer before = stage.consumer(key);
              requireOwner(before, owner, "store the cursor of");
              String keptOwner = owner != null ? owner : before == null ? null : before.owner();
              StoredConsumer stored =
                  new StoredConsumer(
                      key, cursor, Instant.ofEpochMilli(System.currentTimeMillis()), keptOwner);
              stage.putConsumer(stored);
              return stored;
            });
  }

  /**
   * Refuses {@code owner} a consumer another owner holds (checked on the committer thread, so that
   * two owners racing for one consumer cannot both win). A consumer with no owner is anyone's.
   */
  private static void requireOwner(StoredConsumer stored, String owner, String action) {
    if (owner != null
        && stored != null
        && stored.owner() != null
        && !stored.owner().equals(owner)) {
      throw new ForbiddenException(
          "'%s' may not %s consumer '%s': the consumer belongs to '%s'; use that token, another"
              + " consumer id, or an admin token",
          owner, action, stored.consumerId(), stored.owner());
    }
  }

  @Override
  public Optional<StoredConsumer> consumer(String consumerId) {
    String key = TableKeys.consumerKey(consumerId);
    catalog.store().catchUp();
    return Optional.ofNullable(catalog.store().consumer(key));
  }

  @Override
  public List<StoredConsumer> consumers() {
    catalog.store().catchUp();
    return catalog.store().consumerIds().stream()
        .map(catalog.store()::consumer)
        .filter(Objects::nonNull) // dropped since the ids were listed
        .toList();
  }

  @Override
  public List<StoredConsumer> consumers(TableIdentifier table) {
    return consumers().stream().filter(c -> c.cursor().table().equals(table)).toList();
  }

  @Override
  public boolean dropConsumer(String consumerId) {
    return dropConsumer(consumerId, null);
  }

  /** See {@link SkadeCatalog#dropConsumer(String, String)}. */
  boolean dropConsumer(String consumerId, String owner) {
    String key = TableKeys.consumerKey(consumerId);
    return catalog
        .committer()
        .submit(
            stage -> {
              StoredConsumer stored = stage.consumer(key);
              if (stored == null) {
                return false;
              }
              requireOwner(stored, owner, "drop");
              stage.removeConsumer(key);
              return true;
            });
  }
}
