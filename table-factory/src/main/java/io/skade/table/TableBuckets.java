package io.skade.table;

import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.table.api.ValidationException;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.types.Types;

/**
 * A new table's buckets, from its DDL's {@code 'bucket' = 'N'} and {@code 'bucket-key'}: Iceberg's
 * {@code bucket(column, N)} partition field. Why: Flink's {@code PARTITIONED BY} partitions by
 * identity only, and a primary-key table needs a partitioning by its key to be read by more than
 * one reader with each key's changes in order (each bucket is an ordering unit), written by writers
 * that each own whole buckets, and looked up in one bucket's files.
 *
 * @param count the number of buckets, 1 or more
 * @param column the bucketed column: the {@code bucket-key}, by default the primary key
 */
record TableBuckets(int count, String column) {
  static final String BUCKET = "bucket";
  static final String BUCKET_KEY = "bucket-key";

  /**
   * The buckets {@code options} ask for, checked against the table's {@code schema}; empty without
   * a {@code bucket} option.
   *
   * @throws ValidationException naming the option, the value and what to write instead
   */
  static Optional<TableBuckets> of(String table, Map<String, String> options, Schema schema) {
    String countText = options.get(BUCKET);
    String key = options.get(BUCKET_KEY);
    if (countText == null) {
      if (key != null) {
        throw new ValidationException(
            "table "
                + table
                + ": option '"
                + BUCKET_KEY
                + "' = '"
                + key
                + "' needs '"
                + BUCKET
                + "' (the number of buckets) too");
      }
      return Optional.empty();
    }
    int count;
    try {
      count = Integer.parseInt(countText.trim());
    } catch (NumberFormatException e) {
      count = 0;
    }
    if (count < 1) {
      throw new ValidationException(
          "table "
              + table
              + ": option '"
              + BUCKET
              + "' = '"
              + countText
              + "' is not a number of buckets; write a whole number of 1 or more, e.g."
              + " 'bucket' = '8'");
    }
    List<String> primaryKey = schema.identifierFieldNames().stream().sorted().toList();
    String column;
    if (key != null) {
      Types.NestedField field = schema.caseInsensitiveFindField(key.trim());
      if (field == null) {
        throw new ValidationException(
            "table "
                + table
                + ": option '"
                + BUCKET_KEY
                + "' = '"
                + key
                + "' is not a column; its columns: "
                + schema.columns().stream().map(Types.NestedField::name).toList());
      }
      column = field.name();
      if (!primaryKey.isEmpty() && !schema.identifierFieldIds().contains(field.fieldId())) {
        throw new ValidationException(
            "table "
                + table
                + ": option '"
                + BUCKET_KEY
                + "' = '"
                + key
                + "' is not a primary key column, so a key's row could change bucket; bucket"
                + " by one of "
                + primaryKey);
      }
    } else if (primaryKey.size() == 1) {
      column = primaryKey.get(0);
    } else if (primaryKey.isEmpty()) {
      throw new ValidationException(
          "table "
              + table
              + ": option '"
              + BUCKET
              + "' on a table"
              + " without a primary key needs '"
              + BUCKET_KEY
              + "', the column to bucket by");
    } else {
      throw new ValidationException(
          "table "
              + table
              + ": option '"
              + BUCKET
              + "' on the"
              + " composite primary key "
              + primaryKey
              + " needs '"
              + BUCKET_KEY
              + "', the one key"
              + " column to bucket by (Iceberg buckets by one column)");
    }
    return Optional.of(new TableBuckets(count, column));
  }

  /** Adds the bucket field to a new table's partitioning. */
  void addTo(PartitionSpec.Builder spec) {
    spec.bucket(column, count);
  }

  /**
   * The table properties of a bucketed table: rows are distributed to the writers by partition, so
   * each writer writes whole buckets.
   */
  Map<String, String> properties() {
    return Map.of(
        TableProperties.WRITE_DISTRIBUTION_MODE, TableProperties.WRITE_DISTRIBUTION_MODE_HASH);
  }

  /** {@code options} without the bucket options, which are not table properties. */
  static Map<String, String> without(Map<String, String> options) {
    Map<String, String> rest = new HashMap<>(options);
    rest.keySet()
        .removeIf(
            key ->
                key.toLowerCase(Locale.ROOT).equals(BUCKET)
                    || key.toLowerCase(Locale.ROOT).equals(BUCKET_KEY));
    return rest;
  }
}
