package io.skade.source;

/**
 * Where a change comes from, for a {@link ChangeDeserializer} that wants more than the row.
 *
 * @param commitSeq the catalog's {@code commit_seq} of the commit the change belongs to (for a
 *     collapsed window, its last commit)
 * @param snapshotId the Iceberg snapshot the change happened in
 * @param commitMillis that snapshot's commit time, milliseconds since the epoch; also the record's
 *     timestamp in Flink
 */
public record ChangeMetadata(long commitSeq, long snapshotId, long commitMillis) {}
