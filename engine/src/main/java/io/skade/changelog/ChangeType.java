package io.skade.changelog;

/**
 * The kind of one change row; {@link #name()} is the exact {@code _change_type} string, as in
 * Iceberg's Spark changelog view and Flink CDC.
 */
public enum ChangeType {
  INSERT("+I"),
  UPDATE_BEFORE("-U"),
  UPDATE_AFTER("+U"),
  DELETE("-D");

  private final String symbol;

  ChangeType(String symbol) {
    this.symbol = symbol;
  }

  /** The short form Flink prints for the matching row kind: {@code +I -U +U -D}. */
  public String symbol() {
    return symbol;
  }

  /** Whether applying this change removes its row (else it adds it). */
  public boolean removes() {
    return this == UPDATE_BEFORE || this == DELETE;
  }
}
