package io.skade.table;

import io.skade.source.SkadeSource;
import io.skade.table.SqlChangeDeserializer.MetadataColumn;
import java.time.Duration;
import java.util.Optional;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.WatermarkSpec;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;

/**
 * The watermark a skade table generates for {@code WATERMARK FOR commit_time AS
 * SOURCE_WATERMARK()}: on the commit time the catalog stamped, by the readers themselves ({@link
 * SkadeSource#commitTimeWatermarks}), exact and following the catalog's log; with Flink's options
 * {@code scan.watermark.idle-timeout} (else {@code table.exec.source.idle-timeout}) and {@code
 * scan.watermark.alignment.*}, which the planner applies itself only to watermarks it generates.
 *
 * @param idleTimeout after how long without a split a reader is marked idle; zero for never
 * @param alignmentGroup the alignment group, or null for none
 */
record SourceWatermarks(
    Duration idleTimeout, String alignmentGroup, Duration maxDrift, Duration updateInterval) {

  /**
   * The settings of {@code tableOptions} and the session, after checking that a {@code
   * SOURCE_WATERMARK()} in {@code schema} is declared on the commit-time metadata column; before
   * any I/O.
   */
  static SourceWatermarks of(
      String table, Configuration tableOptions, ReadableConfig session, ResolvedSchema schema) {
    for (WatermarkSpec spec : schema.getWatermarkSpecs()) {
      if (isSourceWatermark(spec)) {
        requireCommitTime(table, spec, schema);
      }
    }
    Duration idle =
        tableOptions
            .getOptional(FactoryUtil.SOURCE_IDLE_TIMEOUT)
            .orElse(session.get(ExecutionConfigOptions.TABLE_EXEC_SOURCE_IDLE_TIMEOUT));
    return new SourceWatermarks(
        idle.isNegative() ? Duration.ZERO : idle,
        tableOptions.getOptional(FactoryUtil.WATERMARK_ALIGNMENT_GROUP).orElse(null),
        tableOptions.getOptional(FactoryUtil.WATERMARK_ALIGNMENT_MAX_DRIFT).orElse(Duration.ZERO),
        tableOptions.get(FactoryUtil.WATERMARK_ALIGNMENT_UPDATE_INTERVAL));
  }

  /** The strategy to read {@code source} with: its readers' own, aligned if asked. */
  WatermarkStrategy<RowData> strategy(SkadeSource<RowData> source) {
    WatermarkStrategy<RowData> strategy = source.commitTimeWatermarks();
    return alignmentGroup == null || maxDrift.isZero()
        ? strategy
        : strategy.withWatermarkAlignment(alignmentGroup, maxDrift, updateInterval);
  }

  private static boolean isSourceWatermark(WatermarkSpec spec) {
    String expression = spec.getWatermarkExpression().asSummaryString().replaceAll("[\\s`]", "");
    return expression.equalsIgnoreCase(
        BuiltInFunctionDefinitions.SOURCE_WATERMARK.getName() + "()");
  }

  private static void requireCommitTime(String table, WatermarkSpec spec, ResolvedSchema schema) {
    String rowtime = spec.getRowtimeAttribute();
    Optional<Column> column = schema.getColumn(rowtime);
    boolean commitTime =
        column.isPresent()
            && column.get() instanceof Column.MetadataColumn metadata
            && metadata.getMetadataKey().orElse(rowtime).equals(MetadataColumn.COMMIT_TIME.key);
    if (!commitTime) {
      throw new ValidationException(
          "skade table "
              + table
              + ": WATERMARK FOR "
              + rowtime
              + " AS SOURCE_WATERMARK() is the watermark on commit time, which needs "
              + rowtime
              + " to be the commit-time metadata column: declare `"
              + rowtime
              + " TIMESTAMP_LTZ(3) METADATA FROM '"
              + MetadataColumn.COMMIT_TIME.key
              + "' VIRTUAL`. For a watermark on a column of the rows, write WATERMARK FOR "
              + rowtime
              + " AS "
              + rowtime
              + " - INTERVAL '5' SECOND (a bound of your data's disorder)");
    }
  }
}
