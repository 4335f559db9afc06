package io.skade.sink;

import io.skade.catalog.CatalogConnection;
import io.skade.lineage.CommitLineage;
import io.skade.lineage.FlinkLineage;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.LineageVertexProvider;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.sink.FlinkSink;

/**
 * Writes {@link RowData} into a skade table: inserts, or upserts and deletes by key (equality
 * deletes), committed through the skade catalog once per checkpoint and at the end of a bounded
 * input, exactly once. Built with {@link #builder()}; used by {@code rows.sinkTo(sink)} and by
 * skade's SQL sink.
 *
 * <p>The rows are written and committed by Iceberg's Flink sink operators (writers, one
 * committer), which this sink adds as its pre-write topology; its own writer, after the
 * committer, receives no rows. The sink exists so that Flink sees one skade sink, with the table
 * it writes as its lineage dataset (FLIP-314).
 */
public final class SkadeSink
    implements Sink<RowData>, SupportsPreWriteTopology<RowData>, LineageVertexProvider {
  private static final long serialVersionUID = 1L;

  private final HashMap<String, String> catalogProperties;
  private final String table; // TableIdentifier is not serializable
  private final String warehouse;
  // The write settings are used only while the job is planned (addPreWriteTopology).
  private final transient Settings settings;

  /** How the rows are written; see {@link SkadeSinkBuilder}. */
  record Settings(ResolvedSchema schema, ReadableConfig flinkConf, List<String> upsertKey,
      boolean overwrite, Integer writeParallelism, String actor, String uidPrefix) {}

  /** {@code location}: the catalog's {@link CatalogConnection#location()}, for lineage. */
  SkadeSink(Map<String, String> catalogProperties, String location, TableIdentifier table,
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
      throw new IllegalStateException("skade sink for " + table + " was deserialized before its"
          + " job was planned; add it to a job with sinkTo");
    }
    FlinkSink.Builder writer = FlinkSink.forRowData(rows)
        .tableLoader(new SkadeTableLoader(catalogProperties, table()))
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
    if (settings.writeParallelism() != null) {
      writer.writeParallelism(settings.writeParallelism());
    }
    if (settings.actor() != null) {
      writer.setSnapshotProperty(CommitLineage.ACTOR, settings.actor());
    }
    if (settings.uidPrefix() != null) {
      writer.uidPrefix(settings.uidPrefix());
    }
    // Iceberg ends its operators with a discarding sink; this sink takes its place, after the
    // committer (a sink added while Flink expands this one is not supported by the expansion).
    Transformation<?> discarding = writer.append().getTransformation();
    rows.getExecutionEnvironment().getTransformations().removeIf(t -> t == discarding);
    @SuppressWarnings("unchecked")
    DataStream<Void> committed = new DataStream<>(rows.getExecutionEnvironment(),
        (Transformation<Void>) discarding.getInputs().get(0));
    // The committer emits nothing, so nothing reaches this sink's own writer.
    return committed.flatMap((Void none, Collector<RowData> out) -> { }, rows.getType())
        .name("skade sink " + table);
  }

  @Override
  public SinkWriter<RowData> createWriter(WriterInitContext context) {
    return new SinkWriter<>() {
      @Override
      public void write(RowData row, Context rowContext) {
        throw new IllegalStateException("skade sink for " + table + " writes through its"
            + " Iceberg operators; its own writer takes no rows");
      }

      @Override
      public void flush(boolean endOfInput) {}

      @Override
      public void close() {}
    };
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
