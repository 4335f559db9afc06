package io.skade.source;

/**
 * Where a change comes from, for a {@link ChangeDeserializer} that wants more than the row.
 *
 * @param commitSeq the catalog's {@code commit_seq} of the commit the change belongs to (for a
 *     collapsed window, its last commit)
 * @param snapshotId the Iceberg snapshot the change happened in
 * @param commitMillis when the catalog committed it (its stamp on the log, never behind an earlier
 *     commit's; for a collapsed window, its last commit's), milliseconds since the epoch; the
 *     snapshot's own timestamp for history the log does not know. Also the record's timestamp in
 *     Flink
 */
public record ChangeMetadata(long commitSeq, long snapshotId, long commitMillis) {}
