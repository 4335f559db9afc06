package io.skade.source.reader;

import org.apache.flink.table.data.RowData;

/**
 * One change as a reader fetched it: the row with its {@code RowKind}, the snapshot it happened in
 * and that snapshot's commit time, and how many of its split's changes have been emitted once it
 * is.
 */
public record ChangeRecord(RowData row, long snapshotId, long commitMillis, long emittedAfter) {}
