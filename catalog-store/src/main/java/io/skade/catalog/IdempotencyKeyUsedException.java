package io.skade.catalog;

/**
 * A commit under an idempotency key that an earlier commit already used: refused by the committer,
 * which writes nothing, so that two racing retries of one request commit once. The caller answers
 * from {@link #record()}.
 */
public class IdempotencyKeyUsedException extends RuntimeException {
  private final transient IdempotencyRecord record;

  IdempotencyKeyUsedException(IdempotencyRecord record) {
    super(
        "idempotency key '"
            + record.key()
            + "' was used by a commit at "
            + record.committedAt()
            + "; the request is not committed again");
    this.record = record;
  }

  /** What the first commit under the key made. */
  public IdempotencyRecord record() {
    return record;
  }
}
