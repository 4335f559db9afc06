package io.skade.scan;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.iceberg.BaseFileScanTask;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.expressions.ResidualEvaluator;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.iceberg.util.PartitionMap;
import org.apache.iceberg.util.PartitionSet;
import org.apache.iceberg.util.ThreadPools;

/**
 * The live data and delete files of a table at each snapshot of one changelog window, with the
 * deletes that apply to each data file there.
 *
 * <p>Every manifest of the window is read once (in parallel when there are several) and kept, so
 * the state at any snapshot of the window is assembled in memory from its manifest list instead of
 * planning a scan per snapshot. Which deletes apply follows Iceberg's planning rules: an equality
 * delete applies to older data files (lower data sequence number) of its partition, or of every
 * partition when written unpartitioned, unless column bounds prove it cannot match; a position
 * delete to data files of its partition or its referenced file, of an equal or lower sequence
 * number; a deletion vector to its referenced file only.
 *
 * <p>Files a {@link PartitionFilter} rules out are left out of every state, and manifests it rules
 * out are not read: a file's partition is the same at every snapshot, so such a file is missing
 * from both sides of any comparison and never shows as added or removed. The deletes that apply to
 * a kept data file are all kept too, since they share its partition (or apply to every partition,
 * written unpartitioned), which Iceberg's own scan planning relies on as well. Data files outside
 * the read's {@link FileSlice} are left out in the same way (a file's unit never changes either);
 * delete files are not sliced.
 */
public final class WindowFiles {
  private static final int PARALLEL_FROM = 4;

  /** How Iceberg names the threads of its worker pool ({@code ThreadPools.getWorkerPool}). */
  private static final String ICEBERG_WORKER_PREFIX = "iceberg-worker-pool";

  private static final Comparator<DeleteFile> BY_KEY = Comparator.comparing(WindowFiles::key);

  private final MetadataCache cache = MetadataCache.shared();
  private final Table table;
  private final PartitionFilter partitions;
  private final FileSlice slice;
  private final Map<String, List<DataFile>> dataManifests = new ConcurrentHashMap<>();
  private final Map<String, List<DeleteFile>> deleteManifests = new ConcurrentHashMap<>();

  /** Per plain-append snapshot, the data files it added, as a planner found them before. */
  private final Map<Long, List<DataFile>> knownAppends;

  public WindowFiles(Table table, PartitionFilter partitions, FileSlice slice) {
    this(table, partitions, slice, Map.of());
  }

  /**
   * As above, with {@code knownAppends}: per plain-append snapshot, every data file it added, as
   * {@link #appendedBy} gave them; {@link #appended} takes those snapshots' files from here rather
   * than from their manifests.
   */
  public WindowFiles(
      Table table,
      PartitionFilter partitions,
      FileSlice slice,
      Map<Long, List<DataFile>> knownAppends) {
    this.table = table;
    this.partitions = partitions;
    this.slice = slice;
    this.knownAppends = knownAppends;
  }

  /**
   * Every data file {@code snapshot} added, when it is a plain append whose added files its
   * sequence number tells apart (see {@link #appended}); otherwise null. Read through the shared
   * {@link MetadataCache}.
   */
  public static List<DataFile> appendedBy(Table table, Snapshot snapshot) {
    Live live = all(table).appended(List.of(snapshot));
    return live == null ? null : List.copyOf(live.data.values());
  }

  /**
   * Per plain append among {@code chain} (consecutive snapshots, each the parent of the next),
   * every data file it added, as {@link #appendedBy(Table, Snapshot)} gives them. A run of several
   * consecutive plain appends is read from the manifests of its last snapshot written since the run
   * began: one manifest list for the run rather than one per snapshot, and its manifests in
   * parallel. Such a run removes no file, so its last snapshot lists every file the run added, each
   * with its snapshot's sequence number.
   */
  public static Map<Long, List<DataFile>> appendedBy(Table table, List<Snapshot> chain) {
    Map<Long, List<DataFile>> appended = new HashMap<>();
    int start = 0;
    while (start < chain.size()) {
      int end = start;
      while (end < chain.size() && plainAppend(chain.get(end))) {
        end++;
      }
      List<Snapshot> run = chain.subList(start, end);
      WindowFiles reading = all(table);
      Map<Long, List<DataFile>> runFiles =
          run.size() > 1 && !reading.appendedHere(run) ? reading.appendedInRun(run) : null;
      if (runFiles != null) {
        appended.putAll(runFiles);
      } else {
        for (Snapshot snapshot : run) {
          List<DataFile> files = appendedBy(table, snapshot);
          if (files != null) {
            appended.put(snapshot.snapshotId(), files);
          }
        }
      }
      start = end + 1; // past the run and the snapshot that ended it, which is no plain append
    }
    return appended;
  }

