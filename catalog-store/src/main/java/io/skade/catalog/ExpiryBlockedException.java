package io.skade.catalog;

/**
 * A commit that would remove snapshots a live consumer still needs was refused. Not retried:
 * nothing changed, and retrying changes nothing until the consumer advances, is dropped ({@link
 * SkadeCatalog#dropConsumer}) or stays unseen longer than {@code consumer.expiry-timeout}.
 */
public class ExpiryBlockedException extends IllegalStateException {
  ExpiryBlockedException(String message) {
    super(message);
  }
}
