package io.skade.catalog;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.apache.iceberg.catalog.TableIdentifier;

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
    String key = TableKeys.consumerKey(consumerId);
    TableKeys.validate(cursor.table()); // before the committer thread, which must not fail
    return catalog
        .committer()
        .submit(
            stage -> {
              StoredConsumer stored =
                  new StoredConsumer(key, cursor, Instant.ofEpochMilli(System.currentTimeMillis()));
              stage.putConsumer(stored);
              return stored;
            });
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
    String key = TableKeys.consumerKey(consumerId);
    return catalog
        .committer()
        .submit(
            stage -> {
              if (stage.consumer(key) == null) {
                return false;
              }
              stage.removeConsumer(key);
              return true;
            });
  }
}
