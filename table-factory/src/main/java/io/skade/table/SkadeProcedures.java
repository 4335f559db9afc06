package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.maintenance.CatalogLockFactory;
import io.skade.maintenance.LiveDeletionVectors;
import io.skade.sink.OrphanFileRemoval;
import io.skade.sink.SinkMaintenance;
import io.skade.sink.TableCompaction;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.apache.flink.types.Row;
import org.apache.iceberg.ExpireSnapshots;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NoSuchTableException;

/**
 * The procedures of a {@code skade} catalog's {@code sys} database:
 *
 * <pre>{@code
 * CALL lake.sys.compact('shop.orders');
 * CALL lake.sys.expire_snapshots('shop.orders', TIMESTAMP '2026-12-01 00:00:00');
 * CALL lake.sys.expire_snapshots('shop.orders', TIMESTAMP '2026-12-01 00:00:00', 10);
 * CALL lake.sys.remove_orphan_files('shop.orders');
 * CALL lake.sys.remove_orphan_files('shop.orders', TIMESTAMP '2026-12-01 00:00:00', true);
 * }</pre>
 *
 * <p>and those of a table's tags and branches ({@link SkadeRefProcedures}) and of its stored
 * consumers ({@link SkadeConsumerProcedures}).
 *
 * <p>{@code compact} runs Iceberg's rewrite in a bounded Flink job ({@link TableCompaction}): a
 * {@code replace} snapshot with the deletes folded in. {@code expire_snapshots} expires, through
 * the catalog, the snapshots older than the time (UTC) but the newest {@code retain_last} (1 by
 * default); the catalog refuses it, naming the consumer, while a live consumer still needs one of
 * them. {@code remove_orphan_files} deletes, in a bounded Flink job of Iceberg's orphan-file
 * operators ({@link OrphanFileRemoval}), the files under the table's location older than the time
 * (3 days ago by default, at least an hour ago) that neither a live snapshot nor the catalog's
 * commit log references; with {@code dry_run} it only lists them. Each takes the table's
 * maintenance lock in the catalog, so it is refused, naming the holder, while a job's maintenance
 * or another call works on the table.
 */
public final class SkadeProcedures {
  /** The database the procedures are in: {@code CALL <catalog>.sys.<procedure>(...)}. */
  static final String DATABASE = "sys";

  static final List<String> NAMES =
      Stream.of(
              List.of("compact", "expire_snapshots", "remove_orphan_files"),
              SkadeRefProcedures.NAMES,
              SkadeConsumerProcedures.NAMES)
          .flatMap(List::stream)
          .toList();

  private SkadeProcedures() {}

  /** The procedure {@code name}, or null. */
  static Procedure named(String name, String catalogName, Map<String, String> properties) {
    return switch (name) {
      case "compact" -> new CompactProcedure(catalogName, properties);
      case "expire_snapshots" -> new ExpireSnapshotsProcedure(catalogName, properties);
      case "remove_orphan_files" -> new RemoveOrphanFilesProcedure(catalogName, properties);
      default -> {
        Procedure ref = SkadeRefProcedures.named(name, catalogName, properties);
        yield ref != null ? ref : SkadeConsumerProcedures.named(name, catalogName, properties);
      }
    };
  }

  /** A procedure of one catalog, named {@code procedure} in {@code CALL}. */
  abstract static class SysProcedure implements Procedure {
    final String catalogName;
    final Map<String, String> properties;
    private final String procedure;

    SysProcedure(String procedure, String catalogName, Map<String, String> properties) {
      this.procedure = procedure;
      this.catalogName = catalogName;
      this.properties = properties;
    }

    /** An error of the call: {@code CALL lake.sys.compact: <what>}. */
    ValidationException invalid(String what) {
      return new ValidationException("CALL " + catalogName + ".sys." + procedure + ": " + what);
    }

    /** The table the {@code table} argument names, loaded; a clear error otherwise. */
    Table table(String argument, CatalogConnection connection) {
      if (argument == null || argument.isBlank() || !argument.contains(".")) {
        throw invalid(
            "argument 'table' = '"
                + argument
                + "' must name a table as"
                + " 'database.table', e.g. 'shop.orders'");
      }
      TableIdentifier id = TableIdentifier.parse(argument);
      try {
        return connection.catalog().loadTable(id);
      } catch (NoSuchTableException missing) {
        throw invalid(
            "argument 'table' = '"
                + argument
                + "' is not a table of catalog "
                + catalogName
                + "; its tables in '"
                + id.namespace()
                + "': "
                + (connection.namespaces().namespaceExists(id.namespace())
                    ? connection.catalog().listTables(id.namespace()).stream()
                        .map(TableIdentifier::name)
                        .sorted()
                        .toList()
                    : "none (no such database)"));
      }
    }
  }

