package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import io.skade.lineage.CommitLineage;
import io.skade.lineage.flink.FlinkLineage;
import io.skade.maintenance.CatalogLockFactory;
import io.skade.maintenance.IcebergInternals;
import io.skade.maintenance.IcebergInternals.Seam;
import io.skade.refs.TableRefs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessageTypeInfo;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreCommitTopology;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.LineageVertexProvider;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.FlinkWriteOptions;
import org.apache.iceberg.flink.TableLoader;
import org.apache.iceberg.flink.maintenance.operator.TableChange;
import org.apache.iceberg.flink.sink.CommittableToTableChangeConverter;
import org.apache.iceberg.flink.sink.IcebergSink;
import org.apache.iceberg.io.WriteResult;

/**
 * Writes {@link RowData} into a skade table: inserts, or upserts and deletes by key (equality
 * deletes), committed through the skade catalog once per checkpoint and at the end of a bounded
 * input, exactly once; optionally followed by the table's maintenance (compaction, snapshot expiry,
 * orphan cleanup; see {@link SkadeSinkBuilder#maintenance}). Built with {@link #builder()}; used by
 * {@code rows.sinkTo(sink)} and by skade's SQL sink.
 *
 * <p>A Flink Sink V2 over Iceberg's own {@link IcebergSink}: Iceberg's writers, one pre-commit
 * aggregator, its committer and its post-commit table maintenance do the work, so the sink's
 * parallelism ({@code sinkTo(sink).setParallelism(n)}, SQL's {@code sink.parallelism}) is the
 * writers'. This class adds what Iceberg's sink leaves out: Flink's standard sink metrics ({@code
 * numRecordsSend}, {@code numBytesSend}, {@code numRecordsSendErrors}), the table as its lineage
 * dataset (FLIP-314), and skade's catalog as the committer's and maintenance's catalog. What it
 * relies on of Iceberg's sink beyond its API is in {@link IcebergInternals}, checked while the job
 * is planned.
 */
