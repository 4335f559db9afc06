package io.skade.catalog;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;

/**
 * Child process of {@link CrashRecoveryTest}: owns the catalog at {@code args[0]} and appends to
 * {@code db.t0} and {@code db.t1} from two threads until it is killed.
 *
 * <p>Protocol on stdout, one line each, flushed: {@code READY} once the tables exist, then {@code
 * ACK <commitSeq> <tableKey> <snapshotId>} after each append returned, i.e. after the catalog
 * reported the commit durable. The test relies on every ACKed commit surviving a SIGKILL.
 */
public final class CommitLoopChild {
  static final Namespace DB = Namespace.of("db");
  static final List<TableIdentifier> TABLES =
      List.of(TableIdentifier.of(DB, "t0"), TableIdentifier.of(DB, "t1"));
  static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  private CommitLoopChild() {}

  public static void main(String[] args) {
    String warehouse = args[0];
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("child", Map.of("warehouse", warehouse));
    // Previous rounds were killed after READY, so these exist from round two on.
    if (!catalog.namespaceExists(DB)) {
      catalog.createNamespace(DB);
    }
    for (TableIdentifier id : TABLES) {
      if (!catalog.tableExists(id)) {
        catalog.buildTable(id, SCHEMA).create();
      }
    }
    PrintStream out = System.out;
    synchronized (out) {
      out.println("READY");
      out.flush();
    }
    // One writer per table: no CAS conflicts between them, yet their commits meet in the
    // committer's queue and share groups (one fsync for both).
    for (TableIdentifier id : TABLES) {
      Thread writer = new Thread(() -> appendForever(catalog, id, warehouse, out), "writer-" + id);
      writer.start();
    }
    // main returns; the non-daemon writers keep the JVM alive until the test kills it.
  }

  private static void appendForever(
      SkadeCatalog catalog, TableIdentifier id, String warehouse, PrintStream out) {
    try {
      Table table = catalog.loadTable(id);
      String tableKey = catalog.commitTableKey(id);
      while (true) {
        DataFile file =
            DataFiles.builder(PartitionSpec.unpartitioned())
                .withPath(warehouse + "/fake-" + UUID.randomUUID() + ".parquet")
                .withFileSizeInBytes(10)
                .withRecordCount(1)
                .withFormat(FileFormat.PARQUET)
                .build();
        table.newFastAppend().appendFile(file).commit();
        // This thread is the table's only writer, so the current snapshot is the one just added.
        long snapshotId = table.currentSnapshot().snapshotId();
        CommitEvent commit =
            catalog
                .commitOf(id, snapshotId)
                .orElseThrow(
                    () ->
                        new IllegalStateException(
                            "no commit recorded for snapshot " + snapshotId + " of " + id));
        synchronized (out) {
          out.println("ACK " + commit.commitSeq() + " " + tableKey + " " + snapshotId);
          out.flush();
        }
      }
    } catch (Throwable t) {
      // A writer that dies must not leave a half-alive child the test would mistake for healthy.
      t.printStackTrace();
      System.err.flush();
      Runtime.getRuntime().halt(3);
    }
  }
}
