package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.testing.ParquetFiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The race of apache/iceberg#14425 through the server: a Flink committer's commit of checkpoint 1
 * is still in flight when the committer restarts; the restarted committer finds no checkpoint of
 * its job on the table, the first request lands, and the restarted one commits the same files for
 * the same checkpoint — on the table as the first left it, after Iceberg's client retried the lost
 * compare-and-swap. The server refuses it, so the rows are in the table once.
 */
class FlinkCheckpointOverRestTest {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  @TempDir Path root;

  @Test
  void aCheckpointCommittedTwiceByARestartedCommitterLandsOnce() throws Exception {
    try (ServerFixture fixture = new ServerFixture(root)) {
      RESTCatalog first = fixture.rest();
      first.createNamespace(Namespace.of("shop"));
      // The refusal is final, but Iceberg retries a refused commit in the server's handler and
      // again in the client, as often as the table says (30 by the catalog's defaults): over a
      // minute of backoff before the same refusal. One client retry shows it as well.
      Table table =
          first.createTable(
              ORDERS,
              SCHEMA,
              PartitionSpec.unpartitioned(),
              Map.of(TableProperties.COMMIT_NUM_RETRIES, "1"));
      DataFile checkpointOne = ParquetFiles.write(table, List.of(row(1), row(2)));

      Table restarted = fixture.rest().loadTable(ORDERS); // it sees no checkpoint of the job
      assertThat(restarted.currentSnapshot()).isNull();
      stamped(table.newAppend().appendFile(checkpointOne)).commit(); // the first request lands

      assertThatThrownBy(() -> stamped(restarted.newAppend().appendFile(checkpointOne)).commit())
          .isInstanceOf(CommitFailedException.class)
          .hasMessageContaining("already committed checkpoint 1 of Flink job job-1");
      stamped(table.newAppend().appendFile(ParquetFiles.write(table, List.of(row(3)))))
          .set("flink.max-committed-checkpoint-id", "2")
          .commit(); // the next checkpoint

      Table read = fixture.rest().loadTable(ORDERS);
      assertThat(read.snapshots()).hasSize(2);
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> rows = IcebergGenerics.read(read).build()) {
        rows.forEach(r -> ids.add((Long) r.getField("id")));
      }
      assertThat(ids).containsExactlyInAnyOrder(1L, 2L, 3L);
    }
  }

  private static AppendFiles stamped(AppendFiles append) {
    return append
        .set("flink.job-id", "job-1")
        .set("flink.operator-id", "committer")
        .set("flink.max-committed-checkpoint-id", "1");
  }

  private static Record row(long id) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    return record;
  }
}
