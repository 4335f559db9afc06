package io.skade.lineage;

/** What a commit did to its table, as lineage records it. */
public enum LineageOperation {
  /** Rows were added and none removed. */
  APPEND,
  /** Rows were removed and none added. */
  DELETE,
  /** Rows were replaced: added and removed (upserts, overwrites, row deltas). */
  OVERWRITE,
  /** The table was created (or registered). */
  CREATE,
  /** Several tables were advanced by one atomic multi-table commit: one event names them all. */
  RELEASE
}
