package io.skade.changelog;

import io.skade.scan.FileFetch;
import io.skade.scan.WindowFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * The keys newly added equality delete files delete, as expressions that prune the row groups a
 * changelog step reads: a step that only adds equality deletes changes only rows holding their
 * keys.
 */
final class EqualityDeleteKeys {
  /** Beyond this many newly deleted keys, most row groups hold one: pruning would not pay. */
  private static final long PRUNE_UP_TO_KEYS = 10_000;

  private static final Set<Type.TypeID> PRUNABLE =
      EnumSet.of(Type.TypeID.INTEGER, Type.TypeID.LONG, Type.TypeID.STRING);

  private final Schema schema;

  /** Per equality delete file, its keys as a pruning expression (null: not prunable). */
  private final Map<String, Expression> keysByFile = new HashMap<>();

  EqualityDeleteKeys(Schema schema) {
    this.schema = schema;
  }

  private static List<String> keys(List<DeleteFile> deletes) {
    return deletes.stream().map(WindowFiles::key).toList();
  }

  /**
   * The delete files {@code now} adds to {@code old} when they are all equality deletes and {@code
   * now} keeps every file of {@code old}; otherwise null.
   */
  static List<DeleteFile> added(List<DeleteFile> old, List<DeleteFile> now) {
    Set<String> before = new HashSet<>(keys(old));
    if (!new HashSet<>(keys(now)).containsAll(before)) {
      return null;
    }
    List<DeleteFile> added =
        now.stream().filter(d -> !before.contains(WindowFiles.key(d))).toList();
    return added.stream().allMatch(d -> d.content() == FileContent.EQUALITY_DELETES) ? added : null;
  }

  /**
   * The rows the equality deletes {@code added} can delete, as an expression for row-group pruning:
   * those holding one of their keys, when they are at most {@link #PRUNE_UP_TO_KEYS} keys of
   * integer or string columns. Otherwise every row group is read. (Keys an upsert deletes before
   * inserting them anew are in no older file, and the bloom filters skip nearly every row group.)
   */
  Expression rowsOf(List<DeleteFile> added, FileFetch files) {
    long keys = added.stream().mapToLong(DeleteFile::recordCount).sum();
    if (keys > PRUNE_UP_TO_KEYS) {
      return Expressions.alwaysTrue();
    }
    Expression any = Expressions.alwaysFalse();
    for (DeleteFile delete : added) {
      Expression keysOf = keysByFile.computeIfAbsent(delete.location(), l -> keysOf(delete, files));
      if (keysOf == null) {
        return Expressions.alwaysTrue();
      }
      any = Expressions.or(any, keysOf);
    }
    return any;
  }

  /** The keys an equality delete file deletes, as an expression; null if not prunable. */
  private Expression keysOf(DeleteFile delete, FileFetch files) {
    List<Types.NestedField> fields = new ArrayList<>();
    for (int id : delete.equalityFieldIds()) {
      Types.NestedField field = schema.findField(id);
      if (field == null || !PRUNABLE.contains(field.type().typeId())) {
        return null;
      }
      fields.add(field);
    }
    Schema keySchema = new Schema(fields);
    List<Record> keys = new ArrayList<>();
    try (CloseableIterable<Record> rows =
        Parquet.read(files.input(delete))
            .project(keySchema)
            .createReaderFunc(
                fileSchema -> GenericParquetReaders.buildReader(keySchema, fileSchema))
            .<Record>build()) {
      rows.forEach(keys::add);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read delete file " + delete.location(), e);
    }
    if (fields.size() == 1) {
      String name = fields.get(0).name();
      return Expressions.in(name, keys.stream().map(key -> key.getField(name)).toList());
    }
    Expression any = Expressions.alwaysFalse();
    for (Record key : keys) {
      Expression all = Expressions.alwaysTrue();
      for (Types.NestedField field : fields) {
        all = Expressions.and(all, Expressions.equal(field.name(), key.getField(field.name())));
      }
      any = Expressions.or(any, all);
    }
    return any;
  }
}
