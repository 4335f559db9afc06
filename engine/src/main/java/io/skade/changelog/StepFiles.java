package io.skade.changelog;

import io.skade.scan.WindowFiles;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;

/**
 * What one step of a changelog window reads: the states on either side, and the data files that can
 * hold a change — those gone, those whose applicable deletes changed, those arriving. Known before
 * the step reads anything, so its files can be fetched ahead ({@link #reads}).
 *
 * @param before the state before the step
 * @param after the state at its end
 * @param gone data files of {@code before} that {@code after} no longer holds
 * @param changed data files of both whose applicable deletes differ
 * @param arriving data files of {@code after} that {@code before} did not hold, in location order
 */
record StepFiles(
    WindowFiles.Live before,
    WindowFiles.Live after,
    List<DataFile> gone,
    List<Changed> changed,
    List<DataFile> arriving) {

  /** A data file with the deletes that apply to it before and after the step. */
  record Changed(DataFile file, List<DeleteFile> old, List<DeleteFile> now) {}

  /** The files a step from {@code before} to {@code after} reads. */
  static StepFiles between(WindowFiles.Live before, WindowFiles.Live after) {
    List<DataFile> gone = new ArrayList<>();
    for (DataFile file : before.data.values()) {
      if (!after.data.containsKey(file.location())) {
        gone.add(file);
      }
    }
    List<Changed> changed = new ArrayList<>();
    for (String path : after.deletesMayDiffer(before)) {
      DataFile file = after.data.get(path);
      List<DeleteFile> old = before.deletesFor(before.data.get(path));
      List<DeleteFile> now = after.deletesFor(file);
      if (!keys(old).equals(keys(now))) {
        changed.add(new Changed(file, old, now));
      }
    }
    List<DataFile> arriving =
        after.data.values().stream()
            .filter(file -> !before.data.containsKey(file.location()))
            .toList();
    return new StepFiles(before, after, gone, changed, arriving);
  }

  /**
   * The files the step reads, in the order it reads them: each data file after its deletes. A
   * changed file whose later state only adds equality deletes is read only in the row groups
   * holding their keys ({@link EqualityDeleteKeys}), so of it only its deletes are listed.
   */
  List<ContentFile<?>> reads() {
    List<ContentFile<?>> reads = new ArrayList<>();
    for (DataFile file : gone) {
      reads.addAll(before.deletesFor(file));
      reads.add(file);
    }
    for (Changed file : changed) {
      reads.addAll(file.old());
      reads.addAll(file.now());
      if (EqualityDeleteKeys.added(file.old(), file.now()) == null) {
        reads.add(file.file());
      }
    }
    for (DataFile file : arriving) {
      reads.addAll(after.deletesFor(file));
      reads.add(file);
    }
    return reads;
  }

  /** The delete files' identities ({@link WindowFiles#key}): what two states compare. */
  static List<String> keys(List<DeleteFile> deletes) {
    return deletes.stream().map(WindowFiles::key).toList();
  }
}
