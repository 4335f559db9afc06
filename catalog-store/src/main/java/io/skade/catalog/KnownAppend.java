package io.skade.catalog;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotAncestryValidator;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;

/**
 * An append of a skade table that tells the table's commit which data files it adds, so that a
 * reader of the commit in this JVM ({@link CommittedMetadata.WriteListener}) has them without
 * parsing the manifest list and manifests the append wrote — what a changelog source following the
 * table otherwise does on every commit before it can read a row.
 *
 * <p>The files are handed over only when they are provably the snapshot's added files, as its
 * manifests list them: the append was given files alone (an appended manifest's files are not known
 * here), its commit made exactly one snapshot, an append to a table of format 2, and that
 * snapshot's summary counts as many added files, records and bytes. Iceberg's append keeps its
 * files across retries, so whichever attempt wins adds these files.
 */
final class KnownAppend implements AppendFiles {
  /** An append committing on this thread to the table of {@code ops}. */
  private record Committing(TableOperations ops, List<DataFile> files) {}

  private static final ThreadLocal<Committing> COMMITTING = new ThreadLocal<>();

  /** Iceberg's class of data and delete files, which holds their sequence numbers. */
  private static final Class<?> BASE_FILE = baseFile();

  /** Its setters of the data and the file sequence number; empty if they cannot be had. */
  private static final List<Method> SET_SEQUENCE_NUMBERS = sequenceNumberSetters();

  private final AppendFiles append;
  private final TableOperations ops;
  private final Map<String, DataFile> files = new LinkedHashMap<>();
  private boolean manifestsAppended;

  KnownAppend(AppendFiles append, TableOperations ops) {
    this.append = append;
    this.ops = ops;
  }

  /**
   * Per snapshot among {@code addedSnapshotIds} of {@code metadata}, which {@code ops} is
   * committing, the data files it adds when a {@link KnownAppend} on this thread made it; else
   * empty.
   */
  static Map<Long, List<DataFile>> added(
      TableOperations ops, TableMetadata metadata, List<Long> addedSnapshotIds) {
    Committing committing = COMMITTING.get();
    if (committing == null
        || committing.ops() != ops
        || addedSnapshotIds.size() != 1
        || metadata.formatVersion() != 2 // a later format assigns row ids in the manifests
        || SET_SEQUENCE_NUMBERS.isEmpty()) {
      return Map.of();
    }
    Snapshot snapshot = metadata.snapshot(addedSnapshotIds.get(0));
    if (snapshot == null
        || !DataOperations.APPEND.equals(snapshot.operation())
        || !summarized(snapshot, committing.files())) {
      return Map.of();
    }
    List<DataFile> files = new ArrayList<>(committing.files().size());
    for (DataFile file : committing.files()) {
      DataFile listed = asListed(file, snapshot.sequenceNumber());
      if (listed == null) {
        return Map.of();
      }
      files.add(listed);
    }
    return Map.of(snapshot.snapshotId(), List.copyOf(files));
  }

  /** Whether {@code snapshot}'s summary counts {@code files}: their number, records and bytes. */
  private static boolean summarized(Snapshot snapshot, List<DataFile> files) {
    Map<String, String> summary = snapshot.summary();
    long records = files.stream().mapToLong(DataFile::recordCount).sum();
    long bytes = files.stream().mapToLong(DataFile::fileSizeInBytes).sum();
    return summary != null
        && String.valueOf(files.size()).equals(summary.get(SnapshotSummary.ADDED_FILES_PROP))
        && String.valueOf(records).equals(summary.get(SnapshotSummary.ADDED_RECORDS_PROP))
        && String.valueOf(bytes).equals(summary.get(SnapshotSummary.ADDED_FILE_SIZE_PROP));
  }

  /**
   * A copy of {@code file} as the snapshot's manifest lists it: with the snapshot's sequence number
   * as its data and file sequence numbers (set by Iceberg's manifest reader on reading an added
   * entry, with no public way to set them); null when the copy is no file of Iceberg's own.
   */
  private static DataFile asListed(DataFile file, long sequenceNumber) {
    DataFile copy = file.copy();
    if (!BASE_FILE.isInstance(copy)) {
      return null;
    }
    try {
      for (Method set : SET_SEQUENCE_NUMBERS) {
        set.invoke(copy, sequenceNumber);
      }
      return copy;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null; // the files are then read from the manifests
    }
  }

  private static Class<?> baseFile() {
    try {
      return Class.forName("org.apache.iceberg.BaseFile");
    } catch (ClassNotFoundException e) {
      return Void.class; // no file is an instance: nothing is handed over
    }
  }

  private static List<Method> sequenceNumberSetters() {
    try {
      List<Method> setters = new ArrayList<>();
      for (String name : List.of("setDataSequenceNumber", "setFileSequenceNumber")) {
        Method setter = BASE_FILE.getMethod(name, Long.class);
        setter.setAccessible(true); // a public method of a class private to Iceberg's package
        setters.add(setter);
      }
      return List.copyOf(setters);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return List.of();
    }
  }

  @Override
  public AppendFiles appendFile(DataFile file) {
    append.appendFile(file);
    files.putIfAbsent(file.location(), file);
    return this;
  }

  @Override
  public AppendFiles appendManifest(ManifestFile file) {
    append.appendManifest(file);
    manifestsAppended = true;
    return this;
  }

  @Override
  public void commit() {
    if (manifestsAppended) {
      append.commit();
      return;
    }
    Committing outer = COMMITTING.get();
    COMMITTING.set(new Committing(ops, List.copyOf(files.values())));
    try {
      append.commit();
    } finally {
      if (outer == null) {
        COMMITTING.remove();
      } else {
        COMMITTING.set(outer);
      }
    }
  }

  @Override
  public Snapshot apply() {
    return append.apply();
  }

  @Override
  public Object updateEvent() {
    return append.updateEvent();
  }

  @Override
  public AppendFiles set(String property, String value) {
    append.set(property, value);
    return this;
  }

  @Override
  public AppendFiles deleteWith(Consumer<String> deleteFunc) {
    append.deleteWith(deleteFunc);
    return this;
  }

  @Override
  public AppendFiles stageOnly() {
    append.stageOnly();
    return this;
  }

  @Override
  public AppendFiles scanManifestsWith(ExecutorService executorService) {
    append.scanManifestsWith(executorService);
    return this;
  }

  @Override
  public AppendFiles toBranch(String branch) {
    append.toBranch(branch);
    return this;
  }

  @Override
  public AppendFiles validateWith(SnapshotAncestryValidator validator) {
    append.validateWith(validator);
    return this;
  }
}
