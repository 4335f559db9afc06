package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.refs.TableRefs;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.apache.flink.types.Row;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The procedures of a table's tags and branches, in a {@code skade} catalog's {@code sys} database:
 *
 * <pre>{@code
 * CALL lake.sys.create_tag('shop.orders', 'v1');                 -- at the current snapshot
 * CALL lake.sys.create_tag('shop.orders', 'v0', 5012345678901);  -- at a snapshot
 * CALL lake.sys.delete_tag('shop.orders', 'v0');
 * CALL lake.sys.create_branch('shop.orders', 'audit');
 * CALL lake.sys.delete_branch('shop.orders', 'audit');
 * CALL lake.sys.fast_forward('shop.orders', 'main', 'audit');
 * CALL lake.sys.rollback_to('shop.orders', 5012345678901);
 * CALL lake.sys.rollback_to('shop.orders', TIMESTAMP '2026-12-01 00:00:00');  -- UTC
 * CALL lake.sys.cherrypick('shop.orders', 5012345678902);
 * }</pre>
 *
 * <p>Each is one commit of the table's metadata through the catalog's commit path ({@link
 * TableRefs}): it takes a {@code commit_seq}, which it returns, and reaches the commit feed. Bad
 * arguments (an unknown tag, branch or snapshot, a name that exists, a rollback to a snapshot not
 * in the current history) fail before anything changes.
 */
final class SkadeRefProcedures {
  static final List<String> NAMES =
      List.of(
          "create_tag",
          "delete_tag",
          "create_branch",
          "delete_branch",
          "fast_forward",
          "rollback_to",
          "cherrypick");

  private static final String REF_ROW = "ROW<ref STRING, snapshot_id BIGINT, commit_seq BIGINT>";
  private static final String MOVE_ROW =
      "ROW<previous_snapshot_id BIGINT, current_snapshot_id BIGINT, commit_seq BIGINT>";

  private SkadeRefProcedures() {}

  /** The procedure {@code name}, or null. */
  static Procedure named(String name, String catalogName, Map<String, String> properties) {
    return switch (name) {
      case "create_tag" -> new CreateTag(catalogName, properties);
      case "delete_tag" -> new DeleteTag(catalogName, properties);
      case "create_branch" -> new CreateBranch(catalogName, properties);
      case "delete_branch" -> new DeleteBranch(catalogName, properties);
      case "fast_forward" -> new FastForward(catalogName, properties);
      case "rollback_to" -> new RollbackTo(catalogName, properties);
      case "cherrypick" -> new Cherrypick(catalogName, properties);
      default -> null;
    };
  }

  /** A procedure making one change to a table's refs. */
  private abstract static class RefProcedure extends SkadeProcedures.SysProcedure {
    RefProcedure(String procedure, String catalogName, Map<String, String> properties) {
      super(procedure, catalogName, properties);
    }

