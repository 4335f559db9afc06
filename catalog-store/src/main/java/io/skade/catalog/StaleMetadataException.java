package io.skade.catalog;

import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * A commit refused because the table's pointer moved from the metadata the commit was made on:
 * Iceberg retries it (it is a {@link CommitFailedException}); skade's own re-application of a
 * metadata-only change follows the new pointer.
 */
final class StaleMetadataException extends CommitFailedException {
  StaleMetadataException(String message, Object... args) {
    super(message, args);
  }
}
