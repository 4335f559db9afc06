package io.skade.lineage;

import java.util.List;
import java.util.Objects;

/**
 * A dataset a lineage event names: a skade table, or an external one (a Kafka topic, a JDBC table)
 * that a job read.
 *
 * @param namespace for a skade table, its catalog's warehouse; for an external dataset, what its
 *     system calls its namespace (for example {@code kafka://broker:9092})
 * @param name for a skade table, its identifier ({@code db.table}); else the dataset's name
 * @param system null for a skade table; for an external dataset, its system ({@code kafka})
 * @param location a skade table's location (its data and metadata root), else null
 * @param snapshotId the table's snapshot the event is about (the one a commit made), or null
 * @param fields the dataset's columns, in order; empty when unknown
 */
public record LineageDataset(
    String namespace,
    String name,
    String system,
    String location,
    Long snapshotId,
    List<Field> fields) {

  /** A column: its name and its type as its system spells it. */
  public record Field(String name, String type) {
    public Field {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(type, "type");
    }
  }

  public LineageDataset {
    Objects.requireNonNull(namespace, "namespace");
    Objects.requireNonNull(name, "name");
    fields = List.copyOf(fields);
  }

  /** An external dataset, known by its system, namespace and name only. */
  public static LineageDataset external(String system, String namespace, String name) {
    return new LineageDataset(namespace, name, system, null, null, List.of());
  }

  /** Whether this dataset is a skade table (not an external one). */
  public boolean isSkadeTable() {
    return system == null;
  }
}
