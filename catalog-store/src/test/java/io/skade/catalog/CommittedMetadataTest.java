package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.JsonUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A metadata file this JVM committed, or read once, reads back from memory, equal to the file
 * parsed.
 */
class CommittedMetadataTest {
  @TempDir Path warehouse;

  /**
   * The position in {@link #everyKindOfCommit}'s locations of the rollback, and of the schema
   * change.
   */
  private static final int ROLLBACK = 6;

  private static final int SCHEMA_CHANGE = 9;

  /**
   * Commits of every kind to {@code table}: the metadata file it was created with and then the one
   * after each commit — an append, a merge append, an overwrite, a property, a tag and a branch, a
   * rollback ({@link #ROLLBACK}), an append, an expiry, a schema change ({@link #SCHEMA_CHANGE}).
   */
  private static List<String> everyKindOfCommit(Table table) {
    List<String> locations = new ArrayList<>();
    locations.add(location(table));
    Catalogs.append(table, "a");
    long first = table.currentSnapshot().snapshotId();
    locations.add(location(table));
    table.newAppend().appendFile(Catalogs.dataFile("b")).commit(); // a merge append
    locations.add(location(table));
    table.newOverwrite().deleteFile(Catalogs.dataFile("b")).commit();
    locations.add(location(table));
    table.updateProperties().set("owner", "test").commit();
    locations.add(location(table));
    table.manageSnapshots().createTag("v1", first).createBranch("b", first).commit();
    locations.add(location(table));
    table.manageSnapshots().rollbackTo(first).commit();
    locations.add(location(table));
    Catalogs.append(table, "c");
    locations.add(location(table));
    table.expireSnapshots().expireOlderThan(Long.MAX_VALUE).retainLast(1).commit();
    locations.add(location(table));
    table.updateSchema().addColumn("name", Types.StringType.get()).commit();
    locations.add(location(table));
    return locations;
  }

  @Test
  void replayingACommitsUpdatesOntoItsBaseGivesTheMetadataItsFileParsesTo() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      List<String> locations = everyKindOfCommit(Catalogs.createTable(catalog, "t"));