  /** Whether every snapshot of {@code run} is an append of this JVM whose files are known. */
  private boolean appendedHere(List<Snapshot> run) {
    return run.stream().allMatch(snapshot -> cache.appendedHere(snapshot) != null);
  }

  private static boolean plainAppend(Snapshot snapshot) {
    return DataOperations.APPEND.equals(snapshot.operation()) && snapshot.sequenceNumber() > 0;
  }

  /**
   * Per snapshot of {@code run} (consecutive plain appends), the data files it added, read from the
   * data manifests of its last snapshot with a sequence number at or after the run's first; null
   * when a file's sequence number is unknown.
   */
  private Map<Long, List<DataFile>> appendedInRun(List<Snapshot> run) {
    long first = run.get(0).sequenceNumber();
    List<ManifestFile> written = new ArrayList<>();
    for (ManifestFile manifest : cache.manifests(run.get(run.size() - 1), table)) {
      if (manifest.content() != ManifestContent.DATA || manifest.sequenceNumber() < first) {
        continue; // an older manifest lists no file the run added
      }
      written.add(manifest);
    }
    read(written);
    Map<Long, Map<String, DataFile>> bySequence = new HashMap<>();
    for (ManifestFile manifest : written) {
      for (DataFile file : dataManifests.get(manifest.path())) {
        Long sequence = file.fileSequenceNumber();
        if (sequence == null) {
          return null;
        }
        bySequence.computeIfAbsent(sequence, s -> new TreeMap<>()).put(file.location(), file);
      }
    }
    Map<Long, List<DataFile>> appended = new HashMap<>();
    for (Snapshot snapshot : run) {
      Map<String, DataFile> files = bySequence.getOrDefault(snapshot.sequenceNumber(), Map.of());
      appended.put(snapshot.snapshotId(), List.copyOf(files.values()));
    }
    return appended;
  }

  /** Window files of {@code table} with no filter and no slice. */
  private static WindowFiles all(Table table) {
    return new WindowFiles(
        table,
        new PartitionFilter(table.specs(), table.schema(), Expressions.alwaysTrue(), false),
        FileSlice.ALL);
  }

  /**
   * Reads every manifest of {@code snapshots} that {@code partitions} keeps, through the shared
   * {@link MetadataCache}, so {@link #at} can assemble their states; a gone manifest throws
   * Iceberg's NotFoundException.
   */
  public void load(Collection<Snapshot> snapshots) {
    Map<String, ManifestFile> manifests = new HashMap<>();
    for (Snapshot snapshot : snapshots) {
      for (ManifestFile manifest : cache.manifests(snapshot, table)) {
        if (partitions.mayMatch(manifest)) {
          manifests.putIfAbsent(manifest.path(), manifest);
        } else if (manifest.content() == ManifestContent.DATA) {
          dataManifests.put(manifest.path(), List.of()); // so every state finds it, empty
        } else {
          deleteManifests.put(manifest.path(), List.of());
        }
      }
    }
    read(manifests.values());
  }

  /** Reads {@code manifests}, in parallel when several are not in the shared cache yet. */
  private void read(Collection<ManifestFile> manifests) {
    List<ManifestFile> toRead = new ArrayList<>();
    for (ManifestFile manifest : manifests) {
      if (cache.holds(manifest)) {
        load(manifest);
      } else {
        toRead.add(manifest);
      }
    }
    // On a worker of Iceberg's pool, waiting for other workers could wait for itself.
    if (toRead.size() < PARALLEL_FROM
        || Thread.currentThread().getName().startsWith(ICEBERG_WORKER_PREFIX)) {
      toRead.forEach(this::load);
    } else {
      loadInParallel(toRead);
    }
  }

