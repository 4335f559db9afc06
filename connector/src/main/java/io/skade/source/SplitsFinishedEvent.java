package io.skade.source;

import java.util.List;
import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by a reader to the enumerator when splits are fully emitted, so the enumerator knows which
 * snapshots readers still need (for the consumer cursor it stores in the catalog).
 */
public record SplitsFinishedEvent(List<String> splitIds) implements SourceEvent {}
