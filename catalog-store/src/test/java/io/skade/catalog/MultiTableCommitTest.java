package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MultiTableCommitTest {
  @TempDir Path warehouse;

  @Test
  void allTablesAdvanceInOneBatchWithConsecutiveCommitSeqs() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table a = Catalogs.createTable(catalog, "a");
      Table b = Catalogs.createTable(catalog, "b");
      Table c = Catalogs.createTable(catalog, "c");
      long seqBefore = catalog.commitSeq();
      long batchesBefore = catalog.statistics().batchesWritten();

      catalog.commitTransaction(
          List.of(appendCommit(a, "a1"), appendCommit(b, "b1"), appendCommit(c, "c1")));

      assertThat(catalog.commitSeq()).isEqualTo(seqBefore + 3);
      assertThat(catalog.statistics().batchesWritten()).isEqualTo(batchesBefore + 1);
      List<CommitEvent> rows = new ArrayList<>(catalog.commitsSince(seqBefore, 10));
      assertThat(rows)
          .extracting(CommitEvent::tableKey)
          .containsExactly(
              catalog.commitTableKey(id("a")),
              catalog.commitTableKey(id("b")),
              catalog.commitTableKey(id("c")));
      for (CommitEvent row : rows) {
        Table table = catalog.loadTable(TableKeys.identifier(row.tableKey()));
        assertThat(table.currentSnapshot().snapshotId()).isEqualTo(row.snapshotId().orElseThrow());
        assertThat(metadataLocation(table)).isEqualTo(row.metadataLocation());
      }
    }
  }

  @Test
  void oneConflictingTableLeavesEveryTableWhereItWas() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table a = Catalogs.createTable(catalog, "a");
      Table b = Catalogs.createTable(catalog, "b");
      TableCommit commitA = appendCommit(a, "a1");
      TableCommit commitB = appendCommit(b, "b1");
      // Someone else moves b after the multi-table commit was prepared.
      Catalogs.append(catalog.loadTable(id("b")), "b-other");
      long seqBefore = catalog.commitSeq();
      String aBefore = metadataLocation(catalog.loadTable(id("a")));
      String bBefore = metadataLocation(catalog.loadTable(id("b")));

      assertThatThrownBy(() -> catalog.commitTransaction(List.of(commitA, commitB)))
          .isInstanceOf(CommitFailedException.class);

      assertThat(catalog.commitSeq()).isEqualTo(seqBefore);
      assertThat(metadataLocation(catalog.loadTable(id("a")))).isEqualTo(aBefore);
      assertThat(metadataLocation(catalog.loadTable(id("b")))).isEqualTo(bBefore);
      assertThat(catalog.loadTable(id("a")).currentSnapshot()).isNull();
    }
  }

  @Test
  void aTableNamedTwiceIsRejectedWithoutChangingAnything() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table a = Catalogs.createTable(catalog, "a");
      long seqBefore = catalog.commitSeq();
      assertThatThrownBy(
              () -> catalog.commitTransaction(List.of(appendCommit(a, "x"), appendCommit(a, "y"))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("db.a")
          .hasMessageContaining("twice");
      assertThat(catalog.commitSeq()).isEqualTo(seqBefore);
    }
  }

  private static TableIdentifier id(String name) {
    return TableIdentifier.of(Catalogs.DB, name);
  }

  /** A prepared append, the way Iceberg's REST client builds a multi-table commit. */
  private static TableCommit appendCommit(Table table, String file) {
    Transaction tx = table.newTransaction();
    tx.newFastAppend().appendFile(Catalogs.dataFile(file)).commit();
    BaseTransaction base = (BaseTransaction) tx;
    return TableCommit.create(
        TableIdentifier.parse(table.name().substring(table.name().indexOf('.') + 1)),
        base.startMetadata(),
        base.currentMetadata());
  }

  private static String metadataLocation(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }
}