  /**
   * The data files {@code snapshots} (consecutive, each the parent of the next) appended, as a
   * partial state that holds only them, when every one of them is a plain append; otherwise null. A
   * step into that state from {@link #empty} emits exactly their rows as inserts, which are the
   * snapshots' changes: an append adds no delete file and removes nothing, and no delete older than
   * a data file applies to it. Only the manifests the snapshots wrote are read, so the cost follows
   * the commit's size, not the table's; none for an append of this JVM that named its files ({@link
   * MetadataCache#appendedHere}).
   */
  public Live appended(List<Snapshot> snapshots) {
    Live live = new Live();
    for (Snapshot snapshot : snapshots) {
      List<DataFile> known = knownAppends.get(snapshot.snapshotId());
      if (known == null && plainAppend(snapshot)) {
        known = cache.appendedHere(snapshot);
      }
      if (known != null) {
        kept(known).forEach(file -> live.data.put(file.location(), file));
        continue;
      }
      List<ManifestFile> written = writtenBy(snapshot);
      if (written == null) {
        return null;
      }
      for (ManifestFile manifest : written) {
        if (manifest.hasAddedFiles() && partitions.mayMatch(manifest)) {
          for (DataFile file : kept(cache.dataFiles(manifest, table))) {
            Long sequence = file.fileSequenceNumber();
            if (sequence == null) {
              return null; // cannot tell added files from existing ones: compare states
            }
            if (sequence == snapshot.sequenceNumber()) { // a merged manifest lists older files too
              live.data.put(file.location(), file);
            }
          }
        }
      }
    }
    return live;
  }

  /**
   * The manifests {@code snapshot} wrote, when it is a plain append whose added files its sequence
   * number tells apart (format 2 on); otherwise null.
   */
  private List<ManifestFile> writtenBy(Snapshot snapshot) {
    if (!plainAppend(snapshot)) {
      return null;
    }
    List<ManifestFile> written = new ArrayList<>();
    for (ManifestFile manifest : cache.manifests(snapshot, table)) {
      if (manifest.snapshotId() != null && manifest.snapshotId() == snapshot.snapshotId()) {
        if (manifest.content() != ManifestContent.DATA || manifest.hasDeletedFiles()) {
          return null;
        }
        written.add(manifest);
      }
    }
    return written;
  }

  /**
   * Reads into the shared cache what a window ending at {@code snapshot} reads of it: the manifests
   * it wrote when it is a plain append, else all of its manifests.
   */
  static void prefetch(Table table, Snapshot snapshot) {
    WindowFiles files = all(table);
    if (files.appended(List.of(snapshot)) == null) {
      files.load(List.of(snapshot));
    }
  }

  /**
   * Reads into the shared cache what {@code snapshot} wrote: its manifest list and the manifests
   * written with it, data and deletes, whatever the operation; the rest of its manifests are older
   * snapshots' and most likely read already.
   */
  static void prefetchWritten(Table table, Snapshot snapshot) {
    WindowFiles files = all(table);
    for (ManifestFile manifest : files.cache.manifests(snapshot, table)) {
      if (manifest.snapshotId() != null && manifest.snapshotId() == snapshot.snapshotId()) {
        files.load(manifest);
      }
    }
  }

