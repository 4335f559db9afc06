package io.skade.source;

import java.util.Locale;

/** Where a {@link SkadeSource} starts reading a table when it does not restore a checkpoint. */
public enum StartupMode {
  /** The rows current at start as inserts, then every change after them (the default). */
  FULL,
  /** Only changes committed after the start. */
  LATEST,
  /** Every change since the table's first snapshot (the whole history must still exist). */
  EARLIEST,
  /** Changes from a given snapshot on, that snapshot's own changes included. */
  FROM_SNAPSHOT,
  /** Changes from the first snapshot committed at or after a given time. */
  FROM_TIMESTAMP,
  /** Changes of the commits after a given catalog {@code commit_seq}. */
  FROM_COMMIT_SEQ,
  /**
   * The changes after the cursor the source's consumer has stored in the catalog: where a job of
   * that consumer stopped, or where a {@code reset_consumer} call put it.
   */
  FROM_CONSUMER;

  /** The option value, e.g. {@code from-snapshot}. */
  public String value() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** The mode an option value names, e.g. {@code from-snapshot}; a clear error otherwise. */
  public static StartupMode of(String value) {
    for (StartupMode mode : values()) {
      if (mode.value().equalsIgnoreCase(value.trim())) {
        return mode;
      }
    }
    throw new IllegalArgumentException(
        "unknown skade startup mode '"
            + value
            + "'; use one of"
            + " full, latest, earliest, from-snapshot, from-timestamp, from-commit-seq,"
            + " from-consumer");
  }
}
