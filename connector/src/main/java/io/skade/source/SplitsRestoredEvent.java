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
 */
public record SplitsRestoredEvent(List<ChangelogSplit> splits) implements SourceEvent {

  public SplitsRestoredEvent {
    splits = List.copyOf(splits);
  }
}
