package io.skade.write;

import io.skade.lineage.CommitLineage;
import io.skade.lineage.LineageDataset;
import io.skade.scan.DataFileRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.SortOrderComparators;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.GenericFileWriterFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.Projections;
import org.apache.iceberg.expressions.StrictMetricsEvaluator;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriteResult;
import org.apache.iceberg.io.DeleteWriteResult;
import org.apache.iceberg.io.FileWriter;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.io.PartitioningDVWriter;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.CharSequenceSet;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.iceberg.util.StructLikeMap;

/**
 * skade's embedded write API: appends, upserts, deletes and overwrites on an Iceberg {@link Table},
 * each one commit, written with Iceberg's own file writers (Parquet).
 *
 * <p>Upserts and key deletes are merge-on-read: an equality delete on the table's identifier
 * fields, plus the new rows, in one {@link RowDelta}. The deletes are written under every partition
 * spec that still has live data files (after a partition spec change), since an equality delete
 * reaches only data files of its own spec; the new rows go under the current spec. Each of those
 * specs must partition by identifier fields only, so a key never changes partition. Position
 * deletes are position delete files on format v2 and deletion vectors on v3. An overwrite by filter
 * replaces exactly the rows matching the filter: files holding only matching rows are removed,
 * matching rows of other files deleted by position (rewritten on format v1). Files written here
 * carry the table's field ids and are laid out as {@link FileLayout} says: rows in the table's sort
 * order (by its key when it declares none), Parquet bloom filters on the key columns unless the
 * table sets them itself.
 *
 * <p>Not thread-safe: give each writing thread its own writer.
 */
public final class TableWriter {
  private static final AtomicInteger WRITER_IDS = new AtomicInteger();

  private final Table table;
  private final int writerId = WRITER_IDS.incrementAndGet();
  private final OutputFileFactory files;
  private Map<String, String> lineage = Map.of();

  public TableWriter(Table table) {
    this.table = table;
    this.files =
        OutputFileFactory.builderFor(table, writerId, 0).format(FileFormat.PARQUET).build();
  }

  /**
   * Names who this writer's later commits come from and what they are made from, for lineage
   * ({@link CommitLineage} reads it from each snapshot's summary); returns this writer.
   *
   * @param actor who writes, for example an application's name
   * @param inputs the datasets the written rows come from
   */
  public TableWriter describedAs(String actor, List<LineageDataset> inputs) {
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put(CommitLineage.ACTOR, Objects.requireNonNull(actor, "actor"));
    if (!inputs.isEmpty()) {
      properties.put(CommitLineage.INPUTS, CommitLineage.encodeInputs(inputs));
    }
    this.lineage = Map.copyOf(properties);
    return this;
  }

  /** {@code update}, carrying this writer's lineage properties in its snapshot summary. */
  private <T extends SnapshotUpdate<T>> T described(T update) {
    lineage.forEach(update::set);
    return update;
  }

  /** Appends {@code rows}; returns the new snapshot. */
  public Snapshot append(Iterable<Record> rows) {
    List<DataFile> written = writeDataFiles(rows);
    AppendFiles append = table.newAppend();
    written.forEach(append::appendFile);
    described(append).commit();
    return table.currentSnapshot();
  }

  /**
   * Inserts {@code rows}, replacing any current row with the same identifier-field values (the last
   * of several rows with one key wins); returns the new snapshot.
   */
  public Snapshot upsert(Iterable<Record> rows) {
    Schema keys = requireKeySchema("upsert");
    List<PartitionSpec> specs = keyDeleteSpecs("upsert");
    StructLikeMap<Record> latest = StructLikeMap.create(keys.asStruct());
    for (Record row : rows) {
      latest.put(keyOf(row, keys), row);
    }
    List<Record> deletes = new ArrayList<>(latest.size());
    latest.values().forEach(row -> deletes.add(project(row, keys)));
    RowDelta delta = table.newRowDelta();
    writeEqualityDeletes(deletes, keys, specs).forEach(delta::addDeletes);
    writeDataFiles(latest.values()).forEach(delta::addRows);
    described(delta).commit();
    return table.currentSnapshot();
  }

