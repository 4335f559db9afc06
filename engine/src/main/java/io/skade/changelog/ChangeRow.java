package io.skade.changelog;

import org.apache.iceberg.data.Record;

/**
 * One change of a changelog window.
 *
 * @param type what happened to the row
 * @param row the row: after the change for inserts, before it for deletes (the full old row, or
 *     only the identifier fields with {@link ChangelogOptions.BeforeImage#KEY_ONLY})
 * @param snapshotId the snapshot that made the change; in collapsed mode, the window's last
 */
public record ChangeRow(ChangeType type, Record row, long snapshotId) {}
