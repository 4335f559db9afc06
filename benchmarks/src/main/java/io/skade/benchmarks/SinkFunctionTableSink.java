package io.skade.benchmarks;

import java.util.function.Supplier;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.legacy.SinkFunctionProvider;
import org.apache.flink.table.data.RowData;

/**
 * The table sink of the benchmarks' measuring connectors: it accepts {@code mode} and hands its
 * rows to a sink function made by {@code function}. A sink function, because Flink chains it to the
 * operator before it, as it does its collect sink (a Sink V2 writer runs as a task of its own: rows
 * would cross a network buffer to reach it).
 */
record SinkFunctionTableSink(
    ChangelogMode mode, Supplier<SinkFunction<RowData>> function, String summary)
    implements DynamicTableSink {
  @Override
  public ChangelogMode getChangelogMode(ChangelogMode requested) {
    return mode;
  }

  @Override
  public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
    return SinkFunctionProvider.of(function.get());
  }

  @Override
  public DynamicTableSink copy() {
    return new SinkFunctionTableSink(mode, function, summary);
  }

  @Override
  public String asSummaryString() {
    return summary;
  }
}
