package io.skade.maintenance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.StructLikeMap;

/**
 * The delete files of a table that no longer delete anything once a compaction has rewritten data
 * files: each applies only to data files with a lower data sequence number (equality deletes) or a
 * lower or equal one (position deletes) in its partition, or in the whole table for an equality
 * delete of an unpartitioned spec, and no such data file is left.
 *
 * <p>Why: Iceberg's rewrite removes the data files it rewrote and, on format v3, their deletion
 * vectors, but leaves v2 equality and position delete files in the table (Spark has a separate
 * action for them; Flink has none). A streaming upsert writes one or two per checkpoint, so without
 * this every planner and lookup keeps reading an ever longer list of deletes that apply to nothing.
 */
public final class DanglingDeletes {
  private DanglingDeletes() {}

  /**
   * The delete files of {@code snapshot} that are dangling once {@code removed} data files are gone
   * and {@code added} are in, at data sequence number {@code addedSequence} (null: the new
   * snapshot's own, higher than every file's now).
   */
  public static List<DeleteFile> after(
      TableMetadata metadata,
      Snapshot snapshot,
      FileIO io,
      Set<String> removed,
      List<DataFile> added,
      Long addedSequence) {
    if (snapshot == null) {
      return List.of();
    }
    Map<Integer, PartitionSpec> specs = metadata.specsById();
    MinSequences live = new MinSequences(specs);
    for (ManifestFile manifest : snapshot.dataManifests(io)) {
      try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, io, specs)) {
        for (DataFile file : reader) {
          if (!removed.contains(file.location())) {
            live.add(file.specId(), file.partition(), file.dataSequenceNumber());
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
      }
    }
    long newSequence = addedSequence == null ? Long.MAX_VALUE : addedSequence;
    for (DataFile file : added) {
      live.add(file.specId(), file.partition(), newSequence);
    }
    List<DeleteFile> dangling = new ArrayList<>();
    for (ManifestFile manifest : snapshot.deleteManifests(io)) {
      try (ManifestReader<DeleteFile> reader =
          ManifestFiles.readDeleteManifest(manifest, io, specs)) {
        for (DeleteFile file : reader) {
          if (file.format() != FileFormat.PUFFIN && live.dangling(file)) {
            // The reader reuses its file objects.
            dangling.add(file.copyWithoutStats());
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
      }
    }
    return dangling;
  }

  /** The lowest data sequence number of the live data files, per partition and table-wide. */
  private static final class MinSequences {
    private final Map<Integer, PartitionSpec> specs;
    private final Map<Integer, StructLikeMap<Long>> byPartition = new HashMap<>();
    private long tableWide = Long.MAX_VALUE;

    MinSequences(Map<Integer, PartitionSpec> specs) {
      this.specs = specs;
    }

    void add(int specId, StructLike partition, long sequence) {
      tableWide = Math.min(tableWide, sequence);
      StructLikeMap<Long> mins =
          byPartition.computeIfAbsent(
              specId, id -> StructLikeMap.create(specs.get(id).partitionType()));
      Long min = mins.get(partition);
      if (min == null || sequence < min) {
        mins.put(partition, sequence);
      }
    }

    boolean dangling(DeleteFile delete) {
      long sequence = delete.dataSequenceNumber();
      if (delete.content() == FileContent.EQUALITY_DELETES) {
        // Applies to data files with a lower sequence number.
        return specs.get(delete.specId()).isUnpartitioned()
            ? tableWide >= sequence
            : min(delete) >= sequence;
      }
      // Position deletes apply to data files with a lower or equal sequence number.
      return min(delete) > sequence;
    }

    private long min(DeleteFile delete) {
      StructLikeMap<Long> mins = byPartition.get(delete.specId());
      Long min = mins == null ? null : mins.get(delete.partition());
      return min == null ? Long.MAX_VALUE : min;
    }
  }
}