  /**
   * Deletes the rows whose identifier-field values equal those of {@code keys} (records of the
   * table's schema, or of any schema holding the identifier fields by name); returns the new
   * snapshot.
   */
  public Snapshot deleteKeys(Iterable<Record> keys) {
    Schema keySchema = requireKeySchema("delete by key");
    List<PartitionSpec> specs = keyDeleteSpecs("delete by key");
    List<Record> deletes = new ArrayList<>();
    for (Record key : keys) {
      deletes.add(project(key, keySchema));
    }
    RowDelta delta = table.newRowDelta();
    writeEqualityDeletes(deletes, keySchema, specs).forEach(delta::addDeletes);
    described(delta).commit();
    return table.currentSnapshot();
  }

  /**
   * Deletes rows by position: for each live data file (by path), the 0-based positions of its rows
   * to delete. Writes position delete files on format v2, deletion vectors (merged with the file's
   * existing one) on v3. Returns the new snapshot.
   */
  public Snapshot deletePositions(Map<String, ? extends Collection<Long>> positionsByFile) {
    Snapshot base = table.currentSnapshot();
    Map<String, Collection<Long>> positions = new LinkedHashMap<>();
    positionsByFile.forEach(
        (path, list) -> {
          if (!list.isEmpty()) {
            positions.put(path, list);
          }
        });
    if (positions.isEmpty()) {
      return base; // nothing to delete: no empty commit
    }
    Map<String, FileScanTask> live = liveDataFiles(positions.keySet());
    positions.forEach(
        (path, list) -> {
          long rows = live.get(path).file().recordCount();
          for (long position : list) {
            if (position < 0 || position >= rows) {
              throw new IllegalArgumentException(
                  "cannot delete position "
                      + position
                      + " of "
                      + path
                      + ": the file holds "
                      + rows
                      + " rows (positions 0.."
                      + (rows - 1)
                      + ")");
            }
          }
        });
    described(positionDelta(base, positions, live)).commit();
    return table.currentSnapshot();
  }

  /**
   * Replaces exactly the live rows matching {@code filter} with {@code rows}, in one commit (one
   * snapshot), whatever the partitioning; returns the new snapshot (the current one when nothing
   * matches and {@code rows} is empty).
   *
   * <p>The live data files that may hold matching rows are planned at the current snapshot. A file
   * Iceberg can prove holds only matching rows (its partition, under the strict projection of the
   * filter, or its column metrics) is removed whole, with its file-scoped position deletes. Any
   * other such file is read under its deletes and the filter evaluated on each live row: when every
   * live row matches, the file is removed whole; otherwise the matching rows are deleted by
   * position, as {@link #deletePositions} does (position delete files on format v2, a deletion
   * vector merged with the file's existing one on v3). On format v1, which has no delete files, a
   * partly matching file is rewritten instead (copy-on-write): its live rows that do not match go
   * to new files under the current spec, and it is removed.
   *
   * <p>The commit fails, rather than leave a matching row behind, when another writer since the
   * planned snapshot added data files that may hold matching rows, or removed or rewrote a file
   * this overwrite removes or deletes rows of. Partly matching files must be Parquet.
   */
  public Snapshot overwrite(Expression filter, Iterable<Record> rows) {
    Snapshot base = table.currentSnapshot();
    Matches matches = base == null ? new Matches() : matches(filter);
    Iterable<Record> toWrite = rows;
    if (!matches.kept.isEmpty()) {
      List<Record> all = new ArrayList<>(matches.kept);
      rows.forEach(all::add);
      toWrite = all;
    }
    List<DataFile> written = writeDataFiles(toWrite);
    if (matches.isEmpty() && written.isEmpty()) {
      return base; // nothing to replace, nothing to add: no empty commit
    }
    RowDelta delta = positionDelta(base, matches.positions, matches.partly);
    matches.removed.forEach(delta::removeRows);
    matches.removedDeletes.forEach(delta::removeDeletes);
    written.forEach(delta::addRows);
    // A matching row appended by someone else since base must not survive the overwrite; a
    // file removed here must not have been rewritten (e.g. compacted) meanwhile.
    delta.conflictDetectionFilter(filter).validateNoConflictingDataFiles().validateDeletedFiles();
    described(delta).commit();
    return table.currentSnapshot();
  }

