package io.skade.changelog;

import io.skade.scan.FileSlice;
import io.skade.scan.MetadataCache;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * How many changes a window holds, estimated from its files' record counts as the manifests list
 * them, for a source's {@code pendingRecords}: the rows of the data and delete files its commits
 * added in the slice's units (a full snapshot: its live data files' rows). A compaction changes no
 * row and counts nothing. The manifests are {@link MetadataCache}'s, parsed once per JVM, so the
 * estimate costs the window's own read nothing more.
 */
public final class ChangeEstimate {
  private ChangeEstimate() {}

  /** The changes of the window ({@code fromExclusive}, {@code to}] in {@code slice}. */
  public static long window(Table table, Long fromExclusive, long to, FileSlice slice) {
    return window(table, fromExclusive, to, slice, Map.of());
  }

  /**
   * As above, counting the plain-append snapshots of {@code knownAppends} (every data file each
   * added, as a {@link PlannedWindow} carries them) from those files, without their manifests.
   */
  public static long window(
      Table table,
      Long fromExclusive,
      long to,
      FileSlice slice,
      Map<Long, List<DataFile>> knownAppends) {
    long changes = 0;
    for (Snapshot snapshot : SnapshotUtil.ancestorsBetween(to, fromExclusive, table::snapshot)) {
      List<DataFile> known = knownAppends.get(snapshot.snapshotId());
      if (known != null) {
        for (DataFile file : known) {
          changes += slice.keeps(file, table.specs()) ? file.recordCount() : 0;
        }
      } else if (!DataOperations.REPLACE.equals(snapshot.operation())) {
        changes += rows(table, snapshot, slice, true);
      }
    }
    return changes;
  }

  /** The rows of {@code snapshot} in {@code slice}, as a full-snapshot read emits them. */
  public static long fullSnapshot(Table table, long snapshotId, FileSlice slice) {
    Snapshot snapshot = table.snapshot(snapshotId);
    return snapshot == null ? 0 : rows(table, snapshot, slice, false);
  }

  /** Rows of the slice's files of {@code snapshot}: those it added, or its live data files. */
  private static long rows(Table table, Snapshot snapshot, FileSlice slice, boolean added) {
    Map<Integer, PartitionSpec> specs = table.specs();
    long rows = 0;
    MetadataCache cache = MetadataCache.shared();
    for (ManifestFile manifest : cache.manifests(snapshot, table)) {
      boolean data = manifest.content() == ManifestContent.DATA;
      if (added
          ? manifest.snapshotId() == null || manifest.snapshotId() != snapshot.snapshotId()
          : !data) {
        continue;
      }
      List<? extends ContentFile<?>> files =
          data ? cache.dataFiles(manifest, table) : cache.deleteFiles(manifest, table);
      for (ContentFile<?> file : files) {
        // A manifest the snapshot wrote may carry files of earlier ones, merged in.
        boolean counts =
            !added
                || file.fileSequenceNumber() == null
                || file.fileSequenceNumber() == snapshot.sequenceNumber();
        rows += counts && slice.keeps(file, specs) ? file.recordCount() : 0;
      }
    }
    return rows;
  }
}
