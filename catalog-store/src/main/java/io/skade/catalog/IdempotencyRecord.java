package io.skade.catalog;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * What a request made under an idempotency key committed, stored in the same synced batch as the
 * commit itself: a retry of the request after its answer was lost finds it and is answered from it,
 * instead of committing again, even across a restart.
 *
 * @param key the client's {@code Idempotency-Key}
 * @param committedAt when the commit was stamped
 * @param metadataLocations the metadata file each table the commit moved points to after it, in
 *     {@code commitSeq} order (empty for a commit of no table: a namespace, a consumer)
 */
public record IdempotencyRecord(String key, Instant committedAt, List<String> metadataLocations) {
  public IdempotencyRecord {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(committedAt, "committedAt");
    metadataLocations = List.copyOf(metadataLocations);
  }
}
