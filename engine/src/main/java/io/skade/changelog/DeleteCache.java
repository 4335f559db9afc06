package io.skade.changelog;

import io.skade.scan.FileFetch;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.DeleteLoader;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.util.StructLikeSet;
import org.apache.iceberg.util.StructProjection;

/**
 * The delete files of one changelog window, each loaded once. Iceberg's generic delete filter reads
 * every delete file that applies to a data file for each data file; one upsert's equality deletes
 * apply to every older file of their partition, and a window reads each such file under two states.
 * Loads are kept up to a budget of estimated heap; beyond it they are read again.
 */
final class DeleteCache {
  /** A rough cost of one key in a set: the hash entry and its wrapper. */
  private static final long SET_ENTRY_BYTES = 64;

  private final FileIO io;
  private final FileFetch files;
  private final long budgetBytes;
  private final Map<String, Object> loaded = new HashMap<>();
  private long usedBytes;

  /** Delete files of {@code io}, their bytes taken from {@code files} when it fetched them. */
  DeleteCache(FileIO io, FileFetch files) {
    this.io = io;
    this.files = files;
    this.budgetBytes = Runtime.getRuntime().maxMemory() / 8;
  }

  /**
   * Whether one of the equality delete files among {@code deletes} holds the key of a row read in
   * {@code rowSchema} (which has every such file's equality columns). Each file's keys are a set of
   * their own, loaded once; Iceberg's filter tests a row against the union of a data file's
   * equality deletes, a set built anew for each data file whose deletes differ.
   */
  Predicate<Record> anyHoldsKey(List<DeleteFile> deletes, Schema rowSchema) {
    List<Predicate<StructLike>> holds = new ArrayList<>();
    Loader loader = new Loader();
    for (DeleteFile file : deletes) {
      if (file.content() != FileContent.EQUALITY_DELETES) {
        continue;
      }
      Schema keySchema = TypeUtil.select(rowSchema, new HashSet<>(file.equalityFieldIds()));
      StructLikeSet keys = loader.loadEqualityDeletes(List.of(file), keySchema);
      StructProjection key = StructProjection.create(rowSchema, keySchema);
      holds.add(row -> keys.contains(key.wrap(row)));
    }
    InternalRecordWrapper internal = new InternalRecordWrapper(rowSchema.asStruct());
    return record -> {
      StructLike row = internal.wrap(record); // as the sets hold keys: Iceberg's internal values
      for (Predicate<StructLike> hold : holds) {
        if (hold.test(row)) {
          return true;
        }
      }
      return false;
    };
  }

  /** A delete filter for {@code task} whose delete files come through this cache. */
  GenericDeleteFilter filter(FileScanTask task, Schema tableSchema, Schema requested) {
    return new GenericDeleteFilter(io, task, tableSchema, requested) {
      @Override
      protected DeleteLoader newDeleteLoader() {
        return new Loader();
      }
    };
  }

  private final class Loader extends BaseDeleteLoader {
    /**
     * Loads delete files on the calling thread: nearly every load is a cache hit, and Iceberg's
     * parallel loading waits for its tasks by sleeping in steps of milliseconds, which cost seconds
     * per window once a table has a hundred equality delete files.
     */
    Loader() {
      super(files::input, null);
    }

    /**
     * The set of keys of several equality delete files, kept whole: one upsert's deletes apply to
     * every older file of their partition, which would each rebuild the same set.
     */
    @Override
    public StructLikeSet loadEqualityDeletes(Iterable<DeleteFile> files, Schema projection) {
      StringBuilder key = new StringBuilder("eq:").append(projection.asStruct());
      long size = 0;
      for (DeleteFile file : files) {
        key.append('\n').append(file.location());
        size += file.recordCount() * SET_ENTRY_BYTES;
      }
      return canCache(size)
          ? getOrLoad(key.toString(), () -> super.loadEqualityDeletes(files, projection), size)
          : super.loadEqualityDeletes(files, projection);
    }

    @Override
    protected boolean canCache(long size) {
      return usedBytes + size <= budgetBytes;
    }

    @Override
    @SuppressWarnings("unchecked")
    protected <V> V getOrLoad(String key, Supplier<V> load, long size) {
      Object value = loaded.get(key);
      if (value == null) {
        value = load.get();
        loaded.put(key, value);
        usedBytes += size;
      }
      return (V) value;
    }
  }
}
