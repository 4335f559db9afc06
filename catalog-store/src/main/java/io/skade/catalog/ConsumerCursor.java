package io.skade.catalog;

import java.util.Objects;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * How far a consumer (e.g. a source's enumerator) has read one table: every change up to and
 * including {@code snapshotId} is handled, and the next window starts there. Stored in the catalog
 * under a consumer id ({@link SkadeCatalog#storeConsumer}), it holds back the expiry of that
 * snapshot and of every newer one.
 *
 * <p>Plain fields only, so a versioned state serializer can write them one by one (the table as
 * {@link SkadeCatalog#commitTableKey}, read back with {@link SkadeCatalog#commitTableIdentifier}).
 *
 * @param table the table read
 * @param tableUuid the table's {@code uuid} when the cursor was taken: a table dropped and created
 *     again under the same name has another one, and the cursor does not apply to it
 * @param snapshotId the last snapshot handled, or {@link #NO_SNAPSHOT} when the table had none (the
 *     consumer then needs every snapshot the table gets)
 * @param commitSeq the catalog's {@code commitSeq} the consumer has handled the log up to
 */
public record ConsumerCursor(
    TableIdentifier table, String tableUuid, long snapshotId, long commitSeq) {
  /** The cursor of a consumer that has seen the table before its first snapshot. */
  public static final long NO_SNAPSHOT = -1L;

  public ConsumerCursor {
    Objects.requireNonNull(table, "table");
    Objects.requireNonNull(tableUuid, "tableUuid");
  }
}
