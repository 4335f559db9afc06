package io.skade.source;

import io.skade.source.split.ChangelogSplit;
import java.util.List;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by a reader to the enumerator when it starts, with the splits its checkpointed state gave it
 * (none on a fresh start). Flink spreads restored reader state over the readers as it likes
 * (round-robin at another parallelism), so a reader does not read these itself: the enumerator
 * hands them, in commit order, to the readers of their slots, before anything newer of those slots.
 * The reader keeps them in its own checkpoints until the enumerator answers with {@link
 * SplitsTakenEvent}, so no split is lost between the two.
 *
 * <p>It also names the reader's {@link io.skade.scan.MetadataCache#shared} cache: a reader that
 * shares the enumerator's (one JVM) holds the table's metadata as the planner read it, so its
 * splits' plans need not carry it.
 *
 * @param splits the restored splits, without their plans
 * @param metadataCacheId the {@link io.skade.scan.MetadataCache#id} of the reader's shared cache
 */
public record SplitsRestoredEvent(List<ChangelogSplit> splits, String metadataCacheId)
    implements SourceEvent {

  public SplitsRestoredEvent {
    splits = List.copyOf(splits);
  }
}
