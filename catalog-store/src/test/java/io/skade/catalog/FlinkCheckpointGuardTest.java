package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.SnapshotUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog.TableBuilder;
import org.apache.iceberg.catalog.TableCommit;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog refuses to apply one Flink checkpoint twice (apache/iceberg#14425): a snapshot
 * stamped with the job, operator and checkpoint of one the table has, adding the same files, is
 * refused with {@link CommitFailedException} and changes nothing, on a table's commit and in a
 * multi-table commit; the same stamps with new files (a new run of a job that reuses its id),
 * another operator, or the next checkpoint commit.
 */
class FlinkCheckpointGuardTest {
  private static final String JOB = "f0b2a6c41c3e4b3e8a1d9e7c5b4a3f21";
  private static final String OPERATOR = "9dd63673dd41ea021b896d5203f3ba7c";

  @TempDir Path dir;
  private SkadeCatalog catalog;
  private Table table;

  @BeforeEach
  void open() {
    catalog = Catalogs.open(dir.resolve("warehouse"));
    catalog.createNamespace(Catalogs.DB);
    table = create("t");
  }

  @AfterEach
  void close() throws Exception {
    catalog.close();
  }

  @Test
  void aCheckpointAppliedAgainWithItsFilesIsRefusedAndChangesNothing() {
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("a")), OPERATOR, 1));
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("b")), OPERATOR, 2));
    long seq = catalog.commitSeq();
    long current = table.currentSnapshot().snapshotId();

    assertThatThrownBy(
            () ->
                commit(
                    stamped(table.newFastAppend().appendFile(Catalogs.dataFile("b")), OPERATOR, 2)))
        .isInstanceOf(CommitFailedException.class)
        .hasMessageContaining("already committed checkpoint 2 of Flink job " + JOB)
        .hasMessageContaining("/data/b.parquet")
        .hasMessageContaining("14425");
    table.refresh();
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(current);
    assertThat(catalog.commitSeq()).as("no commit_seq taken").isEqualTo(seq);
  }

  @Test
  void aDeleteOnlyCheckpointAppliedAgainIsRefused() {
    commit(stamped(table.newRowDelta().addDeletes(deleteFile("d1")), OPERATOR, 5));
    long current = table.currentSnapshot().snapshotId();

    assertThatThrownBy(
            () -> commit(stamped(table.newRowDelta().addDeletes(deleteFile("d1")), OPERATOR, 5)))
        .isInstanceOf(CommitFailedException.class)
        .hasMessageContaining("checkpoint 5");
    table.refresh();
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(current);
  }

  @Test
  void newFilesAnotherOperatorOrTheNextCheckpointCommit() {
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("a")), OPERATOR, 7));
    // A new run of an application with a fixed job id starts its checkpoints again.
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("fresh")), OPERATOR, 1));
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("other-op")), "other", 7));
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("next")), OPERATOR, 8));
    commit(table.newFastAppend().appendFile(Catalogs.dataFile("a"))); // not a Flink commit

    table.refresh();
    assertThat(table.snapshots()).hasSize(5);
  }

  @Test
  void aMultiTableCommitApplyingACheckpointAgainChangesNoTable() {
    Table other = create("other");
    commit(stamped(table.newFastAppend().appendFile(Catalogs.dataFile("a")), OPERATOR, 3));
    long seq = catalog.commitSeq();

    assertThatThrownBy(
            () ->
                catalog.commitTransaction(
                    List.of(
                        prepared(
                            other,
                            tx -> tx.newFastAppend().appendFile(Catalogs.dataFile("x")).commit()),
                        prepared(
                            table,
                            tx ->
                                stamped(
                                        tx.newFastAppend().appendFile(Catalogs.dataFile("a")),
                                        OPERATOR,
                                        3)
                                    .commit()))))
        .isInstanceOf(CommitFailedException.class)
        .hasMessageContaining("checkpoint 3");
    other.refresh();
    assertThat(other.currentSnapshot()).as("the other table of the commit").isNull();
    assertThat(catalog.commitSeq()).isEqualTo(seq);
  }

  private Table create(String name) {
    TableBuilder builder =
        catalog
            .buildTable(TableIdentifier.of(Catalogs.DB, name), Catalogs.SCHEMA)
            .withProperty(TableProperties.FORMAT_VERSION, "2")
            // A refusal is final: no retries that would be refused again.
            .withProperty(TableProperties.COMMIT_NUM_RETRIES, "0");
    return builder.create();
  }

  private static <T extends SnapshotUpdate<T>> T stamped(
      T update, String operator, long checkpoint) {
    return update
        .set(FlinkCheckpointGuard.JOB_ID, JOB)
        .set(FlinkCheckpointGuard.OPERATOR_ID, operator)
        .set(FlinkCheckpointGuard.MAX_COMMITTED_CHECKPOINT_ID, String.valueOf(checkpoint));
  }

  private void commit(SnapshotUpdate<?> update) {
    update.commit();
    table.refresh();
  }

  private static DeleteFile deleteFile(String name) {
    return FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
        .ofEqualityDeletes(1)
        .withPath("/data/" + name + "-deletes.parquet")
        .withFileSizeInBytes(10)
        .withRecordCount(1)
        .withFormat(FileFormat.PARQUET)
        .build();
  }

  /** A prepared commit of {@code table}, as Iceberg's REST client builds a multi-table one. */
  private static TableCommit prepared(Table table, Consumer<Transaction> change) {
    Transaction tx = table.newTransaction();
    change.accept(tx);
    BaseTransaction base = (BaseTransaction) tx;
    return TableCommit.create(
        TableIdentifier.of(Catalogs.DB, table.name().substring(table.name().lastIndexOf('.') + 1)),
        base.startMetadata(),
        base.currentMetadata());
  }
}
