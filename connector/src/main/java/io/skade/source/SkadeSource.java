package io.skade.source;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions;
import io.skade.lineage.flink.FlinkLineage;
import io.skade.source.enumerator.SkadeEnumeratorState;
import io.skade.source.enumerator.SkadeEnumeratorStateSerializer;
import io.skade.source.enumerator.SkadeSplitEnumerator;
import io.skade.source.reader.SkadeSourceReader;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitSerializer;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.LineageVertexProvider;
import org.apache.flink.table.data.RowData;

/**
 * A Flink source of the exact changelog ({@code +I -U +U -D}) of one Iceberg table in a skade
 * catalog, pushed by the catalog's commits and resumed exactly where a checkpoint left it. Build
 * one with {@link #builder()}.
 *
 * <p>The enumerator runs in the job manager and opens the catalog (shared with every skade
 * component of that JVM; read-only, and then polling, when another process owns it). Readers never
 * open the catalog: each split names a metadata file, and they read it with the table's file IO.
 *
 * @param <T> the emitted type: {@link RowData} unless a {@link ChangeDeserializer} maps it
 */
public final class SkadeSource<T>
    implements Source<T, ChangelogSplit, SkadeEnumeratorState>,
        ResultTypeQueryable<T>,
        LineageVertexProvider {
  private static final long serialVersionUID = 1L;

  private final Map<String, String> catalogProperties;
  private final SkadeSplitEnumerator.Settings settings;
  private final ChangelogOptions options;
  private final int batchRows;

  /** The most rows each reader emits ({@link Long#MAX_VALUE}: all). */
  private final long limit;

  private final ChangeDeserializer<T> deserializer;

  /** The catalog's {@link CatalogConnection#location()}, naming the table in lineage. */
  private final String location;

  /**
   * With watermarks on commit time, how long a reader without splits waits to be marked idle (zero:
   * never); null without them.
   */
  private final Duration watermarkIdleTimeout;

  SkadeSource(
      Map<String, String> catalogProperties,
      String location,
      SkadeSplitEnumerator.Settings settings,
      ChangelogOptions options,
      int batchRows,
      long limit,
      ChangeDeserializer<T> deserializer,
      Duration watermarkIdleTimeout) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.watermarkIdleTimeout = watermarkIdleTimeout;
    this.location = location;
    this.settings = settings;
    this.options = options;
    this.batchRows = batchRows;
    this.limit = limit;
    this.deserializer = deserializer;
  }

  /** A builder of a source emitting {@link RowData}; see {@link SkadeSourceBuilder}. */
  public static SkadeSourceBuilder<RowData> builder() {
    return new SkadeSourceBuilder<>();
  }

  /**
   * The watermark strategy of a source built with {@link SkadeSourceBuilder#commitTimeWatermarks},
   * to pass to {@code env.fromSource}: each change's timestamp is its commit's stamp on the
   * catalog's log, and each reader's watermark is exact (no change behind it) and follows the log
   * even while the reader is given no split. Add Flink's {@code withWatermarkAlignment} to it as
   * needed.
   *
   * @throws IllegalStateException when the source was built without commit-time watermarks
   */
  public WatermarkStrategy<T> commitTimeWatermarks() {
    if (watermarkIdleTimeout == null) {
      throw new IllegalStateException(
          "skade source on "
              + settings.table()
              + " was built without commit-time watermarks: call"
              + " builder().commitTimeWatermarks(idleTimeout) to have its readers emit them");
    }
    return WatermarkStrategy.forGenerator(context -> new SplitOutputsIdle<>());
  }

  /** The table this source reads, for Flink's lineage graph. */
  @Override
  public LineageVertex getLineageVertex() {
    return new FlinkLineage.SourceVertex(
        getBoundedness(), List.of(FlinkLineage.dataset(location, settings.table())));
  }

  @Override
  public Boundedness getBoundedness() {
    return settings.bounded() ? Boundedness.BOUNDED : Boundedness.CONTINUOUS_UNBOUNDED;
  }

  @Override
  public SplitEnumerator<ChangelogSplit, SkadeEnumeratorState> createEnumerator(
      SplitEnumeratorContext<ChangelogSplit> context) {
    return new SkadeSplitEnumerator(
        context, CatalogConnection.open(SkadeCatalog.inTask(catalogProperties)), settings, null);
  }

  @Override
  public SplitEnumerator<ChangelogSplit, SkadeEnumeratorState> restoreEnumerator(
      SplitEnumeratorContext<ChangelogSplit> context, SkadeEnumeratorState checkpoint) {
    return new SkadeSplitEnumerator(
        context,
        CatalogConnection.open(SkadeCatalog.inTask(catalogProperties)),
        settings,
        checkpoint);
  }

  @Override
  public SourceReader<T, ChangelogSplit> createReader(SourceReaderContext context) {
    return new SkadeSourceReader<>(
        CatalogConnection.fileIO(catalogProperties),
        options,
        batchRows,
        limit,
        deserializer,
        watermarkIdleTimeout,
        context);
  }

  @Override
  public SimpleVersionedSerializer<ChangelogSplit> getSplitSerializer() {
    return new ChangelogSplitSerializer();
  }

  @Override
  public SimpleVersionedSerializer<SkadeEnumeratorState> getEnumeratorCheckpointSerializer() {
    return new SkadeEnumeratorStateSerializer();
  }

  @Override
  public TypeInformation<T> getProducedType() {
    return deserializer.getProducedType();
  }
}
