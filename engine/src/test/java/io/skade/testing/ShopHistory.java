package io.skade.testing;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.DatabaseChangelog.TableCommit;
import io.skade.scan.MetadataCache;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * A random history of a namespace's tables, one step at a time: upserts, deletes by key, inserts
 * into a table without a key, commits of several tables at once, a schema change (step 30), a
 * rollback (step 50), a table created midway (step 20), and commits of a table outside the
 * namespace. With what a reader of its changes compares against: a table's rows as a commit left
 * them.
 */
public final class ShopHistory {
  public static final Namespace SHOP = Namespace.of("shop");
  public static final TableIdentifier ORDERS = TableIdentifier.of(SHOP, "orders");
  public static final TableIdentifier CUSTOMERS = TableIdentifier.of(SHOP, "customers");
  public static final TableIdentifier AUDIT = TableIdentifier.of(SHOP, "audit");
  public static final TableIdentifier LATE = TableIdentifier.of(SHOP, "late");
  public static final TableIdentifier OUTSIDE = TableIdentifier.of("misc", "outside");

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

  private final Catalog catalog;
  private final Consumer<List<org.apache.iceberg.catalog.TableCommit>> transactions;
  private final Random random;
  private final List<Long> ordersSnapshots = new ArrayList<>();
  private long nextId = 1;
  private int step;

  /** Creates the namespaces and the tables of the first step in {@code skade}. */
  public ShopHistory(SkadeCatalog skade, long seed) {
    this(skade, skade, skade::commitTransaction, seed);
  }

  /**
   * Creates the namespaces and the tables of the first step in {@code catalog} (a skade server's,
   * say), whose multi-table commits {@code transactions} makes.
   */
  public ShopHistory(
      Catalog catalog,
      SupportsNamespaces namespaces,
      Consumer<List<org.apache.iceberg.catalog.TableCommit>> transactions,
      long seed) {
    this.catalog = catalog;
    this.transactions = transactions;
    this.random = new Random(seed);
    namespaces.createNamespace(SHOP);
    namespaces.createNamespace(Namespace.of("misc"));
    catalog.createTable(ORDERS, KEYED);
    catalog.createTable(CUSTOMERS, KEYED);
    catalog.createTable(AUDIT, UNKEYED);
    catalog.createTable(OUTSIDE, UNKEYED);
  }

  /** How many steps were taken. */
  public int steps() {
    return step;
  }

  /** Takes the next step: one commit, or one commit of several tables. */
  public void step() {
    int now = step++;
    if (now == 20) {
      catalog.createTable(LATE, UNKEYED);
    }
    if (now == 30) {
      catalog
          .loadTable(CUSTOMERS)
          .updateSchema()
          .addColumn("extra", Types.StringType.get())
          .commit();
    }
    if (now == 50) { // back to an older snapshot: the head leaves its history
      catalog
          .loadTable(ORDERS)
          .manageSnapshots()
          .rollbackTo(ordersSnapshots.get(ordersSnapshots.size() / 2))
          .commit();
      return;
    }
    switch (random.nextInt(6)) {
      case 0 -> {
        // up to three keys given out already, each once: a key upserted twice in one commit, or
        // upserted before an atomic commit appends it, would be in the table twice
        List<Record> rows = new ArrayList<>();
        random
            .longs(1, nextId + 1)
            .distinct()
            .limit(Math.min(3, nextId))
            .forEach(id -> rows.add(row(KEYED, id, "u" + now)));
        if (rows.stream().anyMatch(row -> (long) row.getField("id") == nextId)) {
          nextId++; // given out now
        }
        ordersSnapshots.add(new TableWriter(catalog.loadTable(ORDERS)).upsert(rows).snapshotId());
      }
      case 1 -> {
        Table customers = catalog.loadTable(CUSTOMERS);
        new TableWriter(customers).upsert(List.of(row(customers.schema(), nextId++, "c" + now)));
        new TableWriter(customers)
            .deleteKeys(List.of(row(customers.schema(), random.nextInt((int) nextId) + 1, null)));
      }
      case 2 -> new TableWriter(catalog.loadTable(AUDIT)).append(List.of(row(UNKEYED, now, "a")));
      case 3 -> new TableWriter(catalog.loadTable(OUTSIDE)).append(List.of(row(UNKEYED, now, "x")));
      default -> {
        // One commit of several tables: new orders and customers, and their audit rows.
        long id = nextId++;
        List<org.apache.iceberg.catalog.TableCommit> commits = new ArrayList<>();
        commits.add(append(ORDERS, row(KEYED, id, "t" + now)));
        Table customers = catalog.loadTable(CUSTOMERS);
        commits.add(append(CUSTOMERS, row(customers.schema(), id, "t" + now)));
        commits.add(append(AUDIT, row(UNKEYED, id, "t" + now)));
        if (now > 20) {
          commits.add(append(LATE, row(UNKEYED, id, "late")));
        }
        transactions.accept(commits);
        ordersSnapshots.add(catalog.loadTable(ORDERS).currentSnapshot().snapshotId());
      }
    }
  }

  /** The table's rows as the commit's own metadata holds them, counted. */
  public static Map<Map<String, Object>, Integer> rowsAt(SkadeCatalog skade, TableCommit commit)
      throws Exception {
    if (!commit.commit().operation().leavesPointer()) {
      return new HashMap<>();
    }
    return rows(
        MetadataCache.shared()
            .table(
                commit.commit().metadataLocation(),
                skade.loadTable(commit.table()).io(),
                commit.table().toString()));
  }

  /** The table's current rows, read by Iceberg, counted by their {@link #values}. */
  public static Map<Map<String, Object>, Integer> rows(Table table) throws Exception {
    Map<Map<String, Object>, Integer> rows = new HashMap<>();
    if (table.currentSnapshot() == null) {
      return rows;
    }
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(record -> rows.merge(values(record), 1, Integer::sum));
    }
    return rows;
  }

  /**
   * A row's non-null values by column name: equal across a schema that added a column, without the
   * row position Iceberg's generic reader adds to rows of files with position deletes.
   */
  public static Map<String, Object> values(Record record) {
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
  private org.apache.iceberg.catalog.TableCommit append(TableIdentifier table, Record row) {
    Table loaded = catalog.loadTable(table);
    Transaction transaction = loaded.newTransaction();
    AppendFiles append = transaction.newFastAppend();
    new TableWriter(loaded).writeDataFiles(List.of(row)).forEach(append::appendFile);
    append.commit();
    BaseTransaction staged = (BaseTransaction) transaction;
    return org.apache.iceberg.catalog.TableCommit.create(
        table, staged.startMetadata(), staged.currentMetadata());
  }
}
