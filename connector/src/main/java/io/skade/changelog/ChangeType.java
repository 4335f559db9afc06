package io.skade.changelog;

/**
 * The kind of one change row; {@link #name()} is the exact {@code _change_type} string, as in
 * Iceberg's Spark changelog view and Flink CDC.
 */
public enum ChangeType {
  INSERT,
  UPDATE_BEFORE,
  UPDATE_AFTER,
  DELETE;

  /** Whether applying this change removes its row (else it adds it). */
  public boolean removes() {
    return this == UPDATE_BEFORE || this == DELETE;
  }
}
