package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.DatabaseChangelog.Page;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.scan.MetadataCache;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.types.Types;
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
  private static final Namespace SHOP = Namespace.of("shop");
  private static final TableIdentifier ORDERS = TableIdentifier.of(SHOP, "orders");
  private static final TableIdentifier CUSTOMERS = TableIdentifier.of(SHOP, "customers");
  private static final TableIdentifier AUDIT = TableIdentifier.of(SHOP, "audit");
  private static final TableIdentifier LATE = TableIdentifier.of(SHOP, "late");
  private static final TableIdentifier OUTSIDE = TableIdentifier.of("misc", "outside");

  private static final Schema KEYED =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "v", Types.StringType.get())),
          Set.of(1));
  private static final Schema UNKEYED =
      new Schema(
          Types.NestedField.optional(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "v", Types.StringType.get()));

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void appliedInCommitOrderEachTableIsWhatEachCommitLeft() throws Exception {
    SkadeCatalog skade = catalog.get();
    skade.createNamespace(SHOP);
    skade.createNamespace(Namespace.of("misc"));
    skade.createTable(ORDERS, KEYED);
    skade.createTable(CUSTOMERS, KEYED);
    skade.createTable(AUDIT, UNKEYED);
    skade.createTable(OUTSIDE, UNKEYED);
    Random random = new Random(40);
    long nextId = 1;
    List<Long> ordersSnapshots = new ArrayList<>();
    for (int step = 0; step < 80; step++) {
      if (step == 20) {
        skade.createTable(LATE, UNKEYED);
      }
      if (step == 30) {
        skade
            .loadTable(CUSTOMERS)
            .updateSchema()
            .addColumn("extra", Types.StringType.get())
            .commit();
      }
      if (step == 50) { // back to an older snapshot: the head leaves its history
        skade
            .loadTable(ORDERS)
            .manageSnapshots()
            .rollbackTo(ordersSnapshots.get(ordersSnapshots.size() / 2))
            .commit();
        continue;
      }
      switch (random.nextInt(6)) {
        case 0 -> {
          List<Record> rows = new ArrayList<>();
          for (int i = 0; i < 3; i++) {
            rows.add(row(KEYED, random.nextInt((int) nextId) + 1, "u" + step));
          }
          ordersSnapshots.add(new TableWriter(skade.loadTable(ORDERS)).upsert(rows).snapshotId());
        }
        case 1 -> {
          Table customers = skade.loadTable(CUSTOMERS);
          new TableWriter(customers).upsert(List.of(row(customers.schema(), nextId++, "c" + step)));
          new TableWriter(customers)
              .deleteKeys(List.of(row(customers.schema(), random.nextInt((int) nextId) + 1, null)));
        }
        case 2 -> new TableWriter(skade.loadTable(AUDIT)).append(List.of(row(UNKEYED, step, "a")));
        case 3 ->
            new TableWriter(skade.loadTable(OUTSIDE)).append(List.of(row(UNKEYED, step, "x")));
        default -> {
          // One commit of several tables: new orders and customers, and their audit rows.
          long id = nextId++;
          List<org.apache.iceberg.catalog.TableCommit> commits = new ArrayList<>();
          commits.add(append(skade, ORDERS, row(KEYED, id, "t" + step)));
          Table customers = skade.loadTable(CUSTOMERS);
          commits.add(append(skade, CUSTOMERS, row(customers.schema(), id, "t" + step)));
          commits.add(append(skade, AUDIT, row(UNKEYED, id, "t" + step)));
          if (step > 20) {
            commits.add(append(skade, LATE, row(UNKEYED, id, "late")));
          }
          skade.commitTransaction(commits);
          ordersSnapshots.add(skade.loadTable(ORDERS).currentSnapshot().snapshotId());
        }
      }
    }

    DatabaseChangelog changelog =
        new DatabaseChangelog(
            CatalogConnection.of(skade),
            TableSelection.namespace(SHOP),
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
            rows.merge(values(change.row()), change.type().removes() ? -1 : 1, Integer::sum);
            rows.values().removeIf(count -> count == 0);
          }
        }
        assertThat(rows)
            .as("%s after commit %d", commit.table(), event.commitSeq())
            .isEqualTo(rowsAt(skade, commit));
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
    assertThat(TableSelection.namespace(SHOP).matches(AUDIT)).isTrue();
    assertThat(TableSelection.namespace(SHOP).matches(OUTSIDE)).isFalse();
    assertThat(TableSelection.matching("shop\\.ord.*").matches(ORDERS)).isTrue();
    assertThat(TableSelection.matching("shop\\.ord.*").matches(AUDIT)).isFalse();
    assertThatThrownBy(() -> TableSelection.matching("shop.(orders"))
        .hasMessageContaining("table pattern 'shop.(orders' is not a regular expression");
    assertThatThrownBy(() -> TableSelection.tables(List.of()))
        .hasMessageContaining("a selection of no tables");
  }

  /** The table's rows as the commit's own metadata holds them, counted. */
  private static Map<Map<String, Object>, Integer> rowsAt(SkadeCatalog skade, TableCommit commit)
      throws Exception {
    Map<Map<String, Object>, Integer> rows = new HashMap<>();
    if (!commit.commit().operation().leavesPointer()) {
      return rows;
    }
    Table at =
        MetadataCache.shared()
            .table(
                commit.commit().metadataLocation(),
                skade.loadTable(commit.table()).io(),
                commit.table().toString());
    if (at.currentSnapshot() == null) {
      return rows;
    }
    try (CloseableIterable<Record> records = IcebergGenerics.read(at).build()) {
      records.forEach(record -> rows.merge(values(record), 1, Integer::sum));
    }
    return rows;
  }

  /**
   * A row's non-null values by column name: equal across a schema that added a column, without the
   * row position Iceberg's generic reader adds to rows of files with position deletes.
   */
  private static Map<String, Object> values(Record record) {
    Map<String, Object> values = new TreeMap<>();
    for (Types.NestedField field : record.struct().fields()) {
      Object value = record.getField(field.name());
      if (value != null && !MetadataColumns.isMetadataColumn(field.name())) {
        values.put(field.name(), value);
      }
    }
    return values;
  }

  private static Record row(Schema schema, long id, String v) {
    GenericRecord row = GenericRecord.create(schema);
    row.setField("id", id);
    row.setField("v", v);
    return row;
  }

  /** {@code row} appended to {@code table}, staged as one table's part of a multi-table commit. */
  private static org.apache.iceberg.catalog.TableCommit append(
      SkadeCatalog skade, TableIdentifier table, Record row) {
    Table loaded = skade.loadTable(table);
    Transaction transaction = loaded.newTransaction();
    AppendFiles append = transaction.newFastAppend();
    new TableWriter(loaded).writeDataFiles(List.of(row)).forEach(append::appendFile);
    append.commit();
    BaseTransaction staged = (BaseTransaction) transaction;
    return org.apache.iceberg.catalog.TableCommit.create(
        table, staged.startMetadata(), staged.currentMetadata());
  }
}
