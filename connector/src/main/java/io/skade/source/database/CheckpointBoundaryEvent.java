package io.skade.source.database;

import org.apache.flink.api.connector.source.SourceEvent;

/**
 * Sent by a database source's enumerator to every reader when Flink checkpoints it: checkpoint
 * {@code checkpointId} holds every change of the commits up to {@code commitSeq} and none after. A
 * reader lets Flink take the checkpoint once it has emitted all its splits up to that commit, and
 * starts none after it before.
 */
public record CheckpointBoundaryEvent(long checkpointId, long commitSeq) implements SourceEvent {}
