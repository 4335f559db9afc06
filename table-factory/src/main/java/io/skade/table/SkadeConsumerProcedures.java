package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.catalog.ConsumerCursor;
import io.skade.catalog.StoredConsumer;
import io.skade.refs.TableRefs;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.flink.table.annotation.ArgumentHint;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.ProcedureHint;
import org.apache.flink.table.procedure.ProcedureContext;
import org.apache.flink.table.procedures.Procedure;
import org.apache.flink.types.Row;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.util.SnapshotUtil;

/**
 * The procedures of a table's stored consumers, in a {@code skade} catalog's {@code sys} database:
 *
 * <pre>{@code
 * CALL lake.sys.reset_consumer('shop.orders', 'billing', 5012345678901);  -- after a snapshot
 * CALL lake.sys.reset_consumer(`table` => 'shop.orders', consumer => 'billing', tag => 'eod');
 * CALL lake.sys.reset_consumer(`table` => 'shop.orders', consumer => 'billing', commit_seq => 40);
 * CALL lake.sys.drop_consumer('shop.orders', 'billing');
 * }</pre>
 *
 * <p>{@code reset_consumer} moves the consumer's cursor so that a job started with {@code
 * 'scan.startup.mode' = 'from-consumer'} reads the changes after that point: after a snapshot (or a
 * tag's), or after the commits up to a {@code commit_seq}. {@code drop_consumer} removes it, so it
 * no longer holds snapshot expiry back. A running job stores its consumer at every checkpoint and
 * would undo either, so a consumer stored less than {@link #HELD_WITHIN} ago is refused, naming
 * when it was stored, unless {@code force => true}. Through a skade server, the token's rights
 * apply: a consumer belongs to the token that stored it.
 */
final class SkadeConsumerProcedures {
  static final List<String> NAMES = List.of("reset_consumer", "drop_consumer");

  /** A consumer stored this recently may belong to a running job, which would undo a change. */
  static final Duration HELD_WITHIN = Duration.ofMinutes(10);

  private static final String CURSOR_ROW =
      "ROW<consumer_id STRING, snapshot_id BIGINT, commit_seq BIGINT>";

  private SkadeConsumerProcedures() {}

  /** The procedure {@code name}, or null. */
  static Procedure named(String name, String catalogName, Map<String, String> properties) {
    return switch (name) {
      case "reset_consumer" -> new ResetConsumer(catalogName, properties);
      case "drop_consumer" -> new DropConsumer(catalogName, properties);
      default -> null;
    };
  }

  /** A procedure on one stored consumer of a table. */
  private abstract static class ConsumerProcedure extends SkadeProcedures.SysProcedure {
    ConsumerProcedure(String procedure, String catalogName, Map<String, String> properties) {
      super(procedure, catalogName, properties);
    }

    /** Consumer {@code id} of {@code table}, not held by a running job unless {@code force}. */
    StoredConsumer unheld(
        CatalogConnection connection, TableIdentifier table, String id, Boolean force) {
      StoredConsumer stored =
          connection
              .consumers()
              .consumer(id)
              .orElseThrow(
                  () ->
                      invalid(
                          "table "
                              + table
                              + " has no consumer '"
                              + id
                              + "'; its consumers: "
                              + connection.consumers().consumers(table).stream()
                                  .map(StoredConsumer::consumerId)
                                  .toList()
                              + " (see its $consumers)"));
      if (!stored.cursor().table().equals(table)) {
        throw invalid(
            "consumer '"
                + id
                + "' is a consumer of table "
                + stored.cursor().table()
                + ", not of "
                + table
                + "; name its own table");
      }
      Duration since = Duration.between(stored.lastSeen(), Instant.now());
      if (!Boolean.TRUE.equals(force) && since.compareTo(HELD_WITHIN) < 0) {
        throw invalid(
            "consumer '"
                + id
                + "' of table "
                + table
                + " was stored "
                + Math.max(0, since.toSeconds())
                + " s ago, so a running job may hold it: it stores its consumer at every checkpoint"
                + " and would undo this call. Stop the job first; once the consumer has not been"
                + " stored for "
                + HELD_WITHIN.toMinutes()
                + " min, or with force => true, the call goes through. Nothing was changed");
      }
      return stored;
    }
  }

  /** {@code ROW(consumer_id, snapshot_id, commit_seq)} of {@code cursor}. */
  private static Row[] cursorRow(String consumer, ConsumerCursor cursor) {
    long snapshot = cursor.snapshotId();
    return new Row[] {
      Row.of(consumer, snapshot == ConsumerCursor.NO_SNAPSHOT ? null : snapshot, cursor.commitSeq())
    };
  }