  /**
   * A new {@link RowDelta}, validated from {@code base}, deleting {@code positionsByFile}
   * (non-empty position lists of files of {@code live}): position delete files on format v2,
   * deletion vectors merged with each file's existing one (which is removed) on v3. Not committed,
   * so a caller can add more to the same commit.
   */
  private RowDelta positionDelta(
      Snapshot base,
      Map<String, ? extends Collection<Long>> positionsByFile,
      Map<String, FileScanTask> live) {
    RowDelta delta = table.newRowDelta();
    if (base != null) {
      // Conflicts are what others committed after the files were planned, not before.
      delta.validateFromSnapshot(base.snapshotId());
    }
    if (positionsByFile.isEmpty()) {
      return delta;
    }
    DeleteWriteResult result =
        formatVersion() >= 3
            ? writeDeletionVectors(positionsByFile, live)
            : writePositionDeletes(positionsByFile, live);
    result.deleteFiles().forEach(delta::addDeletes);
    Map<String, DeleteFile> replaced = new HashMap<>();
    result
        .rewrittenDeleteFiles()
        .forEach(file -> replaced.put(file.location() + "@" + file.contentOffset(), file));
    if (formatVersion() >= 3) {
      // The new vector holds the old positions too; the old one must go (one DV per data file).
      for (String path : positionsByFile.keySet()) {
        live.get(path).deletes().stream()
            .filter(ContentFileUtil::isDV)
            .forEach(file -> replaced.put(file.location() + "@" + file.contentOffset(), file));
      }
    }
    replaced.values().forEach(delta::removeDeletes);
    delta.validateDataFilesExist(result.referencedDataFiles());
    return delta;
  }

  // ---- overwrite by filter -----------------------------------------------------------------

  /**
   * What an overwrite by a filter changes in the live data files: files removed from the table
   * (whole matches, and on v1 partly matching files rewritten) with their file-scoped position
   * delete files, positions to delete in partly matching files (format v2 and later) with those
   * files' scan tasks, and (v1) the rows of rewritten files that stay.
   */
  private static final class Matches {
    final List<DataFile> removed = new ArrayList<>();
    final List<DeleteFile> removedDeletes = new ArrayList<>();
    final Map<String, List<Long>> positions = new LinkedHashMap<>();
    final Map<String, FileScanTask> partly = new HashMap<>();
    final List<Record> kept = new ArrayList<>();

    void remove(FileScanTask task) {
      removed.add(task.file());
      // Iceberg drops a removed file's deletion vector itself; a v2 position delete file that
      // references only this file would dangle.
      task.deletes().stream()
          .filter(
              file ->
                  file.content() == FileContent.POSITION_DELETES
                      && !ContentFileUtil.isDV(file)
                      && task.file()
                          .location()
                          .equals(ContentFileUtil.referencedDataFileLocation(file)))
          .forEach(removedDeletes::add);
    }

    boolean isEmpty() {
      return removed.isEmpty() && positions.isEmpty();
    }
  }

