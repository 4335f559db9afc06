package io.skade.source.database;

import org.apache.flink.table.data.RowData;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;

/**
 * One change a {@link SkadeDatabaseSource} read, as its {@link DatabaseChangeDeserializer} sees it.
 * The row is only valid during the call that gets it: keep a copy, not the row.
 *
 * @param table the table, named as at the commit
 * @param rowType the row's columns: the table's schema at the commit (a schema change shows in the
 *     rows of the commits after it)
 * @param row the row, its {@code RowKind} saying what happened ({@code +I -U +U -D})
 * @param commitSeq the catalog's {@code commit_seq} of the change's commit
 * @param snapshotId the Iceberg snapshot that made the change
 * @param commitMillis when the catalog committed it (its stamp on the log, never behind an earlier
 *     commit's), milliseconds since the epoch; also the record's timestamp in Flink
 * @param transactionStart the first {@code commit_seq} of the atomic commit the change belongs to:
 *     {@code commitSeq} unless several tables were committed together
 * @param transactionSize how many tables that atomic commit changed (1 for a commit of one table)
 */
public record DatabaseChange(
    TableIdentifier table,
    Types.StructType rowType,
    RowData row,
    long commitSeq,
    long snapshotId,
    long commitMillis,
    long transactionStart,
    int transactionSize) {}
