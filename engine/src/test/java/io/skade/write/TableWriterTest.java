package io.skade.write;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdatePartitionSpec;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.ContentFileUtil;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The embedded write API on real tables of a real skade catalog, read back with Iceberg's reader.
 */
class TableWriterTest {
  private static final Schema SCHEMA = IdRows.REGIONAL;

  /** Keyed by (id, region), so a table may be partitioned by region. */
  private static final Schema REGION_KEY_SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.required(3, "region", Types.StringType.get())),
          Set.of(1, 3));

  private static final Schema LOG_SCHEMA = IdRows.REGIONAL_LOG;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void appendedRowsAreReadBack() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    new TableWriter(table)
        .append(List.of(row(LOG_SCHEMA, 1, "a", "eu"), row(LOG_SCHEMA, 2, "b", "us")));
    assertThat(read(table)).containsExactly("1|a|eu", "2|b|us");
  }

  @Test
  void anUpsertReplacesRowsByKeyInOneRowDeltaAndTheLastRowOfAKeyWins() throws IOException {
    Table table = create("pk", SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a", "eu"), row(2, "b", "us")));
    Snapshot upsert =
        writer.upsert(List.of(row(2, "b2", "us"), row(3, "c", "eu"), row(3, "c2", "eu")));

    assertThat(read(table)).containsExactly("1|a|eu", "2|b2|us", "3|c2|eu");
    assertThat(upsert.operation()).isEqualTo("overwrite");
    List<DeleteFile> deletes = new ArrayList<>();
    upsert.addedDeleteFiles(table.io()).forEach(deletes::add);
    assertThat(deletes)
        .singleElement()
        .satisfies(
            delete -> {
              assertThat(delete.content()).isEqualTo(FileContent.EQUALITY_DELETES);
              assertThat(delete.equalityFieldIds()).containsExactly(1);
              assertThat(delete.format()).isEqualTo(FileFormat.PARQUET);
            });
    // The delete file carries the table's Parquet field id for the key column.
    ParquetMetadata footer = footer(deletes.get(0).location());
    assertThat(footer.getFileMetaData().getSchema().getType("id").getId().intValue()).isEqualTo(1);
  }

  @Test
  void deletingByKeyRemovesThoseRows() throws IOException {
    Table table = create("pk", SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a", "eu"), row(2, "b", "us"), row(3, "c", "eu")));
    GenericRecord key = GenericRecord.create(SCHEMA.select("id"));
    key.setField("id", 2L);
    writer.deleteKeys(List.of(key, row(3, null, null)));
    assertThat(read(table)).containsExactly("1|a|eu");
  }

  @ParameterizedTest(name = "format v{0}")
  @ValueSource(ints = {2, 3})
  void deletingByPositionRemovesThoseRowsAndRepeatedDeletesAccumulate(int formatVersion)
      throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), formatVersion);
    TableWriter writer = new TableWriter(table);
    writer.append(
        List.of(
            row(LOG_SCHEMA, 10, "a", "eu"),
            row(LOG_SCHEMA, 11, "b", "eu"),
            row(LOG_SCHEMA, 12, "c", "eu"),
            row(LOG_SCHEMA, 13, "d", "eu")));
    String file = onlyDataFile(table).location();

    writer.deletePositions(Map.of(file, List.of(1L)));
    writer.deletePositions(Map.of(file, List.of(3L)));

    assertThat(read(table)).containsExactly("10|a|eu", "12|c|eu");
    List<DeleteFile> live = liveDeletes(table);
    if (formatVersion >= 3) {
      // One deletion vector per data file: the second replaced the first.
      assertThat(live)
          .singleElement()
          .satisfies(dv -> assertThat(dv.format()).isEqualTo(FileFormat.PUFFIN));
    } else {
      assertThat(live)
          .hasSize(2)
          .allSatisfy(
              delete -> assertThat(delete.content()).isEqualTo(FileContent.POSITION_DELETES));
    }
  }

  @Test
  void overwriteByFilterReplacesTheMatchingPartition() throws IOException {
    Table table =
        create(
            "parts",
            LOG_SCHEMA,
            PartitionSpec.builderFor(LOG_SCHEMA).identity("region").build(),
            2);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(LOG_SCHEMA, 1, "a", "eu"), row(LOG_SCHEMA, 2, "b", "us")));
    Snapshot overwrite =
        writer.overwrite(Expressions.equal("region", "eu"), List.of(row(LOG_SCHEMA, 3, "c", "eu")));
    assertThat(read(table)).containsExactly("2|b|us", "3|c|eu");
    // The partition proves every row of the eu file matches: it goes whole, nothing is read.
    assertThat(locations(overwrite.removedDataFiles(table.io())))
        .singleElement()
        .asString()
        .contains("region=eu");
    assertThat(overwrite.addedDeleteFiles(table.io())).isEmpty();
  }

  @Test
  void overwriteReplacesExactlyTheMatchingRowsOfAPartlyMatchingFileInOneSnapshot()
      throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    Snapshot before =
        writer.append(
            List.of(
                row(LOG_SCHEMA, 1, "a", "eu"),
                row(LOG_SCHEMA, 2, "b", "us"),
                row(LOG_SCHEMA, 3, "c", "eu"),
                row(LOG_SCHEMA, 3, "c", "eu"),
                row(LOG_SCHEMA, 2, "b", "us"),
                row(LOG_SCHEMA, 4, "d", null)));
    String file = onlyDataFile(table).location();

    Snapshot overwrite =
        writer.overwrite(
            Expressions.equal("region", "eu"),
            List.of(row(LOG_SCHEMA, 5, "e", "eu"), row(LOG_SCHEMA, 5, "e", "eu")));

    // A multiset: both copies of a kept row stay, both copies of a new row arrive.
    assertThat(read(table)).containsExactly("2|b|us", "2|b|us", "4|d|null", "5|e|eu", "5|e|eu");
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(overwrite.snapshotId());
    assertThat(overwrite.parentId()).isEqualTo(before.snapshotId());
    assertThat(overwrite.removedDataFiles(table.io())).isEmpty();
    assertThat(overwrite.addedDeleteFiles(table.io()))
        .singleElement()
        .satisfies(
            delete -> {
              assertThat(delete.content()).isEqualTo(FileContent.POSITION_DELETES);
              assertThat(ContentFileUtil.referencedDataFileLocation(delete)).isEqualTo(file);
              assertThat(delete.recordCount()).isEqualTo(3);
            });
  }

  @Test
  void overwriteOnDeletionVectorsKeepsTheRowsAnEarlierVectorDeleted() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 3);
    TableWriter writer = new TableWriter(table);
    writer.append(
        List.of(
            row(LOG_SCHEMA, 10, "a", "eu"),
            row(LOG_SCHEMA, 11, "b", "us"),
            row(LOG_SCHEMA, 12, "c", "eu"),
            row(LOG_SCHEMA, 13, "d", "us"),
            row(LOG_SCHEMA, 14, "e", "eu")));
    String file = onlyDataFile(table).location();
    Snapshot before = writer.deletePositions(Map.of(file, List.of(0L, 1L))); // 10 eu, 11 us

    Snapshot overwrite =
        writer.overwrite(
            Expressions.equal("region", "eu"), List.of(row(LOG_SCHEMA, 20, "n", "eu")));

    assertThat(read(table)).containsExactly("13|d|us", "20|n|eu");
    assertThat(overwrite.parentId()).isEqualTo(before.snapshotId());
    // One vector per data file: the new one holds the earlier positions and replaced that one.
    assertThat(liveDeletes(table))
        .singleElement()
        .satisfies(
            dv -> {
              assertThat(dv.format()).isEqualTo(FileFormat.PUFFIN);
              assertThat(dv.referencedDataFile()).isEqualTo(file);
              assertThat(dv.recordCount()).isEqualTo(4); // positions 0, 1, 2, 4
            });
    assertThat(overwrite.removedDeleteFiles(table.io())).hasSize(1);
  }

  @ParameterizedTest(name = "format v{0}")
  @ValueSource(ints = {2, 3})
  void filesWhoseLiveRowsAllMatchAreRemovedWholeWithoutADeleteFile(int formatVersion)
      throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), formatVersion);
    TableWriter writer = new TableWriter(table);
    // Metrics prove every row of this file is in eu.
    String allEu =
        appended(writer, table, row(LOG_SCHEMA, 1, "a", "eu"), row(LOG_SCHEMA, 2, "b", "eu"));
    String mixed =
        appended(writer, table, row(LOG_SCHEMA, 3, "c", "eu"), row(LOG_SCHEMA, 4, "d", "us"));
    // Only reading shows that every live row of this one is in eu: its us row is deleted.
    String euOnceUsDeleted =
        appended(writer, table, row(LOG_SCHEMA, 5, "e", "eu"), row(LOG_SCHEMA, 6, "f", "us"));
    writer.deletePositions(Map.of(euOnceUsDeleted, List.of(1L)));
    List<String> itsDeletes = locations(table.currentSnapshot().addedDeleteFiles(table.io()));

    Snapshot overwrite =
        writer.overwrite(Expressions.equal("region", "eu"), List.of(row(LOG_SCHEMA, 7, "g", "eu")));

    assertThat(read(table)).containsExactly("4|d|us", "7|g|eu");
    assertThat(locations(overwrite.removedDataFiles(table.io())))
        .containsExactlyInAnyOrder(allEu, euOnceUsDeleted);
    assertThat(overwrite.addedDeleteFiles(table.io()))
        .singleElement()
        .satisfies(
            delete ->
                assertThat(ContentFileUtil.referencedDataFileLocation(delete)).isEqualTo(mixed));
    // The removed file's own position delete file (v2) or deletion vector (v3) goes with it.
    assertThat(locations(overwrite.removedDeleteFiles(table.io()))).isEqualTo(itsDeletes);
  }

  @Test
  void overwriteOnFormatV1RewritesAPartlyMatchingFile() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 1);
    TableWriter writer = new TableWriter(table);
    Snapshot before =
        writer.append(
            List.of(
                row(LOG_SCHEMA, 1, "a", "eu"),
                row(LOG_SCHEMA, 2, "b", "us"),
                row(LOG_SCHEMA, 2, "b", "us"),
                row(LOG_SCHEMA, 3, "c", "eu")));
    String file = onlyDataFile(table).location();

    Snapshot overwrite =
        writer.overwrite(Expressions.equal("region", "eu"), List.of(row(LOG_SCHEMA, 4, "d", "eu")));

    assertThat(read(table)).containsExactly("2|b|us", "2|b|us", "4|d|eu");
    assertThat(overwrite.parentId()).isEqualTo(before.snapshotId());
    // Copy-on-write: v1 has no delete files, so the file is replaced by one without eu rows.
    assertThat(locations(overwrite.removedDataFiles(table.io()))).containsExactly(file);
    assertThat(overwrite.addedDeleteFiles(table.io())).isEmpty();
    // The rewritten rows are no change.
    List<ChangeRow> changes =
        new ChangelogReader(table, ChangelogOptions.defaults())
            .read(before.snapshotId(), overwrite.snapshotId());
    assertThat(render(changes)).containsExactlyInAnyOrder("-D 1|a|eu", "-D 3|c|eu", "+I 4|d|eu");
  }

  @Test
  void theChangelogOfAnOverwriteIsTheReplacedRowsAndTheNewOnes() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(LOG_SCHEMA, 1, "a", "eu"), row(LOG_SCHEMA, 2, "b", "us")));
    Snapshot before =
        writer.append(
            List.of(
                row(LOG_SCHEMA, 3, "c", "eu"),
                row(LOG_SCHEMA, 3, "c", "eu"),
                row(LOG_SCHEMA, 4, "d", "us")));

    Snapshot after =
        writer.overwrite(
            Expressions.equal("region", "eu"),
            List.of(row(LOG_SCHEMA, 3, "c2", "eu"), row(LOG_SCHEMA, 5, "e", "eu")));

    List<ChangeRow> changes =
        new ChangelogReader(table, ChangelogOptions.defaults())
            .read(before.snapshotId(), after.snapshotId());
    assertThat(render(changes))
        .containsExactlyInAnyOrder(
            "-D 1|a|eu", "-D 3|c|eu", "-D 3|c|eu", "+I 3|c2|eu", "+I 5|e|eu");
    assertThat(changes)
        .allSatisfy(change -> assertThat(change.snapshotId()).isEqualTo(after.snapshotId()));
  }

  @Test
  void anOverwriteThatChangesNothingCommitsNothing() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    assertThat(writer.overwrite(Expressions.alwaysTrue(), List.of())).isNull();
    Snapshot appended = writer.append(List.of(row(LOG_SCHEMA, 1, "a", "eu")));
    assertThat(writer.overwrite(Expressions.equal("region", "us"), List.of()).snapshotId())
        .isEqualTo(appended.snapshotId());

    // Rows but nothing matching: an add; matching rows but no new ones: a delete.
    writer.overwrite(Expressions.equal("region", "us"), List.of(row(LOG_SCHEMA, 2, "b", "us")));
    assertThat(read(table)).containsExactly("1|a|eu", "2|b|us");
    writer.overwrite(Expressions.equal("id", 1L), List.of());
    assertThat(read(table)).containsExactly("2|b|us");
  }

  @Test
  void upsertsWorkOnATableBucketedByItsKey() throws IOException {
    Table table =
        create("bucketed", SCHEMA, PartitionSpec.builderFor(SCHEMA).bucket("id", 4).build(), 2);
    TableWriter writer = new TableWriter(table);
    List<Record> rows = new ArrayList<>();
    for (long id = 0; id < 20; id++) {
      rows.add(row(id, "v1", "eu"));
    }
    writer.append(rows);
    writer.upsert(List.of(row(3, "v2", "eu"), row(17, "v2", "eu")));
    assertThat(read(table)).hasSize(20).contains("3|v2|eu", "17|v2|eu", "4|v1|eu");
  }

  @Test
  void identifierColumnsGetParquetBloomFilters() throws IOException {
    Table table = create("pk", SCHEMA, PartitionSpec.unpartitioned(), 2);
    new TableWriter(table).append(List.of(row(1, "a", "eu")));
    ParquetMetadata footer = footer(onlyDataFile(table).location());
    for (ColumnChunkMetaData column : footer.getBlocks().get(0).getColumns()) {
      boolean hasBloom = column.getBloomFilterOffset() >= 0;
      assertThat(hasBloom)
          .as("bloom filter on %s", column.getPath())
          .isEqualTo(column.getPath().toDotString().equals("id"));
    }
  }

  @Test
  void keyedWritesExplainWhatTheTableLacks() {
    Table log = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    assertThatThrownBy(() -> new TableWriter(log).upsert(List.of(row(LOG_SCHEMA, 1, "a", "eu"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("db.log")
        .hasMessageContaining("no identifier fields");

    Table byRegion =
        create("by_region", SCHEMA, PartitionSpec.builderFor(SCHEMA).identity("region").build(), 2);
    assertThatThrownBy(() -> new TableWriter(byRegion).deleteKeys(List.of(row(1, "a", "eu"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("partitioned by region");

    Table pk = create("pk", SCHEMA, PartitionSpec.unpartitioned(), 2);
    assertThatThrownBy(
            () -> new TableWriter(pk).deletePositions(Map.of("/nowhere.parquet", List.of(0L))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("/nowhere.parquet")
        .hasMessageContaining("not a live data file");
    assertThat(pk.currentSnapshot()).isNull();
  }

  @Test
  void keyedWritesReachRowsOfAnEarlierUnpartitionedSpec() throws IOException {
    Table table = create("evolving", SCHEMA, PartitionSpec.unpartitioned(), 2);
    keyedWritesAcrossASpecChange(table, spec -> spec.addField(Expressions.bucket("id", 8)));
  }

  @Test
  void keyedWritesReachRowsOfAnEarlierBucketSpec() throws IOException {
    Table table =
        create("evolving", SCHEMA, PartitionSpec.builderFor(SCHEMA).bucket("id", 4).build(), 2);
    keyedWritesAcrossASpecChange(
        table,
        spec -> spec.removeField("id_bucket").addField("id_bucket_8", Expressions.bucket("id", 8)));
  }

  @Test
  void keyedWritesReachRowsOfAnEarlierIdentitySpecOnAKeyColumn() throws IOException {
    Table table =
        create(
            "evolving",
            REGION_KEY_SCHEMA,
            PartitionSpec.builderFor(REGION_KEY_SCHEMA).identity("region").build(),
            3);
    keyedWritesAcrossASpecChange(
        table, spec -> spec.removeField("region").addField(Expressions.bucket("id", 8)));
  }

  /**
   * Rows written under the table's spec, the spec changed by {@code evolve}, rows written under the
   * new one; then upserts and key deletes of keys living in files of either spec.
   */
  private static void keyedWritesAcrossASpecChange(
      Table table, UnaryOperator<UpdatePartitionSpec> evolve) throws IOException {
    Schema schema = table.schema();
    TableWriter writer = new TableWriter(table);
    writer.append(keyed(schema, "v1", 1, 2, 3, 4, 5, 6));
    writer.upsert(keyed(schema, "v2", 2));
    int oldSpec = table.spec().specId();
    evolve.apply(table.updateSpec()).commit();
    int newSpec = table.spec().specId();
    writer.append(keyed(schema, "v1", 7, 8, 9));

    Snapshot before = table.currentSnapshot();
    List<Record> upserts = new ArrayList<>(keyed(schema, "v2", 7));
    upserts.addAll(keyed(schema, "v3", 1, 2, 7, 10));
    Snapshot upsert = writer.upsert(upserts);

    assertThat(read(table))
        .containsExactly(
            "1|v3|us",
            "2|v3|eu",
            "3|v1|us",
            "4|v1|eu",
            "5|v1|us",
            "6|v1|eu",
            "7|v3|us",
            "8|v1|eu",
            "9|v1|us",
            "10|v3|eu");
    // One commit: the deletes under both specs and the new rows (under the new spec) together.
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(upsert.snapshotId());
    assertThat(upsert.parentId()).isEqualTo(before.snapshotId());
    Set<Integer> deleteSpecs = new TreeSet<>();
    upsert.addedDeleteFiles(table.io()).forEach(delete -> deleteSpecs.add(delete.specId()));
    assertThat(deleteSpecs).containsExactlyInAnyOrder(oldSpec, newSpec);
    Set<Integer> rowSpecs = new TreeSet<>();
    upsert.addedDataFiles(table.io()).forEach(data -> rowSpecs.add(data.specId()));
    assertThat(rowSpecs).containsExactly(newSpec);

    // 3 lives in a file of the old spec, 8 in one of the new, 1 was upserted into the new.
    writer.deleteKeys(keyed(schema, null, 3, 8, 1));
    assertThat(read(table))
        .containsExactly(
            "2|v3|eu", "4|v1|eu", "5|v1|us", "6|v1|eu", "7|v3|us", "9|v1|us", "10|v3|eu");
  }

  @Test
  void keyedWritesAreRefusedWhileAnEarlierSpecPartitionsByANonKeyColumn() throws IOException {
    Table table =
        create("evolving", SCHEMA, PartitionSpec.builderFor(SCHEMA).identity("region").build(), 2);
    TableWriter writer = new TableWriter(table);
    writer.append(keyed(SCHEMA, "v1", 1, 2, 3));
    table.updateSpec().removeField("region").addField(Expressions.bucket("id", 4)).commit();
    long snapshot = table.currentSnapshot().snapshotId();

    assertThatThrownBy(() -> writer.upsert(keyed(SCHEMA, "v2", 1)))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("db.evolving")
        .hasMessageContaining("partition spec 0")
        .hasMessageContaining("partitioned by region")
        .hasMessageContaining("rewrite those files into the current spec");
    assertThatThrownBy(() -> writer.deleteKeys(keyed(SCHEMA, null, 1)))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("partition spec 0");
    table.refresh();
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(snapshot);
    assertThat(read(table)).containsExactly("1|v1|us", "2|v1|eu", "3|v1|us");

    // Once those files are rewritten into the current spec, the old spec no longer counts.
    writer.overwrite(Expressions.alwaysTrue(), keyed(SCHEMA, "v1", 1, 2, 3));
    writer.upsert(keyed(SCHEMA, "v2", 1));
    assertThat(read(table)).containsExactly("1|v2|us", "2|v1|eu", "3|v1|us");
  }

  @ParameterizedTest(name = "format v{0}")
  @ValueSource(ints = {2, 3})
  void anEmptyPositionListLeavesThatFilesDeletesAlone(int formatVersion) throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), formatVersion);
    TableWriter writer = new TableWriter(table);
    String first =
        appended(writer, table, row(LOG_SCHEMA, 1, "a", "eu"), row(LOG_SCHEMA, 2, "b", "eu"));
    String second =
        appended(writer, table, row(LOG_SCHEMA, 3, "c", "eu"), row(LOG_SCHEMA, 4, "d", "eu"));
    writer.deletePositions(Map.of(first, List.of(0L)));

    Snapshot deleted = writer.deletePositions(Map.of(first, List.of(), second, List.of(1L)));

    assertThat(read(table)).containsExactly("2|b|eu", "3|c|eu");
    assertThat(deleted.addedDeleteFiles(table.io()))
        .singleElement()
        .satisfies(
            delete ->
                assertThat(ContentFileUtil.referencedDataFileLocation(delete)).isEqualTo(second));
  }

  @Test
  void positionsOutsideTheFileAreRefusedAndNothingToDeleteCommitsNothing() throws IOException {
    Table table = create("log", LOG_SCHEMA, PartitionSpec.unpartitioned(), 2);
    TableWriter writer = new TableWriter(table);
    Snapshot appended = writer.append(List.of(row(LOG_SCHEMA, 1, "a", "eu")));
    String file = onlyDataFile(table).location();
    assertThatThrownBy(() -> writer.deletePositions(Map.of(file, List.of(1L))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("position 1")
        .hasMessageContaining("1 rows");
    assertThat(writer.deletePositions(Map.of(file, List.of())).snapshotId())
        .isEqualTo(appended.snapshotId());
  }

  private Table create(String name, Schema schema, PartitionSpec spec, int formatVersion) {
    return catalog
        .get()
        .buildTable(TableIdentifier.of("db", name), schema)
        .withPartitionSpec(spec)
        .withProperty("format-version", String.valueOf(formatVersion))
        .create();
  }

  /** Rows of {@code schema} with these ids, all named {@code name}; even ids are in "eu". */
  private static List<Record> keyed(Schema schema, String name, long... ids) {
    List<Record> rows = new ArrayList<>();
    for (long id : ids) {
      rows.add(row(schema, id, name, id % 2 == 0 ? "eu" : "us"));
    }
    return rows;
  }

  private static Record row(long id, String name, String region) {
    return row(SCHEMA, id, name, region);
  }

  private static Record row(Schema schema, long id, String name, String region) {
    GenericRecord record = GenericRecord.create(schema);
    record.setField("id", id);
    record.setField("name", name);
    record.setField("region", region);
    return record;
  }

  /**
   * The table's current rows as "id|name|region" strings sorted by id, by Iceberg's own reader;
   * duplicates are kept, so a row an upsert failed to replace shows.
   */
  private static List<String> read(Table table) throws IOException {
    table.refresh();
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(rows::add);
    }
    rows.sort(
        Comparator.comparing((Record r) -> (Long) r.getField("id"))
            .thenComparing(r -> String.valueOf(r.getField("name"))));
    List<String> out = new ArrayList<>();
    rows.forEach(
        r -> out.add(r.getField("id") + "|" + r.getField("name") + "|" + r.getField("region")));
    return out;
  }

  private static DataFile onlyDataFile(Table table) throws IOException {
    table.refresh();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      List<DataFile> files = new ArrayList<>();
      tasks.forEach(task -> files.add(task.file()));
      assertThat(files).hasSize(1);
      return files.get(0);
    }
  }

  private static List<DeleteFile> liveDeletes(Table table) throws IOException {
    table.refresh();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      List<DeleteFile> deletes = new ArrayList<>();
      tasks.forEach(task -> deletes.addAll(task.deletes()));
      return deletes;
    }
  }

  /** The changes as "-D id|name|region" strings. */
  private static List<String> render(List<ChangeRow> changes) {
    return changes.stream()
        .map(
            change ->
                change.type().symbol()
                    + " "
                    + change.row().getField("id")
                    + "|"
                    + change.row().getField("name")
                    + "|"
                    + change.row().getField("region"))
        .toList();
  }

  /** The location of the one data file {@code snapshot} added. */
  /** Appends {@code rows} in one file; returns its location. */
  private static String appended(TableWriter writer, Table table, Record... rows) {
    return onlyFile(writer.append(List.of(rows)), table);
  }

  private static String onlyFile(Snapshot snapshot, Table table) {
    assertThat(snapshot.addedDataFiles(table.io())).hasSize(1);
    return snapshot.addedDataFiles(table.io()).iterator().next().location();
  }

  private static List<String> locations(Iterable<? extends ContentFile<?>> files) {
    List<String> out = new ArrayList<>();
    files.forEach(file -> out.add(file.location()));
    return out;
  }

  private static ParquetMetadata footer(String location) throws IOException {
    try (ParquetFileReader reader =
        ParquetFileReader.open(
            org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
                new org.apache.hadoop.fs.Path(location),
                new org.apache.hadoop.conf.Configuration()))) {
      return reader.getFooter();
    }
  }
}
