package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.IdRows;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.sink.FlinkSink;
import org.apache.iceberg.hadoop.HadoopTables;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Upserts written by Iceberg's own Flink sink (upsert mode, equality deletes plus position deletes
 * for keys repeated within one commit), run in a local Flink MiniCluster, read back as exact
 * changes.
 */
class IcebergFlinkSinkUpsertTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;

  @TempDir Path warehouse;

  @Test
  void upsertsWrittenByIcebergsFlinkSinkReadAsExactChanges() throws Exception {
    String location = warehouse.resolve("customers").toString();
    HadoopTables tables = new HadoopTables(new Configuration());
    tables.create(SCHEMA, PartitionSpec.unpartitioned(), Map.of("format-version", "2"), location);

    runUpsertJob(
        location,
        row(RowKind.INSERT, 1, "a"),
        row(RowKind.INSERT, 2, "b"),
        row(RowKind.INSERT, 3, "c"));
    long first = tables.load(location).currentSnapshot().snapshotId();
    runUpsertJob(
        location,
        row(RowKind.UPDATE_AFTER, 2, "b2"),
        row(RowKind.DELETE, 3, "c"),
        row(RowKind.INSERT, 4, "d"),
        // The same key twice in one commit: Iceberg deletes the first by position.
        row(RowKind.INSERT, 5, "e"),
        row(RowKind.INSERT, 5, "e2"));
    Table table = tables.load(location);
    long second = table.currentSnapshot().snapshotId();

    assertThat(render(new ChangelogReader(table, ChangelogOptions.defaults()).read(null, first)))
        .containsExactlyInAnyOrder("+I 1 a", "+I 2 b", "+I 3 c");
    List<String> changes =
        render(new ChangelogReader(table, ChangelogOptions.defaults()).read(first, second));
    assertThat(changes)
        .containsExactlyInAnyOrder("-U 2 b", "+U 2 b2", "-D 3 c", "+I 4 d", "+I 5 e2");
    assertThat(changes.indexOf("+U 2 b2"))
        .as("the update pair is adjacent")
        .isEqualTo(changes.indexOf("-U 2 b") + 1);
  }

  private static void runUpsertJob(String location, RowData... rows) throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    DataStream<RowData> stream =
        env.fromData(List.of(rows), InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
    FlinkSink.forRowData(stream)
        .tableLoader(TableLoader.fromHadoopTable(location))
        .upsert(true)
        .equalityFieldColumns(List.of("id"))
        .append();
    env.execute("iceberg upsert into " + location);
  }

  private static RowData row(RowKind kind, long id, String name) {
    return GenericRowData.ofKind(kind, id, StringData.fromString(name));
  }

  private static List<String> render(List<ChangeRow> changes) {
    List<String> out = new ArrayList<>();
    changes.forEach(
        change ->
            out.add(
                change.type().symbol()
                    + " "
                    + change.row().getField("id")
                    + " "
                    + change.row().getField("name")));
    return out;
  }
}
