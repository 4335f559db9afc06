package io.skade.changelog;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.DeleteLoader;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.StructLikeSet;

/**
 * The delete files of one changelog window, each loaded once. Iceberg's generic delete filter
 * reads every delete file that applies to a data file for each data file; one upsert's equality
 * deletes apply to every older file of their partition, and a window reads each such file under
 * two states. Loads are kept up to a budget of estimated heap; beyond it they are read again.
 */
final class DeleteCache {
  /** A rough cost of one key in a set: the hash entry and its wrapper. */
  private static final long SET_ENTRY_BYTES = 64;
  private final FileIO io;
  private final long budgetBytes;
  private final Map<String, Object> loaded = new HashMap<>();
  private long usedBytes;

  DeleteCache(FileIO io) {
    this.io = io;
    this.budgetBytes = Runtime.getRuntime().maxMemory() / 8;
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
     * parallel loading waits for its tasks by sleeping in steps of milliseconds, which cost
     * seconds per window once a table has a hundred equality delete files.
     */
    Loader() {
      super(file -> io.newInputFile(file.location()), null);
    }

    /**
     * The set of keys of several equality delete files, kept whole: one upsert's deletes apply
     * to every older file of their partition, which would each rebuild the same set.
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