public final class SkadeSink
    implements Sink<RowData>,
        SupportsPreWriteTopology<RowData>,
        SupportsCommitter<Object>,
        SupportsPreCommitTopology<WriteResult, Object>,
        SupportsPostCommitTopology<Object>,
        LineageVertexProvider {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table; // TableIdentifier is not serializable
  private final String warehouse;
  // The write settings are used only while the job is planned (addPreWriteTopology).
  private final transient Settings settings;
  // Iceberg's sink, built when the job is planned; its committables are Iceberg's own
  // (package-private) type, hence Object in this class's signature.
  private IcebergSink iceberg;
  // The table as the job is planned, for the maintenance's reading of the committed files.
  private transient Table planned;

  /** How the rows are written; see {@link SkadeSinkBuilder}. */
  record Settings(
      ResolvedSchema schema,
      ReadableConfig flinkConf,
      List<String> upsertKey,
      boolean overwrite,
      String actor,
      String uidSuffix,
      SinkMaintenance maintenance,
      String branch) {}

  /** {@code location}: the catalog's {@link CatalogConnection#location()}, for lineage. */
  SkadeSink(
      Map<String, String> catalogProperties,
      String location,
      TableIdentifier table,
      Settings settings) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.table = table.toString();
    this.warehouse = location;
    this.settings = settings;
  }

  /** A builder; the catalog properties and the table are required. */
  public static SkadeSinkBuilder builder() {
    return new SkadeSinkBuilder();
  }

  /** The table this sink writes. */
  public TableIdentifier table() {
    return TableIdentifier.parse(table);
  }

  @Override
  public DataStream<RowData> addPreWriteTopology(DataStream<RowData> rows) {
    if (settings == null) {
      throw new IllegalStateException(
          "skade sink for "
              + table
              + " was deserialized before its"
              + " job was planned; add it to a job with sinkTo");
    }
    SinkMaintenance maintenance = settings.maintenance();
    // The Iceberg internals this sink relies on, checked now, not where the running job needs them.
    IcebergInternals.requireSeams("skade sink for " + table, Seam.SINK_BUILD, Seam.COMMITTABLE);
    if (maintenance.enabled()) {
      IcebergInternals.requireSeams(
          "the maintenance of skade sink for " + table, Seam.REWRITE, Seam.MAINTENANCE_TASK);
    }
    planned = loadTable();
    requireBranch(settings.branch());
    IcebergSink.Builder writer =
        IcebergSink.forRowData(rows)
            .tableLoader(new SkadeTableLoader(catalogProperties, table()))
            .table(planned)
            .overwrite(settings.overwrite());
    if (settings.schema() != null) {
      writer.resolvedSchema(settings.schema());
    }
    if (settings.flinkConf() != null) {
      writer.flinkConf(settings.flinkConf());
    }
    if (!settings.upsertKey().isEmpty()) {
      writer.equalityFieldColumns(settings.upsertKey()).upsert(true);
    }
    if (settings.actor() != null) {
      writer.setSnapshotProperty(CommitLineage.ACTOR, settings.actor());
    }
    if (settings.uidSuffix() != null) {
      writer.uidSuffix(settings.uidSuffix());
    }
    if (settings.branch() != null) {
      writer.toBranch(settings.branch());
    }
    if (maintenance.enabled()) {
      // Iceberg's committer then keeps each checkpoint's manifests for the post-commit topology.
      writer.set(FlinkWriteOptions.COMPACTION_ENABLE.key(), "true");
    }
    // Iceberg's builder builds its sink only inside append(), which would also add it to the job.
    iceberg = IcebergInternals.buildSink(writer, "skade sink for " + table);
    // Iceberg's distribution: rows keyed by the upsert key, so one key's changes meet one writer.
    return iceberg.addPreWriteTopology(rows);
  }

  /** A branch written must exist: Iceberg would fork a missing one from main, silently. */
  private void requireBranch(String branch) {
    if (branch == null) {
      return;
    }
    SnapshotRef ref = planned.refs().get(branch);
    if (ref == null || ref.isTag()) {
      throw new IllegalArgumentException(
          "skade sink for "
              + table
              + ": no branch '"
              + branch
              + "' to write to"
              + (ref == null ? "" : " (it is a tag, which no commit can move)")
              + "; its branches: "
              + TableRefs.names(planned, false)
              + ". Create it first (in SQL: CALL <catalog>.sys.create_branch('"
              + table
              + "', '"
              + branch
              + "'))");
    }
  }

  private IcebergSink iceberg() {
    if (iceberg == null) {
      throw new IllegalStateException(
          "skade sink for "
              + table
              + " is used before its job was"
              + " planned; add it to a job with sinkTo");
    }
    return iceberg;
  }

  @Override
  public SinkWriter<RowData> createWriter(WriterInitContext context) throws IOException {
    @SuppressWarnings("unchecked")
    CommittingSinkWriter<RowData, WriteResult> writer =
        (CommittingSinkWriter<RowData, WriteResult>) iceberg().createWriter(context);
    return new CountingSinkWriter<>(writer, context.metricGroup(), written -> written);
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public Committer<Object> createCommitter(CommitterInitContext context) throws IOException {
    return (Committer) ((SupportsCommitter) iceberg()).createCommitter(context);
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public SimpleVersionedSerializer<Object> getCommittableSerializer() {
    return (SimpleVersionedSerializer) ((SupportsCommitter) iceberg()).getCommittableSerializer();
  }

  /**
   * One task turning each checkpoint's write results into a committable ({@link
   * CheckpointAggregator}), shaped as Iceberg's pre-commit topology: everything to that task, and
   * its committables to the committer's first task. It reads the table as planned (its FileIO, spec
   * and properties, to write the manifests), so no catalog stays open on a TaskManager.
   */
  @Override
  public DataStream<CommittableMessage<Object>> addPreCommitTopology(
      DataStream<CommittableMessage<WriteResult>> written) {
    String suffix = settings.uidSuffix() == null ? table : settings.uidSuffix();
    String name = "Sink pre-commit aggregator: " + suffix;
    SingleOutputStreamOperator<CommittableMessage<Object>> aggregated =
        written
            .global()
            .transform(
                name,
                CommittableMessageTypeInfo.of(this::getCommittableSerializer),
                new CheckpointAggregator(
                    new PlannedTableLoader(planned), this::getCommittableSerializer))
            .setParallelism(1)
            .setMaxParallelism(1);
    if (settings.uidSuffix() != null) { // a sink without one may hold no uids (withUids)
      aggregated.uid(name);
    }
    return aggregated.global();
  }

  /**
   * Runs {@code expansion}, and without a {@link SkadeSinkBuilder#uidSuffix} clears the uids
   * Iceberg gives the operators it adds: Flink refuses operators with uids in the topology of a
   * sink without one, and a sink without a uid is what {@code rows.sinkTo(sink)} gives.
   */
  private <T> T withUids(DataStream<?> stream, Supplier<T> expansion) {
    List<Transformation<?>> all = stream.getExecutionEnvironment().getTransformations();
    int before = all.size();
    T result = expansion.get();
    if (settings != null && settings.uidSuffix() == null) {
      all.subList(before, all.size()).forEach(added -> added.setUid(null));
    }
    return result;
  }

  @Override
  public SimpleVersionedSerializer<WriteResult> getWriteResultSerializer() {
    return iceberg().getWriteResultSerializer();
  }

  /**
   * The table's maintenance, when it is enabled: Iceberg's, fed by the committed files as Iceberg's
   * sink feeds it, on a loader whose compactions fold the deletes they leave dangling.
   */
  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public void addPostCommitTopology(DataStream<CommittableMessage<Object>> committed) {
    SinkMaintenance maintenance = settings == null ? SinkMaintenance.NONE : settings.maintenance();
    if (!maintenance.enabled()) {
      return;
    }
    iceberg();
    String suffix = settings.uidSuffix() == null ? table : settings.uidSuffix();
    withUids(
        committed,
        () -> {
          DataStream<TableChange> changes =
              committed
                  .global()
                  .process(
                      (ProcessFunction)
                          new CommittableToTableChangeConverter(
                              planned.io(), planned.name(), planned.specs()),
                      TypeInformation.of(TableChange.class))
                  .uid("skade post-commit " + suffix)
                  .name("skade post-commit " + table)
                  .forceNonParallel();
          maintenance.appendTo(
              changes,
              SkadeTableLoader.forMaintenance(catalogProperties, table()),
              new CatalogLockFactory(
                  catalogProperties, table(), "the maintenance of sink " + suffix),
              suffix);
          return null;
        });
  }

  private Table loadTable() {
    try (TableLoader loader = new SkadeTableLoader(catalogProperties, table())) {
      loader.open();
      return loader.loadTable();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot load " + table, e);
    }
  }

  /** The table this sink writes, named in its catalog's warehouse (or server). */
  @Override
  public LineageVertex getLineageVertex() {
    return new FlinkLineage.SinkVertex(List.of(FlinkLineage.dataset(warehouse, table())));
  }

  @Override
  public String toString() {
    return "skade sink " + table;
  }
}
