package io.skade.catalog;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * The idempotency keys of an embedded catalog: a client's key and what the commit made under it
 * ({@link IdempotencyRecord}), in the store's {@code idempotency_keys} family, written in the
 * commit's own synced batch. The key reaches the {@link Committer} through the calling thread
 * ({@link Committer#IDEMPOTENCY_KEY}), and the first commit submitted takes it. {@link
 * SkadeCatalog#withIdempotencyKey} and its neighbours delegate here.
 */
final class IdempotencyKeys {
  private final SkadeCatalog catalog;

  IdempotencyKeys(SkadeCatalog catalog) {
    this.catalog = catalog;
  }

  /** See {@link SkadeCatalog#withIdempotencyKey}. */
  <T> T withKey(String key, Callable<T> action) throws Exception {
    check(key);
    Committer.IDEMPOTENCY_KEY.set(key);
    try {
      return action.call();
    } finally {
      Committer.IDEMPOTENCY_KEY.remove();
    }
  }

  /** What was committed under {@code key}, if anything. */
  Optional<IdempotencyRecord> record(String key) {
    check(key);
    catalog.store().catchUp();
    return Optional.ofNullable(catalog.store().idempotency(key));
  }

  /** Forgets the keys of commits made before {@code before}; how many it forgot. */
  int expire(Instant before) {
    catalog.store().catchUp();
    List<String> expired =
        catalog.store().idempotencyKeys().stream()
            .filter(
                key -> {
                  IdempotencyRecord record = catalog.store().idempotency(key);
                  return record != null && record.committedAt().isBefore(before);
                })
            .toList();
    if (!expired.isEmpty()) {
      catalog
          .committer()
          .submit(
              stage -> {
                expired.forEach(stage::removeIdempotency);
                return null;
              });
    }
    return expired.size();
  }

  private static void check(String key) {
    if (key == null
        || key.isEmpty()
        || key.length() > 256
        || key.chars().anyMatch(Character::isISOControl)) {
      throw new IllegalArgumentException(
          "idempotency key '"
              + key
              + "' must be 1 to 256"
              + " characters without control characters (a UUID, as Iceberg's client sends)");
    }
  }
}
