package io.skade.catalog;

/**
 * A consumer's cursor cannot be resumed: the snapshot it stands at was expired, or its table was
 * dropped (or dropped and created again). The message names the startup options that recover.
 */
public class CursorExpiredException extends IllegalStateException {
  CursorExpiredException(String message) {
    super(message);
  }
}
