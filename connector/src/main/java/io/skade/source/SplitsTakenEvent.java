package io.skade.source;

import java.util.List;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * The enumerator's answer to {@link SplitsRestoredEvent}: it holds these splits now (its next
 * checkpoint has them), so the reader drops them from its own. Sent in the same step as the splits
 * enter the enumerator's state, so a checkpoint sees them on one side only.
 */
public record SplitsTakenEvent(List<String> splitIds) implements SourceEvent {

  public SplitsTakenEvent {
    splitIds = List.copyOf(splitIds);
  }
}
