package io.skade.changelog;

import org.apache.iceberg.Schema;

/** Whether a table has a primary key (Iceberg identifier fields), which shapes its changelog. */
public enum TableKind {
  /** No identifier fields: rows are only inserted and deleted. */
  LOG,
  /** Identifier fields: a delete and an insert of one key in one change are an update. */
  PRIMARY_KEY;

  public static TableKind of(Schema schema) {
    return schema.identifierFieldIds().isEmpty() ? LOG : PRIMARY_KEY;
  }
}