  /** {@code compact(table)}: rewrites small files and files with deletes, deletes folded. */
  public static final class CompactProcedure extends SysProcedure {
    CompactProcedure(String catalogName, Map<String, String> properties) {
      super("compact", catalogName, properties);
    }

    @ProcedureHint(
        argument = {@ArgumentHint(name = "table", type = @DataTypeHint("STRING"))},
        output =
            @DataTypeHint(
                "ROW<snapshot_id BIGINT, rewritten_data_files INT,"
                    + " added_data_files INT, removed_delete_files INT>"))
    public Row[] call(ProcedureContext context, String table) throws Exception {
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        table(table, connection); // it exists
      }
      TableIdentifier id = TableIdentifier.parse(table);
      TableCompaction.Result result =
          TableCompaction.run(context.getExecutionEnvironment(), properties, id);
      return new Row[] {
        Row.of(
            result.snapshotId(),
            result.rewrittenDataFiles(),
            result.addedDataFiles(),
            result.removedDeleteFiles())
      };
    }
  }

  /** {@code expire_snapshots(table, older_than[, retain_last])}, through the expiry guard. */
  public static final class ExpireSnapshotsProcedure extends SysProcedure {
    ExpireSnapshotsProcedure(String catalogName, Map<String, String> properties) {
      super("expire_snapshots", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "older_than", type = @DataTypeHint("TIMESTAMP(3)")),
          @ArgumentHint(name = "retain_last", type = @DataTypeHint("INT"), isOptional = true)
        },
        output = @DataTypeHint("ROW<expired_snapshots INT, kept_snapshots INT>"))
    public Row[] call(
        ProcedureContext context, String table, LocalDateTime olderThan, Integer retainLast)
        throws Exception {
      if (olderThan == null) {
        throw invalid(
            "argument 'older_than' is missing; give a time, e.g. TIMESTAMP"
                + " '2026-12-01 00:00:00' (UTC)");
      }
      if (retainLast != null && retainLast < 1) {
        throw invalid(
            "argument 'retain_last' = "
                + retainLast
                + " must be 1 or more (the"
                + " current snapshot is always kept)");
      }
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        Table loaded = table(table, connection);
        return CatalogLockFactory.whileHolding(
            properties,
            TableIdentifier.parse(table),
            "an expiry call",
            () -> {
              int before = size(loaded.snapshots());
              ExpireSnapshots expiry =
                  loaded
                      .expireSnapshots()
                      .expireOlderThan(olderThan.toInstant(ZoneOffset.UTC).toEpochMilli());
              if (retainLast != null) {
                expiry.retainLast(retainLast);
              }
              // Never a Puffin file a live snapshot's deletion vectors are in.
              Consumer<String> delete =
                  loaded instanceof HasTableOperations ops
                      ? LiveDeletionVectors.keeping(ops.operations(), null)
                      : null;
              if (delete != null) {
                expiry.deleteWith(delete);
              }
              expiry.commit();
              loaded.refresh();
              int after = size(loaded.snapshots());
              return new Row[] {Row.of(before - after, after)};
            });
      }
    }

    private static int size(Iterable<Snapshot> snapshots) {
      int count = 0;
      for (Snapshot ignored : snapshots) {
        count++;
      }
      return count;
    }
  }

  /** {@code remove_orphan_files(table[, older_than[, dry_run]])}: Iceberg's orphan cleanup. */
  public static final class RemoveOrphanFilesProcedure extends SysProcedure {
    private static final Duration DEFAULT_AGE = Duration.ofDays(3);

    RemoveOrphanFilesProcedure(String catalogName, Map<String, String> properties) {
      super("remove_orphan_files", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(
              name = "older_than",
              type = @DataTypeHint("TIMESTAMP(3)"),
              isOptional = true),
          @ArgumentHint(name = "dry_run", type = @DataTypeHint("BOOLEAN"), isOptional = true)
        },
        output = @DataTypeHint("ROW<orphan_file_location STRING>"))
    public Row[] call(
        ProcedureContext context, String table, LocalDateTime olderThan, Boolean dryRun)
        throws Exception {
      Instant now = Instant.now();
      Duration age =
          olderThan == null
              ? DEFAULT_AGE
              : Duration.between(olderThan.toInstant(ZoneOffset.UTC), now);
      if (age.compareTo(SinkMaintenance.MIN_ORPHAN_AGE) < 0) {
        throw invalid(
            "argument 'older_than' = "
                + olderThan
                + " must be at least "
                + SinkMaintenance.MIN_ORPHAN_AGE.toMinutes()
                + " min ago (UTC): a younger file may"
                + " belong to a commit still in flight; give an earlier time");
      }
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        table(table, connection); // it exists
      }
      OrphanFileRemoval.Result result =
          OrphanFileRemoval.run(
              context.getExecutionEnvironment(),
              properties,
              TableIdentifier.parse(table),
              age,
              Boolean.TRUE.equals(dryRun));
      return result.orphans().stream().map(Row::of).toArray(Row[]::new);
    }
  }
}
