package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch write that fails leaves its commits' outcome unknown: the caller is told so (never a
 * silent success), the catalog stops committing, and a reopen reads the truth from disk.
 */
class CommitOutcomeTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");

  @TempDir Path warehouse;

  @Test
  void aWriteThatFailsAfterReachingDiskIsReportedUnknownAndIsFoundOnReopen() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Committer.BatchWriter real = catalog.committer().batchWriter();
      catalog
          .committer()
          .writeBatchesWith(
              batch -> {
                real.write(batch);
                throw new IOException("injected: fsync reported an error after the write");
              });
      try (CommitSubscription feed = catalog.subscribeCommits()) {
        assertThatThrownBy(() -> Catalogs.append(table, "lost-ack"))
            .isInstanceOf(CommitStateUnknownException.class)
            .hasMessageContaining("injected");
        assertThat(feed.poll(Duration.ofMillis(200)))
            .as("no event for an unknown outcome")
            .isNull();
      }
      assertThatThrownBy(() -> table.updateProperties().set("k", "v").commit())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("stopped committing")
          .hasMessageContaining("reopen");
    }
    try (SkadeCatalog reopened = Catalogs.open(warehouse)) {
      assertThat(reopened.commitSeq()).isEqualTo(2);
      assertThat(reopened.loadTable(T).currentSnapshot()).isNotNull();
    }
  }

  @Test
  void aWriteThatFailsBeforeReachingDiskIsReportedUnknownAndIsAbsentOnReopen() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      catalog
          .committer()
          .writeBatchesWith(
              batch -> {
                throw new IOException("injected: the write never reached the WAL");
              });
      assertThatThrownBy(() -> Catalogs.append(table, "never-written"))
          .isInstanceOf(CommitStateUnknownException.class);
    }
    try (SkadeCatalog reopened = Catalogs.open(warehouse)) {
      assertThat(reopened.commitSeq()).isEqualTo(1);
      assertThat(reopened.loadTable(T).currentSnapshot()).isNull();
      // The sequence continues without a gap.
      Catalogs.append(reopened.loadTable(T), "after");
      assertThat(reopened.commitsSince(0, 10))
          .extracting(CommitEvent::commitSeq)
          .containsExactly(1L, 2L);
    }
  }
}
