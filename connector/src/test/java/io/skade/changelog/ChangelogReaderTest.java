package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.source.reader.FlinkChanges;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Small, hand-checked windows: the options' effects, shown on known changes. */
class ChangelogReaderTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "city", Types.StringType.get())),
          Set.of(1));

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private Table table;
  private long start;
  private long end;

  @BeforeEach
  void history() {
    table = catalog.get().createTable(TableIdentifier.of("db", "t"), SCHEMA);
    TableWriter writer = new TableWriter(table);
    start =
        writer
            .append(List.of(row(1, "Ada", "Oslo"), row(2, "Bo", "Bergen"), row(3, "Cy", "Oslo")))
            .snapshotId();
    writer.upsert(List.of(row(2, "Bo", "Oslo")));
    writer.upsert(List.of(row(2, "Bo", "Tromsø"), row(4, "Di", "Oslo")));
    writer.deleteKeys(List.of(row(3, null, null)));
    end = writer.upsert(List.of(row(1, "Ada", "Oslo"))).snapshotId(); // unchanged values
  }

  @Test
  void perSnapshotKeepsEveryStepInCommitOrder() {
    // Order inside one snapshot is free, except that an update's -U comes right before its +U.
    assertThat(bySnapshot(read(ChangelogOptions.defaults()), this::render))
        .containsExactly(
            Set.of("-U 2 Bo Bergen", "+U 2 Bo Oslo"),
            Set.of("-U 2 Bo Oslo", "+U 2 Bo Tromsø", "+I 4 Di Oslo"),
            Set.of("-D 3 Cy Oslo"));
  }

  @Test
  void collapsedKeepsTheNetChangePerKeyAndDropsUnchangedRows() {
    assertThat(render(read(ChangelogOptions.defaults().withMode(Mode.COLLAPSED))))
        .containsExactlyInAnyOrder(
            "-U 2 Bo Bergen", "+U 2 Bo Tromsø", "+I 4 Di Oslo", "-D 3 Cy Oslo");
  }

  @Test
  void keyOnlyBeforeImagesCarryTheKey() {
    // Old values are not read, so the upsert of key 1 with unchanged values is an update too.
    assertThat(
            render(
                read(
                    ChangelogOptions.defaults()
                        .withMode(Mode.COLLAPSED)
                        .withBeforeImage(BeforeImage.KEY_ONLY))))
        .containsExactlyInAnyOrder(
            "-U 2 null null",
            "+U 2 Bo Tromsø",
            "+I 4 Di Oslo",
            "-D 3 null null",
            "-U 1 null null",
            "+U 1 Ada Oslo");
  }

  @Test
  void aFilterTurnsHalfKeptUpdatesIntoInsertsAndDeletesAndProjectionComesLast() {
    ChangelogOptions options =
        ChangelogOptions.defaults()
            .withFilter(Expressions.equal("city", "Oslo"))
            .withColumns(List.of("id", "city"));
    assertThat(
            bySnapshot(
                read(options),
                change ->
                    change.type().symbol()
                        + " "
                        + change.row().getField("id")
                        + " "
                        + change.row().getField("city")))
        .containsExactly(
            Set.of("+I 2 Oslo"), Set.of("-D 2 Oslo", "+I 4 Oslo"), Set.of("-D 3 Oslo"));
    assertThat(read(options).get(0).row().struct().fields()).hasSize(2);
  }

  @Test
  void aWindowReadsAsOneArrowBatchWithFlinkRowKinds() {
    try (BufferAllocator allocator = new RootAllocator();
        ChangelogBatch batch =
            new ChangelogReader(table, ChangelogOptions.defaults().withMode(Mode.COLLAPSED))
                .readBatch(start, end, allocator)) {
      assertThat(batch.rowCount()).isEqualTo(4);
      int before = 0;
      while (batch.changeType(before) != ChangeType.UPDATE_BEFORE) {
        before++;
      }
      assertThat(FlinkChanges.rowKind(batch.changeType(before + 1)))
          .isEqualTo(RowKind.UPDATE_AFTER);
      assertThat(batch.sameKey(before, before + 1)).isTrue();
      assertThat(FlinkChanges.rowData(batch, before + 1).getString(2).toString())
          .isEqualTo("Tromsø");
    }
  }

  @Test
  void aWindowStreamsAsBoundedBatchesThatKeepUpdatePairsTogether() throws Exception {
    ChangelogReader reader = new ChangelogReader(table, ChangelogOptions.defaults());
    List<String> streamed = new ArrayList<>();
    List<Integer> sizes = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        CloseableIterator<ChangelogBatch> batches = reader.readBatches(start, end, allocator, 1)) {
      while (batches.hasNext()) {
        try (ChangelogBatch batch = batches.next()) {
          sizes.add(batch.rowCount());
          for (int i = 0; i < batch.rowCount(); i++) {
            streamed.add(
                batch.changeType(i).symbol() + " " + FlinkChanges.rowData(batch, i).getLong(0));
          }
        }
      }
    }
    assertThat(streamed)
        .containsExactlyElementsOf(
            read(ChangelogOptions.defaults()).stream()
                .map(change -> change.type().symbol() + " " + change.row().getField("id"))
                .toList());
    // One change per batch, except an update pair, which is never split.
    assertThat(sizes).containsExactlyInAnyOrder(2, 2, 1, 1);
  }

  @Test
  void deletionVectorsOfSeveralFilesInOnePuffinFileAreAllSeen() {
    Table v3 =
        catalog
            .get()
            .buildTable(TableIdentifier.of("db", "v3"), SCHEMA)
            .withProperty("format-version", "3")
            .create();
    TableWriter writer = new TableWriter(v3);
    writer.append(List.of(row(1, "Ada", "Oslo"), row(2, "Bo", "Bergen")));
    writer.append(List.of(row(3, "Cy", "Oslo"), row(4, "Di", "Bodø")));
    long before = v3.currentSnapshot().snapshotId();
    Map<String, List<Long>> positions = new HashMap<>();
    v3.currentSnapshot()
        .addedDataFiles(v3.io())
        .forEach(f -> positions.put(f.location(), List.of(0L)));
    v3.snapshot(v3.currentSnapshot().parentId())
        .addedDataFiles(v3.io())
        .forEach(f -> positions.put(f.location(), List.of(1L)));
    long after = writer.deletePositions(positions).snapshotId();
    // One commit, one Puffin file holding both vectors: both files' rows are deleted.
    assertThat(v3.currentSnapshot().addedDeleteFiles(v3.io()))
        .extracting(DeleteFile::location)
        .hasSize(2)
        .containsOnly(v3.currentSnapshot().addedDeleteFiles(v3.io()).iterator().next().location());
    assertThat(render(new ChangelogReader(v3, ChangelogOptions.defaults()).read(before, after)))
        .containsExactlyInAnyOrder("-D 2 Bo Bergen", "-D 3 Cy Oslo");
  }

  private List<ChangeRow> read(ChangelogOptions options) {
    return new ChangelogReader(table, options).read(start, end);
  }

  private List<String> render(List<ChangeRow> changes) {
    return changes.stream().map(this::render).toList();
  }

  private String render(ChangeRow change) {
    return change.type().symbol()
        + " "
        + change.row().getField("id")
        + " "
        + change.row().getField("name")
        + " "
        + change.row().getField("city");
  }

  /** The changes as one set per snapshot, in commit order. */
  private static List<Set<String>> bySnapshot(
      List<ChangeRow> changes, Function<ChangeRow, String> render) {
    Map<Long, Set<String>> groups = new LinkedHashMap<>();
    long last = -1;
    for (ChangeRow change : changes) {
      if (change.snapshotId() != last) {
        assertThat(groups)
            .as("snapshot %s's changes are contiguous", change.snapshotId())
            .doesNotContainKey(change.snapshotId());
        last = change.snapshotId();
      }
      assertThat(groups.computeIfAbsent(last, id -> new HashSet<>()).add(render.apply(change)))
          .isTrue();
    }
    return List.copyOf(groups.values());
  }

  private Record row(long id, String name, String city) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("name", name);
    record.setField("city", city);
    return record;
  }
}
