package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.DatabaseChangelog.Page;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.testing.ShopHistory;
import io.skade.testing.TestCatalog;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.io.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link DatabaseChangelog} over a random history of a namespace's tables — upserts, deletes by
 * key, inserts into a table without a key, multi-table commits, a schema change, a rollback, a
 * table created midway, and commits of a table outside the namespace — read in pages of three
 * commits: a reader applying each commit's changes holds, after every commit, its table as that
 * commit left it (read from the commit's own metadata); no transaction is split between pages; the
 * table outside is never followed.
 */
class DatabaseChangelogTest {
  private static final TableIdentifier ORDERS = ShopHistory.ORDERS;
  private static final TableIdentifier CUSTOMERS = ShopHistory.CUSTOMERS;
  private static final TableIdentifier AUDIT = ShopHistory.AUDIT;
  private static final TableIdentifier LATE = ShopHistory.LATE;
  private static final TableIdentifier OUTSIDE = ShopHistory.OUTSIDE;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void appliedInCommitOrderEachTableIsWhatEachCommitLeft() throws Exception {
    SkadeCatalog skade = catalog.get();
    ShopHistory history = new ShopHistory(skade, 40);
    while (history.steps() < 80) {
      history.step();
    }

    DatabaseChangelog changelog =
        new DatabaseChangelog(
            CatalogConnection.of(skade),
            TableSelection.namespace(ShopHistory.SHOP),
            ChangelogOptions.defaults());
    Map<TableIdentifier, Map<Map<String, Object>, Integer>> applied = new HashMap<>();
    Set<TableIdentifier> followed = new HashSet<>();
    long cursor = 0;
    long lastSeq = 0;
    int transactions = 0;
    boolean rolledBack = false;
    while (true) {
      Page page = changelog.commitsAfter(cursor, 3);
      if (page.lastCommitSeq() == cursor) {
        break;
      }
      for (TableCommit commit : page.commits()) {
        CommitEvent event = commit.commit();
        assertThat(event.commitSeq()).as("commit order").isGreaterThan(lastSeq);
        lastSeq = event.commitSeq();
        if (event.inTransaction()) {
          assertThat(event.transactionSeq() + event.transactionSize() - 1)
              .as("the last commit of commit %d's transaction, in its page", event.commitSeq())
              .isLessThanOrEqualTo(page.lastCommitSeq());
          transactions += event.transactionSeq() == event.commitSeq() ? 1 : 0;
        }
        followed.add(commit.table());
        Map<Map<String, Object>, Integer> rows =
            applied.computeIfAbsent(commit.table(), table -> new HashMap<>());
        try (CloseableIterator<ChangeRow> changes = changelog.changes(commit)) {
          while (changes.hasNext()) {
            ChangeRow change = changes.next();
            // The rollback adds no snapshot, yet changes rows.
            rolledBack |= commit.table().equals(ORDERS) && event.addedSnapshotIds().isEmpty();
            rows.merge(
                ShopHistory.values(change.row()), change.type().removes() ? -1 : 1, Integer::sum);
            rows.values().removeIf(count -> count == 0);
          }
        }
        assertThat(rows)
            .as("%s after commit %d", commit.table(), event.commitSeq())
            .isEqualTo(ShopHistory.rowsAt(skade, commit));
      }
      cursor = page.lastCommitSeq();
    }
    assertThat(lastSeq).isLessThanOrEqualTo(skade.commitSeq());
    assertThat(cursor).isEqualTo(skade.commitSeq());
    assertThat(followed).containsExactlyInAnyOrder(ORDERS, CUSTOMERS, AUDIT, LATE);
    assertThat(transactions).as("multi-table commits read").isGreaterThan(5);
    assertThat(rolledBack).as("the rollback's deletes").isTrue();
  }

  @Test
  void selectionsNameTheirTablesAndABadPatternIsNamed() {
    assertThat(TableSelection.tables(List.of(ORDERS)).matches(ORDERS)).isTrue();
    assertThat(TableSelection.tables(List.of(ORDERS)).matches(AUDIT)).isFalse();
    assertThat(TableSelection.namespace(ShopHistory.SHOP).matches(AUDIT)).isTrue();
    assertThat(TableSelection.namespace(ShopHistory.SHOP).matches(OUTSIDE)).isFalse();
    assertThat(TableSelection.matching("shop\\.ord.*").matches(ORDERS)).isTrue();
    assertThat(TableSelection.matching("shop\\.ord.*").matches(AUDIT)).isFalse();
    assertThatThrownBy(() -> TableSelection.matching("shop.(orders"))
        .hasMessageContaining("table pattern 'shop.(orders' is not a regular expression");
    assertThatThrownBy(() -> TableSelection.tables(List.of()))
        .hasMessageContaining("a selection of no tables");
  }
}
