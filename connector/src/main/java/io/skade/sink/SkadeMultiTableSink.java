package io.skade.sink;

import io.skade.lineage.flink.FlinkLineage;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessageTypeInfo;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.LineageVertexProvider;
import org.apache.flink.table.types.logical.RowType;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.sink.RowDataTaskWriterFactory;

/**
 * Writes {@link TableRow}s into several skade tables of one catalog and commits each checkpoint's
 * tables in one catalog transaction: all of them or none, their snapshots taking consecutive {@code
 * commit_seq}s, exactly once across restarts. A reader of the catalog never sees one table of a
 * checkpoint without the others. Built with {@link #builder()}:
 *
 * <pre>{@code
 * DataStream<TableRow> changes = ...; // TableRow.of("shop.orders", row), ...
 * changes.sinkTo(SkadeMultiTableSink.builder()
 *     .catalogProperties(Map.of("warehouse", "/data/warehouse"))
 *     .table("shop.orders")              // upserts by its primary key
 *     .table("shop.order_lines")
 *     .table("shop.audit", List.of())    // inserts only
 *     .build());
 * }</pre>
 *
 * <p>The writers ({@code sinkTo(sink).setParallelism(n)}) hold one Iceberg writer per table they
 * have rows for; a table with a key gets each key's rows at one writer, in order, and writes
 * upserts and deletes by that key (equality deletes) as {@link SkadeSink} does. One task turns each
 * checkpoint's files into per-table manifests ({@link TransactionAggregator}), and the committer
 * commits them ({@link MultiTableCommitter}).
 */
public final class SkadeMultiTableSink
    implements Sink<TableRow>,
        SupportsPreWriteTopology<TableRow>,
        SupportsCommitter<MultiTableCommittable>,
        SupportsPreCommitTopology<TableWriteResult, MultiTableCommittable>,
        LineageVertexProvider {
  private static final long serialVersionUID = 1L;

  /**
   * One table: its row type, the positions of its key's columns (none: inserts only), its writers'
   * factory and the table as planned, for the manifests.
   */
  record Target(
      RowType type, int[] keyPositions, RowDataTaskWriterFactory files, PlannedTableLoader planned)
      implements Serializable {}

  private final HashMap<String, String> catalogProperties;
  private final String warehouse;
  private final TreeMap<String, Target> targets;
  private final String actor;
  private final String uidSuffix;

  SkadeMultiTableSink(
      Map<String, String> catalogProperties,
      String warehouse,
      Map<String, Target> targets,
      String actor,
      String uidSuffix) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.warehouse = warehouse;
    this.targets = new TreeMap<>(targets);
    this.actor = actor;
    this.uidSuffix = uidSuffix;
  }

  /** A builder; the catalog properties and at least one table are required. */
  public static SkadeMultiTableSinkBuilder builder() {
    return new SkadeMultiTableSinkBuilder();
  }

  /** The tables this sink writes. */
  public List<TableIdentifier> tables() {
    return targets.keySet().stream().map(TableIdentifier::parse).toList();
  }

  /**
   * Checks each row against its table and routes it to the writers by its table and key; the check
   * runs chained to the operator that makes the rows, and hands them on in skade's own
   * serialization of each table's rows.
   */
  @Override
  public DataStream<TableRow> addPreWriteTopology(DataStream<TableRow> rows) {
    Map<String, Integer> arity = new HashMap<>();
    Map<String, RowType> types = new HashMap<>();
    Map<String, int[]> keys = new HashMap<>();
    List<RowType> ordered = new ArrayList<>();
    targets.forEach(
        (table, target) -> {
          arity.put(table, target.type().getFieldCount());
          types.put(table, target.type());
          keys.put(table, target.keyPositions());
          ordered.add(target.type());
        });
    String name =
        "skade multi-table sink rows: " + (uidSuffix == null ? targets.keySet() : uidSuffix);
    SingleOutputStreamOperator<TableRow> checked =
        rows.map(new TableRowRouting.Check(arity))
            .returns(new TableRowTypeInfo(List.copyOf(targets.keySet()), ordered))
            .name(name);
    if (rows.getParallelism() > 0) {
      checked.setParallelism(rows.getParallelism()); // chained to the rows' operator
    }
    if (uidSuffix != null) {
      checked.uid(name);
    }
    return checked.keyBy(new TableRowRouting.Key(types, keys), Types.INT);
  }

  @Override
  public SinkWriter<TableRow> createWriter(WriterInitContext context) {
    return new CountingSinkWriter<>(
        new MultiTableWriter(
            targets,
            context.getTaskInfo().getIndexOfThisSubtask(),
            context.getTaskInfo().getAttemptNumber()),
        context.metricGroup(),
        TableWriteResult::result);
  }

  @Override
  public SimpleVersionedSerializer<TableWriteResult> getWriteResultSerializer() {
    return new TableWriteResult.Serializer();
  }

  /**
   * One task turning each checkpoint's files into a committable ({@link TransactionAggregator}),
   * its committables to the committer's first task.
   */
  @Override
  public DataStream<CommittableMessage<MultiTableCommittable>> addPreCommitTopology(
      DataStream<CommittableMessage<TableWriteResult>> written) {
    Map<String, PlannedTableLoader> planned = new TreeMap<>();
    targets.forEach((table, target) -> planned.put(table, target.planned()));
    String name =
        "skade multi-table sink pre-commit: " + (uidSuffix == null ? targets.keySet() : uidSuffix);
    SingleOutputStreamOperator<CommittableMessage<MultiTableCommittable>> aggregated =
        written
            .global()
            .transform(
                name,
                CommittableMessageTypeInfo.of(MultiTableCommittable.Serializer::new),
                new TransactionAggregator(planned))
            .setParallelism(1)
            .setMaxParallelism(1);
    if (uidSuffix != null) { // a sink without one may hold no uids
      aggregated.uid(name);
    }
    return aggregated.global();
  }

  @Override
  public Committer<MultiTableCommittable> createCommitter(CommitterInitContext context)
      throws IOException {
    return new MultiTableCommitter(catalogProperties, actor);
  }

  @Override
  public SimpleVersionedSerializer<MultiTableCommittable> getCommittableSerializer() {
    return new MultiTableCommittable.Serializer();
  }

  /** The tables this sink writes, named in its catalog's warehouse (or server). */
  @Override
  public LineageVertex getLineageVertex() {
    return new FlinkLineage.SinkVertex(
        tables().stream()
            .<LineageDataset>map(table -> FlinkLineage.dataset(warehouse, table))
            .toList());
  }

  @Override
  public String toString() {
    return "skade multi-table sink " + targets.keySet();
  }
}
