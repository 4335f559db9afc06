package io.skade.source.reader;

import io.skade.source.ChangeDeserializer;
import io.skade.source.ChangeMetadata;
import io.skade.source.split.ChangelogSplitState;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.util.Collector;

/**
 * Emits a change through the source's deserializer, stamped with its commit time, and then records
 * in the split's state that it was emitted — so a checkpoint taken between two records holds
 * exactly the changes before it.
 */
final class ChangeRecordEmitter<T> implements RecordEmitter<ChangeRecord, T, ChangelogSplitState> {
  private final ChangeDeserializer<T> deserializer;
  private final TimestampedCollector<T> collector = new TimestampedCollector<>();

  ChangeRecordEmitter(ChangeDeserializer<T> deserializer) {
    this.deserializer = deserializer;
  }

  @Override
  public void emitRecord(ChangeRecord record, SourceOutput<T> output, ChangelogSplitState state)
      throws Exception {
    collector.output = output;
    collector.timestamp = record.commitMillis();
    deserializer.deserialize(
        record.row(),
        new ChangeMetadata(state.split().commitSeq(), record.snapshotId(), record.commitMillis()),
        collector);
    state.emitted(record.emittedAfter());
  }

  private static final class TimestampedCollector<T> implements Collector<T> {
    SourceOutput<T> output;
    long timestamp;

    @Override
    public void collect(T record) {
      output.collect(record, timestamp);
    }

    @Override
    public void close() {}
  }
}
