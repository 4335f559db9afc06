package io.skade.catalog;

import java.util.List;
import java.util.Set;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.UpdateRequirements;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * A change to a table's metadata that can be made again on a newer base, as Iceberg's REST {@code
 * CatalogHandlers} does for a client's updates: properties, schema, partition spec and sort order
 * changes and refs, checked against the newer base by the requirements Iceberg derives for them
 * (the table's uuid, its last column and partition ids, its current schema, spec and sort order,
 * each changed ref's snapshot). A change that adds or removes a snapshot is never re-applied: an
 * added snapshot lists its base's manifests, so it is only right on that base, and its writer
 * retries it.
 */
final class Reapply {
  private static final Set<Class<? extends MetadataUpdate>> REAPPLICABLE =
      Set.of(
          MetadataUpdate.SetProperties.class,
          MetadataUpdate.RemoveProperties.class,
          MetadataUpdate.AddSchema.class,
          MetadataUpdate.SetCurrentSchema.class,
          MetadataUpdate.AddPartitionSpec.class,
          MetadataUpdate.SetDefaultPartitionSpec.class,
          MetadataUpdate.AddSortOrder.class,
          MetadataUpdate.SetDefaultSortOrder.class,
          MetadataUpdate.SetSnapshotRef.class,
          MetadataUpdate.SetLocation.class,
          MetadataUpdate.UpgradeFormatVersion.class);

  private final String table;
  private final List<MetadataUpdate> changes;
  private final List<UpdateRequirement> requirements;

  private Reapply(
      String table, List<MetadataUpdate> changes, List<UpdateRequirement> requirements) {
    this.table = table;
    this.changes = changes;
    this.requirements = requirements;
  }

  /**
   * The changes {@code updated} makes to {@code base}, if every one of them can be re-applied on a
   * newer base; otherwise null.
   */
  static Reapply of(String table, TableMetadata base, TableMetadata updated) {
    List<MetadataUpdate> changes = updated.changes();
    if (changes.isEmpty()
        || !changes.stream().allMatch(change -> REAPPLICABLE.contains(change.getClass()))) {
      return null;
    }
    return new Reapply(table, changes, UpdateRequirements.forUpdateTable(base, changes));
  }

  /**
   * The same changes made to {@code current}.
   *
   * @throws CommitFailedException when a requirement no longer holds on {@code current} (another
   *     commit changed what these changes depend on), naming it
   */
  TableMetadata onto(TableMetadata current) {
    try {
      requirements.forEach(requirement -> requirement.validate(current));
    } catch (CommitFailedException e) {
      throw new CommitFailedException(e, "Cannot commit %s: %s", table, e.getMessage());
    }
    TableMetadata.Builder builder = TableMetadata.buildFrom(current);
    try {
      changes.forEach(change -> change.applyTo(builder));
      return builder.build();
    } catch (RuntimeException e) {
      throw new CommitFailedException(
          e,
          "Cannot commit %s: its changes cannot be re-applied on the table as another commit"
              + " left it (%s): %s",
          table,
          current.metadataFileLocation(),
          e.getMessage());
    }
  }
}
