package io.skade.lineage;

import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * One commit, described: who wrote what into which table, from which inputs, when, at which
 * snapshot and {@code commit_seq}.
 *
 * @param eventId a unique id of this event, derived from the catalog and {@code commitSeq}, so that
 *     describing the same commit twice gives the same id
 * @param actor who made the commit: a Flink job ({@code name (job id)}) or what the writer named
 *     itself
 * @param operation what the commit did
 * @param inputs the datasets the actor read to produce the commit, as far as known
 * @param outputs the table the commit changed; several only for {@link LineageOperation#RELEASE}
 * @param tsMicros when the catalog made the commit durable, microseconds since the epoch
 * @param commitSeq the commit's position in the catalog's commit log (the first, for a release)
 */
public record LineageEvent(
    UUID eventId,
    String actor,
    LineageOperation operation,
    List<LineageDataset> inputs,
    List<LineageDataset> outputs,
    long tsMicros,
    long commitSeq) {

  public LineageEvent {
    Objects.requireNonNull(eventId, "eventId");
    Objects.requireNonNull(actor, "actor");
    Objects.requireNonNull(operation, "operation");
    inputs = List.copyOf(inputs);
    outputs = List.copyOf(outputs);
    if (outputs.isEmpty()) {
      throw new IllegalArgumentException("a lineage event names at least one output");
    }
  }

  /** The table the commit changed (the first, for a release). */
  public LineageDataset output() {
    return outputs.get(0);
  }

  /** The snapshot the commit made of {@link #output()}, or null (a create makes none). */
  public Long snapshotId() {
    return output().snapshotId();
  }
}
