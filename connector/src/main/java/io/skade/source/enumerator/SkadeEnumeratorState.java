package io.skade.source.enumerator;

import io.skade.catalog.ConsumerCursor;
import io.skade.source.split.ChangelogSplit;
import java.util.List;

/**
 * What a skade enumerator checkpoints: where it is in the table's history, where it stops, the
 * splits it planned but did not assign yet, and the splits assigned but not reported finished (only
 * to know which snapshots readers may still need).
 *
 * @param cursor every window up to here is planned; null when the startup position was not resolved
 *     yet (a checkpoint taken right after the job started)
 * @param endSnapshotId the last snapshot of a bounded source, {@code Long.MIN_VALUE} when unbounded
 * @param pending planned splits not yet assigned (or handed back by readers), in commit order; each
 *     goes to the reader of its slot at the parallelism the job runs at
 * @param unfinished assigned splits not yet reported finished
 * @param parallelism the readers the source had: restored at another parallelism, readers' restored
 *     splits may belong to any reader
 */
public record SkadeEnumeratorState(
    ConsumerCursor cursor,
    long endSnapshotId,
    List<ChangelogSplit> pending,
    List<ChangelogSplit> unfinished,
    int parallelism) {

  public SkadeEnumeratorState {
    pending = List.copyOf(pending);
    unfinished = List.copyOf(unfinished);
  }
}