  /**
   * {@code reset_consumer(table, consumer, snapshot_id | commit_seq | tag[, force])}: exactly one
   * point; the consumer then stands after it.
   */
  public static final class ResetConsumer extends ConsumerProcedure {
    ResetConsumer(String catalogName, Map<String, String> properties) {
      super("reset_consumer", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "consumer", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "snapshot_id", type = @DataTypeHint("BIGINT"), isOptional = true),
          @ArgumentHint(name = "commit_seq", type = @DataTypeHint("BIGINT"), isOptional = true),
          @ArgumentHint(name = "tag", type = @DataTypeHint("STRING"), isOptional = true),
          @ArgumentHint(name = "force", type = @DataTypeHint("BOOLEAN"), isOptional = true)
        },
        output = @DataTypeHint(CURSOR_ROW))
    public Row[] call(
        ProcedureContext context,
        String table,
        String consumer,
        Long snapshotId,
        Long commitSeq,
        String tag,
        Boolean force) {
      int points =
          (snapshotId != null ? 1 : 0) + (commitSeq != null ? 1 : 0) + (tag != null ? 1 : 0);
      if (points != 1) {
        throw invalid(
            "give exactly one point to reset consumer '"
                + consumer
                + "' to: snapshot_id, commit_seq or tag (got "
                + points
                + ")");
      }
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        Table loaded = table(table, connection);
        TableIdentifier id = TableIdentifier.parse(table);
        unheld(connection, id, consumer, force);
        ConsumerCursor cursor =
            commitSeq != null
                ? afterCommit(connection, loaded, id, commitSeq)
                : afterSnapshot(
                    connection, loaded, id, tag != null ? tagged(loaded, tag) : snapshotId);
        return cursorRow(consumer, connection.consumers().storeConsumer(consumer, cursor).cursor());
      }
    }

    /** The cursor after snapshot {@code snapshotId}, which must be on the current history. */
    private ConsumerCursor afterSnapshot(
        CatalogConnection connection, Table table, TableIdentifier id, long snapshotId) {
      Snapshot current = table.currentSnapshot();
      if (table.snapshot(snapshotId) == null
          || current == null
          || !SnapshotUtil.isAncestorOf(table, current.snapshotId(), snapshotId)) {
        throw invalid(
            "snapshot "
                + snapshotId
                + " is not in the current history of table "
                + id
                + " (expired, rolled back, on another branch, or never one of its snapshots), so no"
                + " changelog leads on from it; choose one of its $history snapshots. Nothing was"
                + " changed");
      }
      // Its commit, where the log replays from; one the log does not know (a registered history)
      // replays the whole log, whose commits up to it the cursor's snapshot skips.
      long seq = connection.commitOf(id, snapshotId).map(CommitEvent::commitSeq).orElse(0L);
      return new ConsumerCursor(id, table.uuid().toString(), snapshotId, seq);
    }

    /** The cursor after the table's commits up to {@code seq}: at its newest snapshot by then. */
    private ConsumerCursor afterCommit(
        CatalogConnection connection, Table table, TableIdentifier id, long seq) {
      long now = connection.feed().commitSeq();
      if (seq < 0 || seq > now) {
        throw invalid(
            "commit_seq "
                + seq
                + " is outside the catalog's log, which is at "
                + now
                + "; give one from 0 to "
                + now
                + ". Nothing was changed");
      }
      long at = ConsumerCursor.NO_SNAPSHOT;
      Snapshot current = table.currentSnapshot();
      if (current != null) {
        for (Snapshot s : SnapshotUtil.ancestorsOf(current.snapshotId(), table::snapshot)) {
          // A snapshot the log does not know (a registered history) came before every commit.
          long committed =
              connection.commitOf(id, s.snapshotId()).map(CommitEvent::commitSeq).orElse(0L);
          if (committed <= seq) {
            at = s.snapshotId();
            break;
          }
        }
      }
      return new ConsumerCursor(id, table.uuid().toString(), at, seq);
    }

    private long tagged(Table table, String tag) {
      SnapshotRef ref = table.refs().get(tag);
      if (ref == null || !ref.isTag()) {
        throw invalid(
            "table "
                + table.name()
                + " has no tag '"
                + tag
                + "'; its tags: "
                + TableRefs.names(table, true)
                + ". Nothing was changed");
      }
      return ref.snapshotId();
    }
  }

  /** {@code drop_consumer(table, consumer[, force])}: it no longer holds expiry back. */
  public static final class DropConsumer extends ConsumerProcedure {
    DropConsumer(String catalogName, Map<String, String> properties) {
      super("drop_consumer", catalogName, properties);
    }

    @ProcedureHint(
        argument = {
          @ArgumentHint(name = "table", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "consumer", type = @DataTypeHint("STRING")),
          @ArgumentHint(name = "force", type = @DataTypeHint("BOOLEAN"), isOptional = true)
        },
        output = @DataTypeHint(CURSOR_ROW))
    public Row[] call(ProcedureContext context, String table, String consumer, Boolean force) {
      try (CatalogConnection connection = CatalogConnection.forWriting(properties)) {
        table(table, connection); // it exists
        StoredConsumer stored = unheld(connection, TableIdentifier.parse(table), consumer, force);
        connection.consumers().dropConsumer(consumer);
        return cursorRow(consumer, stored.cursor());
      }
    }
  }
}
