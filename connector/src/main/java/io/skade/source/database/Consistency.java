package io.skade.source.database;

import java.util.Locale;

/** How a {@link SkadeDatabaseSource} orders the changes of several tables. */
public enum Consistency {
  /**
   * The catalog's commit order across all tables: every change of commit N is emitted before any
   * change of commit N+1, and an atomic commit of several tables arrives whole. Readers wait for
   * each other at every commit.
   */
  COMMIT,
  /**
   * Each table's commits in order, tables independent of each other: readers run ahead on their own
   * tables. Checkpoints still never split a commit.
   */
  TABLE;

  /** The option value, e.g. {@code commit}. */
  public String value() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The mode an option value names; a clear error otherwise. */
  public static Consistency of(String value) {
    for (Consistency mode : values()) {
      if (mode.value().equalsIgnoreCase(value.trim())) {
        return mode;
      }
    }
    throw new IllegalArgumentException(
        "unknown skade scan consistency '" + value + "'; use 'commit' or 'table'");
  }
}
