package io.skade.lineage;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CommitEvent;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every commit of the catalog is described once, in commit_seq order, with the actor and inputs its
 * writer named; expected commit_seqs come from the catalog's own commit log.
 */
class CommitLineageTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier A = TableIdentifier.of("db", "a");
  private static final TableIdentifier B = TableIdentifier.of("db", "b");
  private static final TableIdentifier C = TableIdentifier.of("db", "c");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void anApplicationReadingAAndBAndWritingCIsDescribedCommitByCommit() throws Exception {
    CapturingLineageSink captured = new CapturingLineageSink();
    long before = catalog.get().commitSeq();
    List<Snapshot> snapshots;
    try (BestEffortLineage out = new BestEffortLineage(captured);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      Table a = catalog.get().buildTable(A, SCHEMA).withProperty("format-version", "2").create();
      Table b = catalog.get().buildTable(B, SCHEMA).withProperty("format-version", "2").create();
      Table c = catalog.get().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      new TableWriter(a).append(List.of(row(1, "a1")));
      TableWriter writer =
          new TableWriter(c)
              .describedAs(
                  "nightly-merge",
                  List.of(
                      dataset(A),
                      dataset(B),
                      LineageDataset.external("kafka", "kafka://broker:9092", "orders")));
      snapshots =
          List.of(
              writer.append(List.of(row(1, "one"), row(2, "two"))),
              writer.deleteKeys(List.of(row(2, null))),
              writer.upsert(List.of(row(1, "uno"))),
              writer.overwrite(Expressions.equal("id", 1L), List.of(row(3, "tres"))));

      captured.awaitCommits(events -> events.size() == 8, Duration.ofSeconds(30));
    }

    List<LineageEvent> events = captured.commits();
    assertThat(events)
        .extracting(LineageEvent::commitSeq)
        .containsExactlyElementsOf(
            java.util.stream.LongStream.rangeClosed(before + 1, before + 8).boxed().toList());
    assertThat(events)
        .extracting(e -> e.output().name(), LineageEvent::operation, LineageEvent::actor)
        .containsExactly(
            tuple("db.a", LineageOperation.CREATE, "skade"),
            tuple("db.b", LineageOperation.CREATE, "skade"),
            tuple("db.c", LineageOperation.CREATE, "skade"),
            tuple("db.a", LineageOperation.APPEND, "skade"),
            tuple("db.c", LineageOperation.APPEND, "nightly-merge"),
            tuple("db.c", LineageOperation.DELETE, "nightly-merge"),
            tuple("db.c", LineageOperation.OVERWRITE, "nightly-merge"),
            tuple("db.c", LineageOperation.OVERWRITE, "nightly-merge"));
    List<LineageEvent> writes = events.subList(4, 8);
    for (int i = 0; i < 4; i++) {
      Snapshot snapshot = snapshots.get(i);
      CommitEvent commit = catalog.get().commitOf(C, snapshot.snapshotId()).orElseThrow();
      assertThat(writes.get(i).snapshotId()).isEqualTo(snapshot.snapshotId());
      assertThat(writes.get(i).commitSeq()).isEqualTo(commit.commitSeq());
      assertThat(writes.get(i).tsMicros()).isEqualTo(commit.tsMicros());
      assertThat(writes.get(i).inputs())
          .extracting(LineageDataset::name, LineageDataset::system)
          .containsExactly(tuple("db.a", null), tuple("db.b", null), tuple("orders", "kafka"));
    }
    LineageDataset output = writes.get(0).output();
    assertThat(output.namespace()).isEqualTo(catalog.get().warehouse());
    assertThat(output.location()).isEqualTo(catalog.get().loadTable(C).location());
    assertThat(output.fields())
        .containsExactly(
            new LineageDataset.Field("id", "long"), new LineageDataset.Field("name", "string"));
    assertThat(writes.get(0).inputs().get(0).location())
        .isEqualTo(catalog.get().loadTable(A).location());
    assertThat(events.get(0).snapshotId()).isNull();
    assertThat(events).extracting(LineageEvent::eventId).doesNotHaveDuplicates();
  }

  @Test
  void startingFromAnOlderCursorDescribesTheCommitsSinceFromTheLogWithTheSameIds()
      throws Exception {
    CapturingLineageSink live = new CapturingLineageSink();
    long start = catalog.get().commitSeq();
    try (BestEffortLineage out = new BestEffortLineage(live);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      Table a = catalog.get().buildTable(A, SCHEMA).withProperty("format-version", "2").create();
      new TableWriter(a).append(List.of(row(1, "a1")));
      new TableWriter(a).append(List.of(row(2, "a2")));
      live.awaitCommits(events -> events.size() == 3, Duration.ofSeconds(30));
    }
    CapturingLineageSink replayed = new CapturingLineageSink();
    try (BestEffortLineage out = new BestEffortLineage(replayed);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", start, Set.of())) {
      replayed.awaitCommits(events -> events.size() == 3, Duration.ofSeconds(30));
    }
    assertThat(replayed.commits()).isEqualTo(live.commits());
  }

  @Test
  void commitsOfAnUnrecordedTableAreNotDescribed() throws Exception {
    CapturingLineageSink captured = new CapturingLineageSink();
    try (BestEffortLineage out = new BestEffortLineage(captured);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of(B))) {
      Table b = catalog.get().buildTable(B, SCHEMA).withProperty("format-version", "2").create();
      new TableWriter(b).append(List.of(row(1, "b1")));
      Table a = catalog.get().buildTable(A, SCHEMA).withProperty("format-version", "2").create();
      captured.awaitCommits(events -> !events.isEmpty(), Duration.ofSeconds(30));
      // the cursor moves past a commit once its event was handed on, a moment after the sink got it
      long end = catalog.get().commitSeq();
      await("the lineage cursor at " + end)
          .atMost(Duration.ofSeconds(30))
          .until(lineage::cursor, cursor -> cursor == end);
    }
    assertThat(captured.commits()).extracting(e -> e.output().name()).containsExactly("db.a");
  }

  @Test
  void aMultiTableCommitIsOneReleaseNamingEveryTableLiveAndReplayedFromTheLog() throws Exception {
    CapturingLineageSink live = new CapturingLineageSink();
    long start = catalog.get().commitSeq();
    Snapshot a;
    Snapshot c;
    try (BestEffortLineage out = new BestEffortLineage(live);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", -1, Set.of())) {
      catalog.get().buildTable(A, SCHEMA).withProperty("format-version", "2").create();
      catalog.get().buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      org.apache.iceberg.Transaction txA = appendTransaction(A, row(1, "a"));
      org.apache.iceberg.Transaction txC = appendTransaction(C, row(2, "c"));
      catalog.get().commitTransaction(List.of(tableCommit(A, txA), tableCommit(C, txC)));
      a = catalog.get().loadTable(A).currentSnapshot();
      c = catalog.get().loadTable(C).currentSnapshot();
      live.awaitCommits(events -> events.size() == 3, Duration.ofSeconds(30));
    }
    LineageEvent release = live.commits().get(2);
    assertThat(release.operation()).isEqualTo(LineageOperation.RELEASE);
    assertThat(release.actor()).isEqualTo("release-job");
    assertThat(release.outputs())
        .extracting(LineageDataset::name, LineageDataset::snapshotId)
        .containsExactly(tuple("db.a", a.snapshotId()), tuple("db.c", c.snapshotId()));
    assertThat(release.commitSeq())
        .isEqualTo(catalog.get().commitOf(A, a.snapshotId()).orElseThrow().commitSeq());
    assertThat(catalog.get().commitOf(C, c.snapshotId()).orElseThrow().commitSeq())
        .isEqualTo(release.commitSeq() + 1);

    CapturingLineageSink replayed = new CapturingLineageSink();
    try (BestEffortLineage out = new BestEffortLineage(replayed);
        CommitLineage lineage = new CommitLineage(catalog.get(), out, "skade", start, Set.of())) {
      replayed.awaitCommits(events -> events.size() == 3, Duration.ofSeconds(30));
    }
    assertThat(replayed.commits()).isEqualTo(live.commits());
  }

  /** An append of {@code row} to {@code id}, prepared in a transaction, not committed. */
  private org.apache.iceberg.Transaction appendTransaction(TableIdentifier id, Record row) {
    Table table = catalog.get().loadTable(id);
    org.apache.iceberg.Transaction tx = table.newTransaction();
    org.apache.iceberg.AppendFiles append = tx.newAppend();
    new TableWriter(table).writeDataFiles(List.of(row)).forEach(append::appendFile);
    append.set(CommitLineage.ACTOR, "release-job").commit();
    return tx;
  }

  private static org.apache.iceberg.catalog.TableCommit tableCommit(
      TableIdentifier id, org.apache.iceberg.Transaction tx) {
    org.apache.iceberg.BaseTransaction prepared = (org.apache.iceberg.BaseTransaction) tx;
    return org.apache.iceberg.catalog.TableCommit.create(
        id, prepared.startMetadata(), prepared.currentMetadata());
  }

  private LineageDataset dataset(TableIdentifier id) {
    return new LineageDataset(
        catalog.get().warehouse(), id.toString(), null, null, null, List.of());
  }
}
