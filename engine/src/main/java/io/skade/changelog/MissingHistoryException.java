package io.skade.changelog;

/**
 * A changelog window needs snapshots or files that are gone (expired or removed), so its exact
 * changes cannot be read. The message names what is missing and what the user can do.
 */
public class MissingHistoryException extends IllegalStateException {
  public MissingHistoryException(String message, Throwable cause) {
    super(message, cause);
  }
}
