package io.skade.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.streaming.api.functions.sink.legacy.RichSinkFunction;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * A sink that measures the lookup-join benchmark's job where its rows leave the join ({@code
 * 'connector' = 'bench-measure'}): when each row arrives (this JVM's {@link System#nanoTime}, the
 * clock the benchmark starts the job by), how many rows there are, and whether each joined row is
 * the one its key implies (its key, name and city hashes and score are kept, and checked once the
 * input has ended); one full GC at the middle row, for the live heap. The rows go no further.
 * Collecting them to the client instead made the client's fetching the pipeline's limit: the task
 * thread waited in the collect sink for a full buffer to be fetched.
 *
 * <p>Options: {@code run}, the key under which {@link #take} hands the figures over; {@code
 * dim-rows}, keys below it are expected hits; {@code probes}, the rows the job makes; {@code
 * joined}, whether rows carry the joined columns ({@code k, id, name, city, score}; else {@code k})
 * and {@code check}, whether those must match their key.
 */
public final class MeasuringSinkFactory implements DynamicTableSinkFactory {
  private static final ConfigOption<String> RUN =
      ConfigOptions.key("run").stringType().noDefaultValue();
  private static final ConfigOption<Long> DIM_ROWS =
      ConfigOptions.key("dim-rows").longType().noDefaultValue();
  private static final ConfigOption<Long> PROBES =
      ConfigOptions.key("probes").longType().noDefaultValue();
  private static final ConfigOption<Boolean> JOINED =
      ConfigOptions.key("joined").booleanType().noDefaultValue();
  private static final ConfigOption<Boolean> CHECK =
      ConfigOptions.key("check").booleanType().noDefaultValue();

  private static final Map<String, Measurement> RUNS = new ConcurrentHashMap<>();

  /** What one run's sink saw; times in {@link System#nanoTime} (0: no such row). */
  public static final class Measurement {
    /**
     * When the sink opened: as the task starts, before the lookup opens (Flink opens a chain of
     * operators from its end), after planning and deployment.
     */
    long openNanos;

    long rows;
    long hits;
    long wrong;
    long expectedHits;
    long firstNanos;
    long tenthNanos;
    long lastNanos;
    long gcStartNanos;
    long gcPauseNanos;
    long liveHeapBytes = -1;
  }

  /** The figures of {@code run}, once its job has finished, or null. */
  static Measurement take(String run) {
    return RUNS.remove(run);
  }

  @Override
  public String factoryIdentifier() {
    return "bench-measure";
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return Set.of(RUN, DIM_ROWS, PROBES, JOINED, CHECK);
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    return Set.of();
  }

  @Override
  public DynamicTableSink createDynamicTableSink(Context context) {
    FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
    helper.validate();
    Settings settings =
        new Settings(
            helper.getOptions().get(RUN),
            helper.getOptions().get(DIM_ROWS),
            helper.getOptions().get(PROBES),
            helper.getOptions().get(JOINED),
            helper.getOptions().get(CHECK));
    return new SinkFunctionTableSink(
        ChangelogMode.insertOnly(), () -> new Measuring(settings), "measuring sink");
  }

  private record Settings(String run, long dimRows, long probes, boolean joined, boolean check)
      implements java.io.Serializable {}

  /**
   * Keeps what each row holds (its key, its joined columns' hashes and score) in arrays, and checks
   * it against the key once the input has ended: the check costs the pipeline nothing.
   */
  private static final class Measuring extends RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;
    private final Settings settings;
    private transient Measurement m;
    private transient long tenth;
    private transient long[] keys;
    private transient boolean[] joined;
    private transient int[] names;
    private transient int[] cities;
    private transient int[] scores;
    private transient long[] ids;

    Measuring(Settings settings) {
      this.settings = settings;
    }

    @Override
    public void open(OpenContext context) {
      m = new Measurement();
      tenth = Math.max(1, settings.probes() / 10);
      m.openNanos = System.nanoTime();
      int size = settings.joined() && settings.check() ? Math.toIntExact(settings.probes()) : 0;
      keys = new long[size];
      joined = new boolean[size];
      names = new int[size];
      cities = new int[size];
      scores = new int[size];
      ids = new long[size];
    }

    @Override
    public void invoke(RowData row, Context context) {
      long now = System.nanoTime();
      m.lastNanos = now;
      int i = (int) m.rows++;
      if (i == 0) {
        m.firstNanos = now;
      }
      if (m.rows == tenth) {
        m.tenthNanos = now;
      }
      long k = row.getLong(0);
      if (k < settings.dimRows()) {
        m.expectedHits++;
      }
      if (i < keys.length) {
        keys[i] = k;
        joined[i] = !row.isNullAt(2);
        if (joined[i]) {
          ids[i] = row.isNullAt(1) ? -1 : row.getLong(1);
          names[i] = row.getString(2).hashCode();
          cities[i] = row.isNullAt(3) ? 0 : row.getString(3).hashCode();
          scores[i] = row.isNullAt(4) ? -1 : row.getInt(4);
        }
      } else if (keys.length > 0) {
        m.wrong++; // more rows than probes
      }
      if (m.rows == settings.probes() / 2) {
        m.gcStartNanos = System.nanoTime();
        System.gc();
        m.liveHeapBytes = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        m.gcPauseNanos = System.nanoTime() - m.gcStartNanos;
      }
    }

    @Override
    public void close() {
      for (int i = 0; i < Math.min(m.rows, keys.length); i++) {
        if (!joined[i]) {
          continue;
        }
        m.hits++;
        long k = keys[i];
        if (ids[i] != k
            || scores[i] != LookupJoinBenchmark.score(k)
            || names[i] != StringData.fromString(LookupJoinBenchmark.name(k)).hashCode()
            || cities[i] != StringData.fromString(LookupJoinBenchmark.city(k)).hashCode()) {
          m.wrong++;
        }
      }
      RUNS.put(settings.run(), m);
    }
  }
}
