package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code (table, snapshot)} index when several pointer changes of the same tables land in one
 * batch: it must read as if they had been written one by one, in {@code commitSeq} order.
 */
class SnapshotIndexTest {
  private static final TableIdentifier A = TableIdentifier.of(Catalogs.DB, "a");
  private static final TableIdentifier B = TableIdentifier.of(Catalogs.DB, "b");
  private static final TableIdentifier C = TableIdentifier.of(Catalogs.DB, "c");

  @TempDir Path warehouse;

  @Test
  void anAppendThenARenameInOneBatchKeepsTheNewSnapshotUnderTheNewName() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.append(Catalogs.createTable(catalog, "a"), "old");
      long old = catalog.loadTable(A).currentSnapshot().snapshotId();
      String a = catalog.commitTableKey(A);
      String b = catalog.commitTableKey(B);
      long appendSeq =
          catalog
              .committer()
              .submit(
                  stage -> {
                    long seq =
                        stage.commit(
                            a,
                            CommitOperation.UPDATE,
                            List.of(42L),
                            stage.pointer(a).metadataLocation(),
                            42L);
                    stage.rename(a, b);
                    return seq;
                  });
      assertThat(catalog.commitOf(B, 42L)).map(CommitEvent::commitSeq).hasValue(appendSeq);
      assertThat(catalog.commitOf(B, old)).isPresent();
      assertThat(catalog.commitOf(A, 42L)).isEmpty();
      assertThat(catalog.commitOf(A, old)).isEmpty();
    }
  }

  @Test
  void aDropThenARenameOntoTheDroppedNameKeepsTheRenamedTablesHistory() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.append(Catalogs.createTable(catalog, "a"), "a1");
      Catalogs.append(Catalogs.createTable(catalog, "b"), "b1");
      long aSnapshot = catalog.loadTable(A).currentSnapshot().snapshotId();
      long bSnapshot = catalog.loadTable(B).currentSnapshot().snapshotId();
      String a = catalog.commitTableKey(A);
      String b = catalog.commitTableKey(B);
      catalog
          .committer()
          .submit(
              stage -> {
                stage.commit(
                    b,
                    CommitOperation.DROP,
                    List.of(),
                    stage.pointer(b).metadataLocation(),
                    TablePointer.NO_SNAPSHOT);
                stage.rename(a, b);
                return null;
              });
      assertThat(catalog.commitOf(B, aSnapshot)).isPresent();
      assertThat(catalog.commitOf(B, bSnapshot)).as("the dropped table's row").isEmpty();
      assertThat(catalog.loadTable(B).currentSnapshot().snapshotId()).isEqualTo(aSnapshot);
    }
  }

  @Test
  void renamesChainedInOneBatchCarryTheHistoryToTheLastName() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.append(Catalogs.createTable(catalog, "a"), "a1");
      long snapshot = catalog.loadTable(A).currentSnapshot().snapshotId();
      String a = catalog.commitTableKey(A);
      String b = catalog.commitTableKey(B);
      String c = catalog.commitTableKey(C);
      catalog
          .committer()
          .submit(
              stage -> {
                stage.rename(a, b);
                stage.rename(b, c);
                return null;
              });
      assertThat(catalog.commitOf(C, snapshot)).isPresent();
      assertThat(catalog.commitOf(A, snapshot)).isEmpty();
      assertThat(catalog.commitOf(B, snapshot)).isEmpty();

      catalog
          .committer()
          .submit(
              stage -> {
                stage.rename(c, a);
                stage.rename(a, c);
                return null;
              });
      assertThat(catalog.commitOf(C, snapshot)).as("there and back again").isPresent();
    }
  }
}