    /**
     * {@code change} made to {@code table}'s refs, as {@code ROW(ref, snapshot, commit_seq)}; or,
     * with {@code ref} null (a move of {@code main}), {@code ROW(previous current snapshot, current
     * snapshot, commit_seq)}.
     */
    Row[] change(String table, String ref, ToLongFunction<TableRefs> change) {
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        Table loaded = table(table, connection);
        Snapshot previous = loaded.currentSnapshot();
        String base = metadataLocation(loaded);
        long after = connection.feed().commitSeq();
        long snapshot;
        try {
          snapshot = change.applyAsLong(new TableRefs(loaded, table));
        } catch (IllegalArgumentException refused) {
          throw invalid(refused.getMessage());
        }
        Long seq = commitSeq(connection, TableIdentifier.parse(table), base, after);
        return new Row[] {
          ref != null
              ? Row.of(ref, snapshot, seq)
              : Row.of(previous == null ? null : previous.snapshotId(), snapshot, seq)
        };
      }
    }
  }

  /**
   * The {@code commit_seq} of the commit this procedure made: the table's first commit after {@code
   * after} onto the metadata it loaded ({@code base}); null if its commit was retried onto another
   * writer's, which makes it unknowable here.
   */
  private static Long commitSeq(
      CatalogConnection connection, TableIdentifier table, String base, long after) {
    String key = connection.feed().commitTableKey(table);
    for (CommitEvent commit : connection.feed().commitsSince(after)) {
      if (commit.tableKey().equals(key) && base.equals(commit.previousMetadataLocation())) {
        return commit.commitSeq();
      }
    }
    return null;
  }

  private static String metadataLocation(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }

  /** {@code create_tag(table, tag[, snapshot_id])}. */
  public static final class CreateTag extends RefProcedure {
    CreateTag(String catalogName, Map<String, String> properties) {
      super("create_tag", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "tag", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "snapshot_id", type = @DataTypeHint("BIGINT"), isOptional = true)
        },
        output = @DataTypeHint(REF_ROW))
    public Row[] call(ProcedureContext context, String table, String tag, Long snapshotId) {
      return change(table, tag, refs -> refs.createTag(tag, snapshotId));
    }
  }

  /** {@code delete_tag(table, tag)}. */
  public static final class DeleteTag extends RefProcedure {
    DeleteTag(String catalogName, Map<String, String> properties) {
      super("delete_tag", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "tag", type = @DataTypeHint("STRING"))
        },
        output = @DataTypeHint(REF_ROW))
    public Row[] call(ProcedureContext context, String table, String tag) {
      return change(table, tag, refs -> refs.deleteTag(tag));
    }
  }

  /** {@code create_branch(table, branch[, snapshot_id])}. */
  public static final class CreateBranch extends RefProcedure {
    CreateBranch(String catalogName, Map<String, String> properties) {
      super("create_branch", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "branch", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "snapshot_id", type = @DataTypeHint("BIGINT"), isOptional = true)
        },
        output = @DataTypeHint(REF_ROW))
    public Row[] call(ProcedureContext context, String table, String branch, Long snapshotId) {
      return change(table, branch, refs -> refs.createBranch(branch, snapshotId));
    }
  }

  /** {@code delete_branch(table, branch)}. */
  public static final class DeleteBranch extends RefProcedure {
    DeleteBranch(String catalogName, Map<String, String> properties) {
      super("delete_branch", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "branch", type = @DataTypeHint("STRING"))
        },
        output = @DataTypeHint(REF_ROW))
    public Row[] call(ProcedureContext context, String table, String branch) {
      return change(table, branch, refs -> refs.deleteBranch(branch));
    }
  }

  /** {@code fast_forward(table, branch, to)}: {@code branch} moves to the head of {@code to}. */
  public static final class FastForward extends RefProcedure {
    FastForward(String catalogName, Map<String, String> properties) {
      super("fast_forward", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "branch", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "to", type = @DataTypeHint("STRING"))
        },
        output = @DataTypeHint(REF_ROW))
    public Row[] call(ProcedureContext context, String table, String branch, String to) {
      return change(table, branch, refs -> refs.fastForward(branch, to));
    }
  }

  /** {@code rollback_to(table, snapshot_id)} or {@code rollback_to(table, timestamp)} (UTC). */
  public static final class RollbackTo extends RefProcedure {
    RollbackTo(String catalogName, Map<String, String> properties) {
      super("rollback_to", catalogName, properties);
    }

    @ProcedureHint(
        input = {@DataTypeHint("STRING"), @DataTypeHint("BIGINT")},
        output = @DataTypeHint(MOVE_ROW))
    public Row[] call(ProcedureContext context, String table, Long snapshotId) {
      if (snapshotId == null) {
        throw invalid("the snapshot id is missing; give one of the table's snapshots");
      }
      return change(table, null, refs -> refs.rollbackTo(snapshotId));
    }

    @ProcedureHint(
        input = {@DataTypeHint("STRING"), @DataTypeHint("TIMESTAMP(3)")},
        output = @DataTypeHint(MOVE_ROW))
    public Row[] call(ProcedureContext context, String table, LocalDateTime time) {
      if (time == null) {
        throw invalid("the time is missing; give one, e.g. TIMESTAMP '2026-12-01 00:00:00' (UTC)");
      }
      long millis = time.toInstant(ZoneOffset.UTC).toEpochMilli();
      return change(table, null, refs -> refs.rollbackToTime(millis));
    }
  }

  /** {@code cherrypick(table, snapshot_id)}: that snapshot's changes applied onto main. */
  public static final class Cherrypick extends RefProcedure {
    Cherrypick(String catalogName, Map<String, String> properties) {
      super("cherrypick", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "snapshot_id", type = @DataTypeHint("BIGINT"))
        },
        output = @DataTypeHint(MOVE_ROW))
    public Row[] call(ProcedureContext context, String table, Long snapshotId) {
      if (snapshotId == null) {
        throw invalid("the snapshot id is missing; give the snapshot whose changes to apply");
      }
      return change(table, null, refs -> refs.cherrypick(snapshotId));
    }
  }
}
