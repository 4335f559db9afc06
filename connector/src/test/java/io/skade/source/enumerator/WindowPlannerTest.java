package io.skade.source.enumerator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.ConsumerCursor;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.scan.FileSlice;
import io.skade.source.StartupMode;
import io.skade.source.split.ChangelogSplit;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Windows are planned from the commit log, each exactly once, from the cursor on. */
class WindowPlannerTest {
  private static final Schema SCHEMA = IdRows.keyed("v");
  private static final TableIdentifier T = TableIdentifier.of("db", "t");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private Table table;
  private TableWriter writer;
  private final List<Long> snapshots = new ArrayList<>();

  @BeforeEach
  void history() {
    table = catalog.get().createTable(T, SCHEMA);
    writer = new TableWriter(table);
    snapshots.add(writer.append(List.of(row(1, "a"))).snapshotId());
    snapshots.add(writer.upsert(List.of(row(1, "b"))).snapshotId());
    snapshots.add(writer.deleteKeys(List.of(row(1, null))).snapshotId());
  }

  @Test
  void eachCommitAfterTheCursorIsOneWindowStartingWhereThePreviousEnded() {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    WindowPlanner.Start start = planner.start(StartupMode.EARLIEST, null, false, null);
    WindowPlanner.Plan plan = planner.next(start.cursor(), WindowPlanner.UNBOUNDED);
    assertThat(plan.splits())
        .extracting(p -> p.fromSnapshotId() + ">" + p.toSnapshotId())
        .containsExactly(
            ChangelogSplit.BEFORE_FIRST + ">" + snapshots.get(0),
            snapshots.get(0) + ">" + snapshots.get(1),
            snapshots.get(1) + ">" + snapshots.get(2));
    assertThat(plan.cursor().snapshotId()).isEqualTo(snapshots.get(2));
    assertThat(plan.cursor().commitSeq()).isEqualTo(catalog.get().commitSeq());
    assertThat(planner.next(plan.cursor(), WindowPlanner.UNBOUNDED).splits())
        .as("nothing new after the cursor")
        .isEmpty();
  }

  @Test
  void replayingTheLogFromAnOlderPositionPlansNothingTwice() {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    // The cursor is at the last snapshot, but the log position is from before all commits:
    // a duplicate or late wake-up, or a log read that overlaps what was planned.
    ConsumerCursor stale = new ConsumerCursor(T, table.uuid().toString(), snapshots.get(2), 0);
    WindowPlanner.Plan plan = planner.next(stale, WindowPlanner.UNBOUNDED);
    assertThat(plan.splits()).isEmpty();
    long next = writer.append(List.of(row(2, "c"))).snapshotId();
    assertThat(planner.next(plan.cursor(), WindowPlanner.UNBOUNDED).splits())
        .extracting(p -> p.fromSnapshotId() + ">" + p.toSnapshotId())
        .containsExactly(snapshots.get(2) + ">" + next);
  }

  @Test
  void collapsedModePlansOneWindowForTheCommitsOfARound() {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.COLLAPSED);
    WindowPlanner.Start start = planner.start(StartupMode.EARLIEST, null, false, null);
    assertThat(planner.next(start.cursor(), WindowPlanner.UNBOUNDED).splits())
        .extracting(p -> p.fromSnapshotId() + ">" + p.toSnapshotId())
        .containsExactly(ChangelogSplit.BEFORE_FIRST + ">" + snapshots.get(2));
  }

  @Test
  void aBoundedSourceStopsAtItsEndSnapshot() {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    WindowPlanner.Start start =
        planner.start(StartupMode.FROM_SNAPSHOT, snapshots.get(1), true, snapshots.get(1));
    writer.append(List.of(row(3, "d")));
    WindowPlanner.Plan plan = planner.next(start.cursor(), start.endSnapshotId());
    assertThat(plan.splits()).extracting(p -> p.toSnapshotId()).containsExactly(snapshots.get(1));
    assertThat(plan.cursor().snapshotId()).isEqualTo(start.endSnapshotId());
    assertThat(planner.next(plan.cursor(), start.endSnapshotId()).splits()).isEmpty();
  }

  @Test
  void aTableDroppedOrRecreatedWhileFollowedIsAClearError() {
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), T, Mode.PER_SNAPSHOT);
    WindowPlanner.Start start = planner.start(StartupMode.LATEST, null, false, null);
    catalog.get().dropTable(T, false);
    assertThatThrownBy(() -> planner.next(start.cursor(), WindowPlanner.UNBOUNDED))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("db.t")
        .hasMessageContaining("was dropped at commit_seq");
    catalog.get().createTable(T, SCHEMA);
    ConsumerCursor afterDrop =
        new ConsumerCursor(
            T,
            start.cursor().tableUuid(),
            start.cursor().snapshotId(),
            catalog.get().commitSeq() - 1);
    assertThatThrownBy(() -> planner.next(afterDrop, WindowPlanner.UNBOUNDED))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("dropped and created again")
        .hasMessageContaining("scan.startup.mode=full");
  }

  @Test
  void aPartitionedPrimaryKeyTableIsCutIntoOneSplitPerSlotOfTheTouchedPartitions() {
    TableIdentifier bucketed = TableIdentifier.of("db", "bucketed");
    Table b =
        catalog
            .get()
            .buildTable(bucketed, SCHEMA)
            .withPartitionSpec(
                org.apache.iceberg.PartitionSpec.builderFor(SCHEMA).bucket("id", 16).build())
            .create();
    List<Record> rows = new ArrayList<>();
    for (long id = 0; id < 64; id++) {
      rows.add(row(id, "x"));
    }
    long snapshot = new TableWriter(b).upsert(rows).snapshotId();
    WindowPlanner planner =
        new WindowPlanner(CatalogConnection.of(catalog.get()), bucketed, Mode.PER_SNAPSHOT);
    ConsumerCursor before =
        new ConsumerCursor(
            bucketed,
            b.uuid().toString(),
            ConsumerCursor.NO_SNAPSHOT,
            catalog.get().commitSeq() - 1);
    List<ChangelogSplit> splits = planner.next(before, WindowPlanner.UNBOUNDED).splits();
    // Each bucket written is its own unit, in the slot its partition's name hashes to.
    Set<Integer> slots = new HashSet<>();
    for (long id = 0; id < 64; id++) {
      int bucket =
          org.apache.iceberg.transforms.Transforms.bucket(16).bind(Types.LongType.get()).apply(id);
      slots.add(FileSlice.slotOf("id_bucket=" + bucket, OrderingUnits.SLOTS));
    }
    assertThat(slots).as("enough slots to spread").hasSizeGreaterThan(8);
    assertThat(splits)
        .extracting(split -> split.slice().slot())
        .containsExactlyInAnyOrderElementsOf(slots);
    assertThat(splits)
        .allSatisfy(
            split -> {
              assertThat(split.toSnapshotId()).isEqualTo(snapshot);
              assertThat(split.slice().unit()).isEqualTo(FileSlice.Unit.PARTITION);
            });
    assertThat(splits).extracting(ChangelogSplit::splitId).doesNotHaveDuplicates();
    assertThat(splits)
        .extracting(split -> OrderingUnits.readerOf(split, 4))
        .as("spread over four readers")
        .containsOnly(0, 1, 2, 3)
        .contains(0, 1, 2, 3);
  }

  private static Record row(long id, String v) {
    return IdRows.row(SCHEMA, id, v);
  }
}
