package io.skade.testing;

import io.skade.source.ChangeDeserializer;
import io.skade.source.ChangeMetadata;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;

/**
 * Which reader emitted each change, and the order one downstream task received them in, for jobs on
 * a MiniCluster in the test's JVM.
 *
 * <p>{@link #tagged} chains a map right after a source, at its parallelism, that prefixes each
 * record with the index of its subtask (the source reader that emitted it); it can be made slow
 * ({@link #throttle}), which back-pressures the reader it is chained to, so the reader keeps splits
 * unfinished. {@link #sinkInto} sends every record to one sink task, which hands each to the test,
 * in the order that task received them, through a queue of this JVM; {@link #drain} takes what
 * arrived. A tap outlives jobs: a job restored from a savepoint can write into the tap of the job
 * it was restored from. A job never restarts (see {@link LocalCluster}), so a record the sink
 * received is one the job emitted once.
 *
 * <p>{@link Lines} turns a source's changes into records the tap parses back as {@link Received}.
 */
public final class ChangeTap implements AutoCloseable {
  private static final Map<String, BlockingQueue<String>> QUEUES = new ConcurrentHashMap<>();
  private static final Map<String, AtomicLong> DELAYS = new ConcurrentHashMap<>();

  private final String name = UUID.randomUUID().toString();
  private final BlockingQueue<String> queue = new LinkedBlockingQueue<>();
  private final AtomicLong delayNanos = new AtomicLong();

  public ChangeTap() {
    QUEUES.put(name, queue);
    DELAYS.put(name, delayNanos);
  }

  /** {@code records} with {@code "<subtask> "} before each, from a map chained to them. */
  public DataStream<String> tagged(DataStream<String> records, String uid) {
    return records.map(new TagWithSubtask(name)).uid(uid).name(uid);
  }

  /** Sends every record of {@code records} to one sink task that hands them to this tap. */
  public void sinkInto(DataStream<String> records, String uid) {
    records.sinkTo(new QueueSink(name)).setParallelism(1).uid(uid).name(uid);
  }

  /** Makes each tagging map take {@code nanos} per record (0: as fast as it can). */
  public void throttle(long nanos) {
    delayNanos.set(nanos);
  }

  /** Every record received since the last drain, in the order the sink task received them. */
  public List<String> drain() {
    List<String> records = new ArrayList<>();
    queue.drainTo(records);
    return records;
  }

  /** The next record, waiting at most {@code millis}; null if none came. */
  public String poll(long millis) throws InterruptedException {
    return queue.poll(millis, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    QUEUES.remove(name);
    DELAYS.remove(name);
  }

  /** Prefixes each record with its subtask's index; slow while its tap is throttled. */
  private static final class TagWithSubtask extends RichMapFunction<String, String> {
    private final String tap;

    TagWithSubtask(String tap) {
      this.tap = tap;
    }

    @Override
    public String map(String record) {
      long delay = DELAYS.get(tap).get();
      if (delay > 0) {
        LockSupport.parkNanos(delay); // a slow operator: the back-pressure the test needs
      }
      return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + " " + record;
    }
  }

  /** Puts each record into its tap's queue. */
  private static final class QueueSink implements Sink<String> {
    private final String tap;

    QueueSink(String tap) {
      this.tap = tap;
    }

    @Override
    public SinkWriter<String> createWriter(WriterInitContext context) {
      BlockingQueue<String> queue = QUEUES.get(tap);
      return new SinkWriter<>() {
        @Override
        public void write(String record, Context context) {
          queue.add(record);
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {}
      };
    }
  }

  /**
   * A source's changes of {@code (id bigint, v string)} rows as {@code "<table> <commit_seq> <kind>
   * <id> <v>"}, e.g. {@code "log 12 -D 3 a"}; values hold no spaces.
   */
  public static final class Lines implements ChangeDeserializer<String> {
    private final String table;

    public Lines(String table) {
      this.table = table;
    }

    @Override
    public void deserialize(RowData change, ChangeMetadata metadata, Collector<String> out) {
      out.collect(table + " " + metadata.commitSeq() + " " + ChangeLines.text(change));
    }

    @Override
    public TypeInformation<String> getProducedType() {
      return Types.STRING;
    }
  }

  /**
   * One change as the sink task received it.
   *
   * @param reader the index of the source subtask that emitted it
   * @param table the table's tag given to {@link Lines}
   * @param commitSeq the {@code commit_seq} of the commit it belongs to
   * @param kind {@code +I}, {@code -U}, {@code +U} or {@code -D}
   * @param row the row as {@code "<id> <v>"}
   */
  public record Received(
      int reader, String table, long commitSeq, String kind, long id, String row) {
    /** Parses a record of a tagged {@link Lines} stream. */
    public static Received parse(String record) {
      String[] parts = record.split(" ", 6); // reader table seq kind id v
      return new Received(
          Integer.parseInt(parts[0]),
          parts[1],
          Long.parseLong(parts[2]),
          parts[3],
          Long.parseLong(parts[4]),
          parts[4] + " " + parts[5]);
    }

    /** The value column, null for a null value. */
    public String v() {
      String v = row.substring(row.indexOf(' ') + 1);
      return v.equals("null") ? null : v;
    }

    public boolean inserts() {
      return kind.startsWith("+");
    }

    @Override
    public String toString() {
      return "reader "
          + reader
          + ": "
          + table
          + " "
          + kind
          + " "
          + row
          + " (commit_seq "
          + commitSeq
          + ")";
    }
  }
}