  /** The rows matching {@code filter} in the live data files of the current snapshot. */
  private Matches matches(Expression filter) {
    Schema schema = table.schema();
    boolean copyOnWrite = formatVersion() < 2;
    StrictMetricsEvaluator allByMetrics = new StrictMetricsEvaluator(schema, filter);
    Map<Integer, Evaluator> allByPartition = new HashMap<>();
    Matches matches = new Matches();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
      for (FileScanTask task : tasks) {
        DataFile file = task.file();
        Evaluator partition =
            allByPartition.computeIfAbsent(
                file.specId(),
                id -> {
                  PartitionSpec spec = table.specs().get(id);
                  return new Evaluator(
                      spec.partitionType(), Projections.strict(spec).project(filter));
                });
        if (partition.eval(file.partition()) || allByMetrics.eval(file)) {
          matches.remove(task);
          continue;
        }
        FileMatch match = match(task, filter, copyOnWrite);
        if (match.matching().isEmpty()) {
          continue;
        }
        if (match.matching().size() == match.live()) {
          matches.remove(task);
        } else if (copyOnWrite) {
          matches.remove(task);
          matches.kept.addAll(match.kept());
        } else {
          matches.positions.put(file.location(), match.matching());
          matches.partly.put(file.location(), task);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot plan the files of " + table.name(), e);
    }
    return matches;
  }

  /**
   * A data file's live rows against a filter: how many there are, the positions of those that match
   * and (when {@code keep}) those that do not, as rows of the table schema.
   */
  private record FileMatch(long live, List<Long> matching, List<Record> kept) {}

  private FileMatch match(FileScanTask task, Expression filter, boolean keep) {
    Schema schema = table.schema();
    Schema requested = TypeUtil.join(schema, new Schema(MetadataColumns.ROW_POSITION));
    GenericDeleteFilter deletes = new GenericDeleteFilter(table.io(), task, schema, requested);
    Schema required = deletes.requiredSchema();
    Evaluator matches = new Evaluator(required.asStruct(), filter);
    InternalRecordWrapper internal = new InternalRecordWrapper(required.asStruct());
    long live = 0;
    List<Long> matching = new ArrayList<>();
    List<Record> kept = new ArrayList<>();
    try (CloseableIterable<Record> records = deletes.filter(open(task, required, filter))) {
      for (Record record : records) {
        live++;
        if (matches.eval(internal.wrap(record))) {
          matching.add((Long) record.getField(MetadataColumns.ROW_POSITION.name()));
        } else if (keep) {
          GenericRecord row = GenericRecord.create(schema);
          schema.columns().forEach(f -> row.setField(f.name(), record.getField(f.name())));
          kept.add(row);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot read " + task.file().location() + " of table " + table.name(), e);
    }
    return new FileMatch(live, matching, kept);
  }

  /**
   * A task's data file, every row (no row group skipped: the rows not matching the filter are
   * counted, and kept on format v1), in {@code required}.
   */
  private CloseableIterable<Record> open(FileScanTask task, Schema required, Expression filter) {
    DataFile file = task.file();
    if (file.format() != FileFormat.PARQUET) {
      throw new UnsupportedOperationException(
          "cannot overwrite by filter "
              + filter
              + " in table "
              + table.name()
              + ": data file "
              + file.location()
              + " may hold rows"
              + " that do not match, so its rows must be read, and it is "
              + file.format()
              + "; skade reads Parquet data files only, so align the filter with the partitioning"
              + " or rewrite the file to Parquet first");
    }
    return DataFileRows.read(table, task, required, Expressions.alwaysTrue());
  }

  // ---- files -------------------------------------------------------------------------------

  /**
   * Writes {@code rows} to new data files (one per partition) without committing them, e.g. for a
   * {@code RewriteFiles} compaction or a commit the caller assembles.
   */
  public List<DataFile> writeDataFiles(Iterable<Record> rows) {
    PartitionSpec spec = table.spec();
    Map<PartitionKey, List<Record>> groups = byPartition(rows, table.schema(), spec);
    SortOrder order = FileLayout.order(table);
    if (order.isSorted()) { // sorted files keep key ranges of pages narrow: lookups read less
      Comparator<StructLike> byOrder = SortOrderComparators.forSchema(table.schema(), order);
      InternalRecordWrapper left = new InternalRecordWrapper(table.schema().asStruct());
      InternalRecordWrapper right = new InternalRecordWrapper(table.schema().asStruct());
      groups
          .values()
          .forEach(group -> group.sort((a, b) -> byOrder.compare(left.wrap(a), right.wrap(b))));
    }
    GenericFileWriterFactory factory = factory(largest(groups)).build();
    return write(spec, groups, (file, partition) -> factory.newDataWriter(file, spec, partition));
  }

  /**
   * Writes the equality deletes of {@code deletes} (records of the key schema) under each of {@code
   * specs}: one file per partition of each spec, so a key is deleted from the data files of every
   * spec.
   */
  private List<DeleteFile> writeEqualityDeletes(
      List<Record> deletes, Schema keys, List<PartitionSpec> specs) {
    int[] fieldIds = keys.columns().stream().mapToInt(Types.NestedField::fieldId).toArray();
    List<DeleteFile> written = new ArrayList<>();
    for (PartitionSpec spec : specs) {
      Map<PartitionKey, List<Record>> groups = byPartition(deletes, keys, spec);
      GenericFileWriterFactory factory =
          factory(largest(groups)).equalityFieldIds(fieldIds).equalityDeleteRowSchema(keys).build();
      written.addAll(
          write(
              spec,
              groups,
              (file, partition) -> factory.newEqualityDeleteWriter(file, spec, partition)));
    }
    return written;
  }

  /**
   * Groups rows of {@code schema} (which holds the source fields of {@code spec}) by their
   * partition under {@code spec}.
   */
  private static Map<PartitionKey, List<Record>> byPartition(
      Iterable<Record> rows, Schema schema, PartitionSpec spec) {
    PartitionKey partitioner = new PartitionKey(spec, schema);
    InternalRecordWrapper internal = new InternalRecordWrapper(schema.asStruct());
    Map<PartitionKey, List<Record>> groups = new LinkedHashMap<>();
    for (Record row : rows) {
      partitioner.partition(internal.wrap(row));
      groups.computeIfAbsent(partitioner.copy(), p -> new ArrayList<>()).add(row);
    }
    return groups;
  }

  private static int largest(Map<PartitionKey, List<Record>> groups) {
    return groups.values().stream().mapToInt(List::size).max().orElse(1);
  }

  /** One file per partition group of {@code spec}. */
  private <F extends ContentFile<F>> List<F> write(
      PartitionSpec spec,
      Map<PartitionKey, List<Record>> groups,
      BiFunction<EncryptedOutputFile, StructLike, FileWriter<Record, ?>> writers) {
    List<F> written = new ArrayList<>();
    for (Map.Entry<PartitionKey, List<Record>> group : groups.entrySet()) {
      StructLike partition = spec.isPartitioned() ? group.getKey() : null;
      FileWriter<Record, ?> writer = writers.apply(newOutputFile(spec, partition), partition);
      try (writer) {
        group.getValue().forEach(writer::write);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write a file of table " + table.name(), e);
      }
      written.addAll(contentFiles(writer.result()));
    }
    return written;
  }

  /** A new file in {@code partition} of {@code spec}; {@code null} for an unpartitioned spec. */
  private EncryptedOutputFile newOutputFile(PartitionSpec spec, StructLike partition) {
    return partition == null ? files.newOutputFile() : files.newOutputFile(spec, partition);
  }

  @SuppressWarnings("unchecked")
  private static <F> List<F> contentFiles(Object result) {
    if (result instanceof DataWriteResult data) {
      return (List<F>) data.dataFiles();
    }
    return (List<F>) ((DeleteWriteResult) result).deleteFiles();
  }

  private DeleteWriteResult writePositionDeletes(
      Map<String, ? extends Collection<Long>> positionsByFile, Map<String, FileScanTask> live) {
    GenericFileWriterFactory factory = factory(1).build();
    List<DeleteFile> written = new ArrayList<>();
    CharSequenceSet referenced = CharSequenceSet.empty();
    // Position deletes are sorted by (file, position); one delete file per data file here.
    for (String path : new TreeSet<>(positionsByFile.keySet())) {
      DataFile dataFile = live.get(path).file();
      PartitionSpec spec = table.specs().get(dataFile.specId());
      StructLike partition = spec.isPartitioned() ? dataFile.partition() : null;
      var writer = factory.newPositionDeleteWriter(newOutputFile(spec, partition), spec, partition);
      PositionDelete<Record> delete = PositionDelete.create();
      try (writer) {
        for (long position : new TreeSet<>(positionsByFile.get(path))) {
          writer.write(delete.set(path, position));
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write a position delete file of " + table.name(), e);
      }
      written.addAll(writer.result().deleteFiles());
      referenced.add(path);
    }
    return new DeleteWriteResult(written, referenced);
  }

  private DeleteWriteResult writeDeletionVectors(
      Map<String, ? extends Collection<Long>> positionsByFile, Map<String, FileScanTask> live) {
    BaseDeleteLoader loader = new BaseDeleteLoader(file -> table.io().newInputFile(file));
    // A v3 data file has at most one deletion vector: the new one includes the old positions.
    OutputFileFactory puffinFiles =
        OutputFileFactory.builderFor(table, writerId, 0).format(FileFormat.PUFFIN).build();
    PartitioningDVWriter<Record> writer =
        new PartitioningDVWriter<>(
            puffinFiles,
            path ->
                loader.loadPositionDeletes(
                    live.get(path.toString()).deletes().stream()
                        .filter(file -> file.content() == FileContent.POSITION_DELETES)
                        .toList(),
                    path));
    PositionDelete<Record> delete = PositionDelete.create();
    try (writer) {
      for (Map.Entry<String, ? extends Collection<Long>> e : positionsByFile.entrySet()) {
        DataFile dataFile = live.get(e.getKey()).file();
        PartitionSpec spec = table.specs().get(dataFile.specId());
        for (long position : e.getValue()) {
          writer.write(delete.set(e.getKey(), position), spec, dataFile.partition());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a deletion vector of " + table.name(), e);
    }
    return writer.result();
  }

  private Map<String, FileScanTask> liveDataFiles(Set<String> paths) {
    Map<String, FileScanTask> live = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        String path = task.file().location();
        if (paths.contains(path)) {
          live.put(path, task);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot plan the files of " + table.name(), e);
    }
    for (String path : paths) {
      if (!live.containsKey(path)) {
        throw new IllegalArgumentException(
            "cannot delete by position in "
                + path
                + ": it is not a"
                + " live data file of table "
                + table.name()
                + " at its current snapshot; list the"
                + " table's files (e.g. its 'files' metadata table) for valid paths");
      }
    }
    return live;
  }

  // ---- keys --------------------------------------------------------------------------------

  /**
   * Iceberg's generic writers, with bloom filters on the identifier columns unless the table
   * configures them; sized for {@code rowsPerFile} distinct keys (Parquet's default size, 1 MiB,
   * would dwarf small files).
   */
  private GenericFileWriterFactory.Builder factory(int rowsPerFile) {
    return new GenericFileWriterFactory.Builder(table)
        .dataFileFormat(FileFormat.PARQUET)
        .deleteFileFormat(FileFormat.PARQUET)
        .writerProperties(FileLayout.keyBloomFilters(table, rowsPerFile));
  }

  private Schema requireKeySchema(String operation) {
    Schema schema = table.schema();
    Set<Integer> ids = schema.identifierFieldIds();
    if (ids.isEmpty()) {
      throw new IllegalArgumentException(
          "cannot "
              + operation
              + " on table "
              + table.name()
              + ": it has no identifier fields (primary key); set them with"
              + " table.updateSchema().setIdentifierFields(...), or use append and deletePositions");
    }
    return schema.select(schema.identifierFieldNames());
  }

  /**
   * The partition specs a key's equality delete must be written under: the current spec (first) and
   * every other spec that still has live data files, since an equality delete of a spec reaches
   * only data files of that spec (one of an unpartitioned spec reaches all of them). Each must
   * partition by identifier fields only, so that a key's delete can be placed in the one partition
   * of that spec where the key's rows are.
   */
  private List<PartitionSpec> keyDeleteSpecs(String operation) {
    Set<Integer> specIds = new LinkedHashSet<>();
    specIds.add(table.spec().specId());
    Snapshot current = table.currentSnapshot();
    if (current != null) {
      // The manifest list tells, without reading manifests, which specs have live data files.
      for (ManifestFile manifest : current.dataManifests(table.io())) {
        if (manifest.hasAddedFiles() || manifest.hasExistingFiles()) {
          specIds.add(manifest.partitionSpecId());
        }
      }
    }
    List<PartitionSpec> specs = new ArrayList<>();
    for (int specId : specIds) {
      PartitionSpec spec = table.specs().get(specId);
      requirePartitionedByKey(spec, operation);
      specs.add(spec);
    }
    return specs;
  }

  private void requirePartitionedByKey(PartitionSpec spec, String operation) {
    Schema schema = table.schema();
    for (PartitionField field : spec.fields()) {
      if (schema.identifierFieldIds().contains(field.sourceId())) {
        continue;
      }
      String column = schema.findColumnName(field.sourceId());
      if (column == null) {
        column = "a dropped column (field id " + field.sourceId() + ")";
      }
      if (spec.specId() == table.spec().specId()) {
        throw new IllegalArgumentException(
            "cannot "
                + operation
                + " on table "
                + table.name()
                + ": it is partitioned by "
                + column
                + ", which is not an identifier field, so a key"
                + " could change partition; partition by identifier fields only (identity or"
                + " bucket)");
      }
      throw new UnsupportedOperationException(
          "cannot "
              + operation
              + " on table "
              + table.name()
              + ": it still has data files of partition spec "
              + spec.specId()
              + ", which is partitioned by "
              + column
              + ", not an identifier field, so a key's"
              + " equality delete cannot be placed in that spec's partitions; rewrite those files"
              + " into the current spec (id "
              + table.spec().specId()
              + ") first, e.g. a"
              + " table.newRewrite() of their rows written with writeDataFiles");
    }
  }

  /** The identifier-field values of {@code row}, as a key of the key schema's struct type. */
  private static StructLike keyOf(Record row, Schema keys) {
    Record key = project(row, keys);
    return new InternalRecordWrapper(keys.asStruct()).copyFor(key);
  }

  /** A record of the key schema holding {@code row}'s identifier-field values, by name. */
  private static Record project(Record row, Schema keys) {
    GenericRecord key = GenericRecord.create(keys);
    for (Types.NestedField field : keys.columns()) {
      Object value = row.getField(field.name());
      if (value == null) {
        throw new IllegalArgumentException(
            "row " + row + " has no value for identifier field '" + field.name() + "'");
      }
      key.setField(field.name(), value);
    }
    return key;
  }

  private int formatVersion() {
    return ((HasTableOperations) table).operations().current().formatVersion();
  }
}