      int replayed = 0;
      TableMetadata previous = null; // a follower replays onto what it replayed before
      for (int i = 1; i < locations.size(); i++) {
        String location = locations.get(i);
        CommittedMetadata.Updates updates = CommittedMetadata.updates(location);
        if (updates == null) {
          previous = null;
          continue;
        }
        replayed++;
        assertThat(updates.base()).as(location).isEqualTo(locations.get(i - 1));
        TableMetadata base =
            previous != null ? previous : TableMetadataParser.read(catalog.io(), updates.base());
        TableMetadata rebuilt = CommittedMetadata.replay(base, updates.updates(), location);
        previous = rebuilt;
        TableMetadata parsed = TableMetadataParser.read(catalog.io(), location);
        assertThat(rebuilt.metadataFileLocation()).isEqualTo(location);
        assertThat(rebuilt.changes()).isEmpty();
        for (Snapshot snapshot : rebuilt.snapshots()) { // what Iceberg checks within a minute
          assertThat(rebuilt.lastUpdatedMillis())
              .isGreaterThanOrEqualTo(snapshot.timestampMillis());
        }
        assertThat(withoutUpdateTime(rebuilt))
            .as("replayed onto %s: %s", updates.base(), location)
            .isEqualTo(withoutUpdateTime(parsed));
      }
      assertThat(replayed).as("data, property, ref and expiry commits").isEqualTo(7);
      assertThat(CommittedMetadata.updates(locations.get(0)))
          .as("a creation is read whole")
          .isNull();
      assertThat(CommittedMetadata.updates(locations.get(ROLLBACK)))
          .as("a rollback, whose history entry bears the commit's time, is read whole")
          .isNull();
      assertThat(CommittedMetadata.updates(locations.get(SCHEMA_CHANGE)))
          .as("a schema change is read whole")
          .isNull();
    }
  }

  /**
   * The metadata's JSON but for when it and the files of its metadata log were last updated: a
   * replay stamps its own time, which a replay onto it then logs.
   */
  private static String withoutUpdateTime(TableMetadata metadata) throws Exception {
    ObjectNode json = (ObjectNode) JsonUtil.mapper().readTree(TableMetadataParser.toJson(metadata));
    json.remove("last-updated-ms");
    json.get("metadata-log").forEach(entry -> ((ObjectNode) entry).remove("timestamp-ms"));
    return json.toPrettyString();
  }

  @Test
  void listenersHearOfEachCommitsFileBeforeItIsDurableAndOneThatFailsStopsNoCommit()
      throws Exception {
    SkadeRuntime.reset(); // the listeners below live as long as the runtime
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      String key = catalog.commitTableKey(TableIdentifier.of("db", "t"));
      List<String> heard = new ArrayList<>();
      CommittedMetadata.listen(
          (tableKey, metadata, io, added, appendedFiles) -> {
            // before the swap: the pointer still names the file before this one
            assertThat(catalog.readPointer(tableKey).metadataLocation())
                .isNotEqualTo(metadata.metadataFileLocation());
            heard.add(tableKey + " " + metadata.metadataFileLocation() + " " + added);
          });
      CommittedMetadata.listen(
          (tableKey, metadata, io, added, appendedFiles) -> {
            throw new IllegalStateException("a broken listener");
          });
      Catalogs.append(table, "a");
      String appended = location(table) + " [" + table.currentSnapshot().snapshotId() + "]";
      table.updateProperties().set("owner", "test").commit();

      assertThat(heard)
          .as("each commit's file and the snapshots it adds; the broken listener stopped none")
          .containsExactly(key + " " + appended, key + " " + location(table) + " []");
    } finally {
      SkadeRuntime.reset();
    }
  }

  @Test
  void everyKindOfCommitReadsBackAsItsFileParses() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      for (String location : everyKindOfCommit(Catalogs.createTable(catalog, "t"))) {
        TableMetadata fromMemory = CommittedMetadata.read(catalog.io(), location);
        TableMetadata parsed = TableMetadataParser.read(catalog.io(), location);
        assertThat(fromMemory)
            .as(location)
            .isNotSameAs(parsed)
            .isSameAs(CommittedMetadata.read(catalog.io(), location));
        assertThat(fromMemory.metadataFileLocation()).isEqualTo(location);
        assertThat(fromMemory.changes()).isEmpty();
        assertThat(TableMetadataParser.toJson(fromMemory))
            .as(location)
            .isEqualTo(TableMetadataParser.toJson(parsed));
      }
    }
  }

  @Test
  void aMetadataFileDeletedBehindTheCatalogsBackIsNotServedFromMemory() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "a");
      String location = location(table);
      catalog.io().deleteFile(location);

      assertThatThrownBy(() -> CommittedMetadata.read(catalog.io(), location))
          .isInstanceOf(NotFoundException.class);
    }
  }

  @Test
  void aMetadataFileThisJvmDidNotWriteIsParsedOnceThenServedFromMemory() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "a");
      // A copy under a new name, as another process would have written it.
      String copy = warehouse.resolve("copied.metadata.json").toString();
      TableMetadataParser.overwrite(
          TableMetadataParser.read(catalog.io(), location(table)),
          catalog.io().newOutputFile(copy));

      TableMetadata first = CommittedMetadata.read(catalog.io(), copy);
      assertThat(CommittedMetadata.read(catalog.io(), copy)).isSameAs(first);
      assertThat(TableMetadataParser.toJson(first))
          .isEqualTo(TableMetadataParser.toJson(TableMetadataParser.read(catalog.io(), copy)));
      catalog.io().deleteFile(copy);
      assertThatThrownBy(() -> CommittedMetadata.read(catalog.io(), copy))
          .isInstanceOf(NotFoundException.class);
    }
  }

  private static String location(Table table) {
    table.refresh();
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }
}
