package io.skade.catalog;

/** What a commit did to a table pointer. Every one of them takes a {@code commit_seq}. */
public enum CommitOperation {
  /** A new table was created; its pointer appeared. */
  CREATE,
  /** An existing metadata file was registered as a new table. */
  REGISTER,
  /** The table's metadata moved forward: snapshots added, or a metadata-only change. */
  UPDATE,
  /** The table was dropped; its pointer is gone. */
  DROP,
  /**
   * The table was renamed away; its pointer moved to the {@link #RENAME_TO} row of the same batch.
   */
  RENAME_FROM,
  /** The table arrived here by a rename; the {@link #RENAME_FROM} row precedes it. */
  RENAME_TO;

  /** Whether the table's pointer exists after a commit of this kind. */
  public boolean leavesPointer() {
    return this != DROP && this != RENAME_FROM;
  }

  byte code() {
    return (byte) ordinal();
  }

  static CommitOperation fromCode(byte code) {
    CommitOperation[] values = values();
    if (code < 0 || code >= values.length) {
      throw new IllegalStateException("unknown commit operation code " + code);
    }
    return values[code];
  }
}
