package io.skade.benchmarks;

import java.util.Arrays;
import java.util.BitSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.streaming.api.functions.sink.legacy.RichSinkFunction;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * The delta-join benchmark's sink ({@code 'connector' = 'bench-joined'}): an upsert sink, as a
 * delta join needs (it may emit a joined row twice), that counts the distinct joined rows by their
 * shipment id and, for each row joined from rows appended while the job ran, its latency: from the
 * later of its two rows' commits (their {@code ts} columns, this JVM's {@link System#nanoTime} just
 * before the commit) to its arrival. Rows are {@code (order_id, shipment_id, customer, amount,
 * carrier, o_ts, s_ts)}; they go no further. Option {@code run}: the key under which {@link
 * #measurement} hands the figures over.
 */
public final class JoinedRowsSinkFactory implements DynamicTableSinkFactory {
  private static final ConfigOption<String> RUN =
      ConfigOptions.key("run").stringType().noDefaultValue();
  private static final Map<String, Measurement> RUNS = new ConcurrentHashMap<>();

  /** What one run's sink saw so far; thread-safe. */
  static final class Measurement {
    private final BitSet shipments = new BitSet();
    private long rows;
    private long[] latencies = new long[1 << 16];
    private int latencyCount;

    synchronized void add(long shipment, long latestCommitNanos, long now) {
      rows++;
      if (shipments.get((int) shipment)) {
        return; // a duplicate: the upsert sink absorbs it, and it is not a new joined row
      }
      shipments.set((int) shipment);
      if (latestCommitNanos != 0) {
        if (latencyCount == latencies.length) {
          latencies = Arrays.copyOf(latencies, latencyCount * 2);
        }
        latencies[latencyCount++] = now - latestCommitNanos;
      }
    }

    /** Distinct joined rows. */
    synchronized long distinct() {
      return shipments.cardinality();
    }

    /** Rows received, duplicates included. */
    synchronized long rows() {
      return rows;
    }

    /** The latencies of the rows joined from appended rows, in nanoseconds, sorted. */
    synchronized long[] latencies() {
      long[] sorted = Arrays.copyOf(latencies, latencyCount);
      Arrays.sort(sorted);
      return sorted;
    }
  }

  /** The figures of {@code run}, created when first asked for. */
  static Measurement measurement(String run) {
    return RUNS.computeIfAbsent(run, key -> new Measurement());
  }

  @Override
  public String factoryIdentifier() {
    return "bench-joined";
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return Set.of(RUN);
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    return Set.of();
  }

  @Override
  public DynamicTableSink createDynamicTableSink(Context context) {
    FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
    helper.validate();
    String run = helper.getOptions().get(RUN);
    return new SinkFunctionTableSink(
        ChangelogMode.upsert(), () -> new Counting(run), "joined rows sink");
  }

  private static final class Counting extends RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;
    private final String run;
    private transient Measurement measurement;

    Counting(String run) {
      this.run = run;
    }

    @Override
    public void invoke(RowData row, Context context) {
      long now = System.nanoTime();
      if (measurement == null) {
        measurement = measurement(run);
      }
      measurement.add(row.getLong(1), Math.max(row.getLong(5), row.getLong(6)), now);
    }
  }
}
