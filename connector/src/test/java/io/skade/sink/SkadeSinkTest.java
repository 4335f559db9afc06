package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.lineage.LineageGraph;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link SkadeSink} in a MiniCluster: rows written through Iceberg's operators are committed
 * through the skade catalog, one commit per bounded job, upserts and deletes applied by key; the
 * job's lineage graph names the table in its warehouse; bad settings are named.
 */
class SkadeSinkTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier CUSTOMERS = TableIdentifier.of("db", "customers");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void upsertsAndDeletesByKeyAreCommittedThroughTheCatalogOncePerJob() throws Exception {
    Table table = catalog.get().createTable(CUSTOMERS, SCHEMA);
    String first =
        run(
            upserting(),
            row(RowKind.INSERT, 1, "ada"),
            row(RowKind.INSERT, 2, "bob"),
            row(RowKind.INSERT, 3, "cy"));
    String second =
        run(
            upserting(),
            row(RowKind.UPDATE_AFTER, 2, "bo"),
            row(RowKind.DELETE, 3, null),
            row(RowKind.INSERT, 4, "dee"));

    table.refresh();
    assertThat(rows(table))
        .containsExactly(Map.entry(1L, "ada"), Map.entry(2L, "bo"), Map.entry(4L, "dee"));
    List<Snapshot> snapshots = new ArrayList<>();
    table.snapshots().forEach(snapshots::add);
    assertThat(snapshots)
        .extracting(s -> s.summary().get("flink.job-id"))
        .containsExactly(first, second);
    for (Snapshot snapshot : snapshots) {
      // Each commit went through the catalog's one commit path: it is in its commit log.
      assertThat(
              catalog
                  .get()
                  .commitOf(CUSTOMERS, snapshot.snapshotId())
                  .map(CommitEvent::snapshotId)
                  .orElseThrow())
          .hasValue(snapshot.snapshotId());
    }
  }

  @Test
  void withoutAKeyRowsAreInsertedAndTheActorIsRecorded() throws Exception {
    // A table without identifier fields: Iceberg's writers would use those as the key.
    Table table = catalog.get().createTable(CUSTOMERS, new Schema(SCHEMA.columns()));
    run(
        SkadeSink.builder()
            .catalogProperties(catalog.properties())
            .table("db.customers")
            .lineageActor("nightly import")
            .build(),
        row(RowKind.INSERT, 1, "ada"),
        row(RowKind.INSERT, 1, "ada again"));
    table.refresh();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      assertThat(records).hasSize(2); // no key: both rows are kept
    }
    assertThat(table.currentSnapshot().summary())
        .containsEntry("skade.lineage.actor", "nightly import");
  }

  @Test
  void flinksLineageGraphNamesTheWrittenTableInItsWarehouse() {
    catalog.get().createTable(CUSTOMERS, SCHEMA);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    input(env, row(RowKind.INSERT, 1, "ada")).sinkTo(upserting());
    LineageGraph graph = env.getStreamGraph(false).getLineageGraph();

    assertThat(graph.sinks()).hasSize(1);
    assertThat(graph.sinks().get(0).datasets())
        .extracting(LineageDataset::namespace, LineageDataset::name)
        .containsExactly(
            tuple(SkadeCatalog.warehouse("test", catalog.properties()), "db.customers"));
  }

  @Test
  void theSinksUidAndSuffixNameItsOperatorsForStatefulUpgrades() throws Exception {
    catalog.get().createTable(CUSTOMERS, SCHEMA);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    input(env, row(RowKind.INSERT, 1, "ada"))
        .sinkTo(
            SkadeSink.builder()
                .catalogProperties(catalog.properties())
                .table("db.customers")
                .upsertKey(List.of("id"))
                .uidSuffix("customers")
                .build())
        .uid("customers-sink");
    List<String> uids =
        env.getStreamGraph(false).getStreamNodes().stream()
            .map(node -> node.getTransformationUID())
            .filter(uid -> uid != null)
            .toList();
    assertThat(uids)
        .containsExactlyInAnyOrder(
            "customers-sink",
            "Sink Committer: customers-sink",
            "customers-sink: Sink pre-commit aggregator: customers");

    env.execute("write with uids");
    Table table = catalog.get().loadTable(CUSTOMERS);
    assertThat(rows(table)).containsExactly(Map.entry(1L, "ada"));
  }

  @Test
  void badSettingsAreNamed() {
    catalog.get().createTable(CUSTOMERS, SCHEMA);
    assertThatThrownBy(
            () ->
                SkadeSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("db.nope")
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("db.nope")
        .hasMessageContaining("does not exist");
    assertThatThrownBy(
            () ->
                SkadeSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("db.customers")
                    .upsertKey(List.of("idd"))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[idd]")
        .hasMessageContaining("[id, name]");
    assertThatThrownBy(
            () ->
                SkadeSink.builder()
                    .catalogProperties(catalog.properties())
                    .table("db.customers")
                    .upsertKey(List.of("id"))
                    .overwrite(true)
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("overwrite");
    assertThatThrownBy(() -> SkadeSink.builder().table("db.customers").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'warehouse'");
  }

  @Test
  void anOrphanAgeACommitInFlightCouldReachIsRefusedWhenTheJobIsBuilt() {
    catalog.get().createTable(CUSTOMERS, SCHEMA);
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.enableCheckpointing(Duration.ofMinutes(50).toMillis());
    env.getCheckpointConfig().setCheckpointTimeout(Duration.ofMinutes(20).toMillis());
    SkadeSink sink =
        SkadeSink.builder()
            .catalogProperties(catalog.properties())
            .table("db.customers")
            .upsertKey(List.of("id"))
            .maintenance(SinkMaintenance.defaults().withOrphanMinAge(Duration.ofHours(1)))
            .build();

    input(env, row(RowKind.INSERT, 1, "ada")).sinkTo(sink);
    assertThatThrownBy(() -> env.getStreamGraph(false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maintenance.orphan.min-age = PT1H")
        .hasMessageContaining("checkpoint interval plus the checkpoint timeout (PT1H10M)");
  }

  private SkadeSink upserting() {
    return SkadeSink.builder()
        .catalogProperties(catalog.properties())
        .table("db.customers")
        .upsertKey(List.of("id"))
        .build();
  }

  /** Runs a bounded job writing {@code rows}; returns its job id. */
  private static String run(SkadeSink sink, RowData... rows) throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    input(env, rows).sinkTo(sink);
    return env.execute("write " + sink.table()).getJobID().toHexString();
  }

  private static DataStream<RowData> input(StreamExecutionEnvironment env, RowData... rows) {
    return env.fromData(List.of(rows), InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
  }

  private static RowData row(RowKind kind, long id, String name) {
    return GenericRowData.ofKind(kind, id, name == null ? null : StringData.fromString(name));
  }

  private static TreeMap<Long, String> rows(Table table) throws Exception {
    TreeMap<Long, String> rows = new TreeMap<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      records.forEach(r -> rows.put(r.get(0, Long.class), r.get(1, String.class)));
    }
    return rows;
  }
}
