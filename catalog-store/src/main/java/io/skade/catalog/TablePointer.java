package io.skade.catalog;

/**
 * The row that makes a table exist: where its current metadata is, its current snapshot and the
 * {@code commitSeq} of the commit that last moved it.
 *
 * @param metadataLocation the current metadata file
 * @param snapshotId the current snapshot of the main branch, or {@link #NO_SNAPSHOT}
 * @param commitSeq the commit that wrote this pointer
 */
record TablePointer(String metadataLocation, long snapshotId, long commitSeq) {
  static final long NO_SNAPSHOT = -1L;
}