  /**
   * Reads manifests on Iceberg's worker pool, waiting on their futures (Iceberg's own task runner
   * waits by sleeping in steps, which costs milliseconds on every window).
   */
  private void loadInParallel(List<ManifestFile> toRead) {
    List<Future<?>> loads = new ArrayList<>(toRead.size());
    for (ManifestFile manifest : toRead) {
      loads.add(ThreadPools.getWorkerPool().submit(() -> load(manifest)));
    }
    try {
      for (Future<?> load : loads) {
        load.get();
      }
    } catch (InterruptedException e) {
      loads.forEach(load -> load.cancel(true));
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading manifests", e);
    } catch (ExecutionException e) {
      loads.forEach(load -> load.cancel(true));
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime; // NotFoundException among them: the caller reports missing history
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private void load(ManifestFile manifest) {
    switch (manifest.content()) {
      case DATA -> dataManifests.put(manifest.path(), kept(cache.dataFiles(manifest, table)));
      case DELETES ->
          deleteManifests.put(manifest.path(), kept(cache.deleteFiles(manifest, table)));
    }
  }

  /** The files the partition filter and the slice keep. */
  private <F extends ContentFile<F>> List<F> kept(List<F> files) {
    if (partitions.keepsAll() && slice.keepsAll()) {
      return files;
    }
    List<F> kept = new ArrayList<>();
    for (F file : files) {
      if (partitions.mayMatch(file) && slice.keeps(file, table.specs())) {
        kept.add(file);
      }
    }
    return kept;
  }

  /** The state at {@code snapshot}, whose manifests {@link #load} read. */
  public Live at(Snapshot snapshot) {
    Live live = new Live();
    for (ManifestFile manifest : cache.manifests(snapshot, table)) {
      if (manifest.content() == ManifestContent.DATA) {
        dataManifests.get(manifest.path()).forEach(file -> live.data.put(file.location(), file));
      } else {
        deleteManifests.get(manifest.path()).forEach(live::addDelete);
      }
    }
    return live;
  }

  /**
   * The live data files of {@code snapshot}, each as a scan task with the deletes that apply to it,
   * as Iceberg's scan planning gives them, but assembled from the manifests in the shared {@link
   * MetadataCache}: a snapshot parses only the manifests no earlier read of this JVM parsed, which
   * after a commit are the ones it wrote.
   */
  public static List<FileScanTask> tasks(Table table, Snapshot snapshot) {
    WindowFiles files = all(table);
    files.load(List.of(snapshot));
    Live live = files.at(snapshot);
    String schema = SchemaParser.toJson(table.schema());
    Map<Integer, String> specs = new HashMap<>();
    List<FileScanTask> tasks = new ArrayList<>(live.data.size());
    for (DataFile file : live.data.values()) {
      tasks.add(task(table, file, live.deletesFor(file), schema, specs));
    }
    return tasks;
  }

  /**
   * A scan task of {@code file} and its {@code deletes}, every row kept; {@code specs} caches the
   * table's partition specs as JSON by id.
   */
  public static FileScanTask task(
      Table table,
      DataFile file,
      List<DeleteFile> deletes,
      String schemaJson,
      Map<Integer, String> specs) {
    String spec =
        specs.computeIfAbsent(
            file.specId(), id -> PartitionSpecParser.toJson(table.specs().get(id)));
    return new BaseFileScanTask(
        file,
        deletes.toArray(new DeleteFile[0]),
        schemaJson,
        spec,
        ResidualEvaluator.unpartitioned(Expressions.alwaysTrue()));
  }

  /** The state before the first snapshot: nothing. */
  public Live empty() {
    return new Live();
  }

  /** One snapshot's live files, and the delete files that apply to each data file. */
  public final class Live {
    /** Live data files by location, in location order. */
    public final Map<String, DataFile> data = new TreeMap<>();

    /** Live delete files by {@link #key}. */
    private final Map<String, DeleteFile> deletes = new HashMap<>();

    private final List<DeleteFile> globalEquality = new ArrayList<>();
    private final PartitionMap<List<DeleteFile>> equalityByPartition =
        PartitionMap.create(table.specs());
    private final PartitionMap<List<DeleteFile>> positionByPartition =
        PartitionMap.create(table.specs());
    private final Map<String, List<DeleteFile>> positionByPath = new HashMap<>();
    private final Map<String, DeleteFile> vectorByPath = new HashMap<>();

    private void addDelete(DeleteFile file) {
      deletes.put(key(file), file);
      if (file.content() == FileContent.EQUALITY_DELETES) {
        if (table.specs().get(file.specId()).isUnpartitioned()) {
          globalEquality.add(file);
        } else {
          equalityByPartition
              .computeIfAbsent(file.specId(), file.partition(), ArrayList::new)
              .add(file);
        }
      } else if (ContentFileUtil.isDV(file)) {
        vectorByPath.put(ContentFileUtil.referencedDataFileLocation(file), file);
      } else {
        String path = ContentFileUtil.referencedDataFileLocation(file);
        if (path != null) {
          positionByPath.computeIfAbsent(path, p -> new ArrayList<>()).add(file);
        } else {
          positionByPartition
              .computeIfAbsent(file.specId(), file.partition(), ArrayList::new)
              .add(file);
        }
      }
    }

    /** The delete files that apply to {@code file} in this state, in {@link #key} order. */
    public List<DeleteFile> deletesFor(DataFile file) {
      long sequence = file.dataSequenceNumber();
      List<DeleteFile> applying = new ArrayList<>();
      for (DeleteFile delete : globalEquality) {
        addEquality(file, sequence, delete, applying);
      }
      List<DeleteFile> partitionEquality = equalityByPartition.get(file.specId(), file.partition());
      if (partitionEquality != null) {
        partitionEquality.forEach(delete -> addEquality(file, sequence, delete, applying));
      }
      DeleteFile vector = vectorByPath.get(file.location());
      if (vector != null) {
        applying.add(vector); // a deletion vector replaces every position delete of its file
      } else {
        addPositions(sequence, positionByPartition.get(file.specId(), file.partition()), applying);
        addPositions(sequence, positionByPath.get(file.location()), applying);
      }
      applying.sort(BY_KEY);
      return applying;
    }

    private void addEquality(
        DataFile file, long sequence, DeleteFile delete, List<DeleteFile> applying) {
      if (delete.dataSequenceNumber() > sequence && mayMatch(file, delete)) {
        applying.add(delete);
      }
    }

    private static void addPositions(
        long sequence, List<DeleteFile> candidates, List<DeleteFile> applying) {
      if (candidates != null) {
        for (DeleteFile delete : candidates) {
          if (delete.dataSequenceNumber() >= sequence) {
            applying.add(delete);
          }
        }
      }
    }

    /**
     * The data files of {@code before} or this state whose applicable deletes may differ between
     * the two: those in a partition or path where a delete file appeared or went away.
     */
    public Set<String> deletesMayDiffer(Live before) {
      Set<String> touchedPaths = new HashSet<>();
      PartitionSet touchedPartitions = PartitionSet.create(table.specs());
      boolean global = false;
      for (Map.Entry<String, DeleteFile> e : symmetricDifference(before.deletes, deletes)) {
        DeleteFile delete = e.getValue();
        String path =
            delete.content() == FileContent.EQUALITY_DELETES
                ? null
                : ContentFileUtil.referencedDataFileLocation(delete);
        if (path != null) {
          touchedPaths.add(path);
        } else if (delete.content() == FileContent.EQUALITY_DELETES
            && table.specs().get(delete.specId()).isUnpartitioned()) {
          global = true;
        } else {
          touchedPartitions.add(delete.specId(), delete.partition());
        }
      }
      Set<String> candidates = new TreeSet<>();
      for (DataFile file : data.values()) {
        if (before.data.containsKey(file.location())
            && (global
                || touchedPaths.contains(file.location())
                || touchedPartitions.contains(file.specId(), file.partition()))) {
          candidates.add(file.location());
        }
      }
      return candidates;
    }
  }

  /**
   * A delete file's identity: its location, and for a deletion vector its offset too, since one
   * Puffin file holds the vectors of several data files.
   */
  public static String key(DeleteFile file) {
    return file.contentOffset() == null
        ? file.location()
        : file.location() + '@' + file.contentOffset();
  }

  private static List<Map.Entry<String, DeleteFile>> symmetricDifference(
      Map<String, DeleteFile> a, Map<String, DeleteFile> b) {
    List<Map.Entry<String, DeleteFile>> changed = new ArrayList<>();
    a.entrySet().stream().filter(e -> !b.containsKey(e.getKey())).forEach(changed::add);
    b.entrySet().stream().filter(e -> !a.containsKey(e.getKey())).forEach(changed::add);
    return changed;
  }

  /**
   * False when the column bounds of the data file and the equality delete file do not overlap on
   * some equality column, so no row of one can equal a key of the other.
   */
  private boolean mayMatch(DataFile file, DeleteFile delete) {
    Map<Integer, ByteBuffer> dataLower = file.lowerBounds();
    Map<Integer, ByteBuffer> dataUpper = file.upperBounds();
    Map<Integer, ByteBuffer> deleteLower = delete.lowerBounds();
    Map<Integer, ByteBuffer> deleteUpper = delete.upperBounds();
    if (dataLower == null || dataUpper == null || deleteLower == null || deleteUpper == null) {
      return true;
    }
    Schema schema = table.schema();
    for (int id : delete.equalityFieldIds()) {
      Types.NestedField field = schema.findField(id);
      if (field == null || !field.type().isPrimitiveType()) {
        continue;
      }
      ByteBuffer dl = dataLower.get(id);
      ByteBuffer du = dataUpper.get(id);
      ByteBuffer el = deleteLower.get(id);
      ByteBuffer eu = deleteUpper.get(id);
      if (mayHoldNull(file, id) && mayHoldNull(delete, id)) {
        continue; // null equals null for an equality delete, and bounds do not cover nulls
      }
      if (dl != null
          && du != null
          && el != null
          && eu != null
          && !overlap(field.type().asPrimitiveType(), dl, du, el, eu)) {
        return false;
      }
    }
    return true;
  }

  private static boolean mayHoldNull(ContentFile<?> file, int fieldId) {
    Map<Integer, Long> nulls = file.nullValueCounts();
    Long count = nulls == null ? null : nulls.get(fieldId);
    return count == null || count > 0;
  }

  private static <T> boolean overlap(
      Type.PrimitiveType type,
      ByteBuffer lowerA,
      ByteBuffer upperA,
      ByteBuffer lowerB,
      ByteBuffer upperB) {
    Comparator<T> compare = Comparators.forType(type);
    T la = Conversions.fromByteBuffer(type, lowerA);
    T ua = Conversions.fromByteBuffer(type, upperA);
    T lb = Conversions.fromByteBuffer(type, lowerB);
    T ub = Conversions.fromByteBuffer(type, upperB);
    return compare.compare(la, ub) <= 0 && compare.compare(lb, ua) <= 0;
  }
}
