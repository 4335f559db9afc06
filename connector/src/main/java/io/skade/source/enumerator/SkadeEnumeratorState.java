package io.skade.source.enumerator;

import io.skade.catalog.ConsumerCursor;
import io.skade.source.split.ChangelogSplit;
import java.util.List;

/**
 * What a skade enumerator checkpoints: where it is in the table's history, where it stops, the
 * splits it planned but did not assign yet, and the splits assigned but not reported finished
 * (only to know which snapshots readers may still need).
 *
 * @param cursor every window up to here is planned; null when the startup position was not
 *     resolved yet (a checkpoint taken right after the job started)
 * @param endSnapshotId the last snapshot of a bounded source, {@code Long.MIN_VALUE} when
 *     unbounded
 * @param pending planned splits not yet assigned, in order, each with its reader
 * @param unfinished assigned splits not yet reported finished
 */
public record SkadeEnumeratorState(ConsumerCursor cursor, long endSnapshotId,
    List<PinnedSplit> pending, List<ChangelogSplit> unfinished) {

  public SkadeEnumeratorState {
    pending = List.copyOf(pending);
    unfinished = List.copyOf(unfinished);
  }
}
