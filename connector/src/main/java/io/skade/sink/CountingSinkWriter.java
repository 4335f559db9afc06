package io.skade.sink;

import java.io.IOException;
import java.util.Collection;
import java.util.function.Function;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.io.WriteResult;

/**
 * A writer of Iceberg files, counted in Flink's standard sink metrics: rows handed to it, rows it
 * failed on, and the bytes of the files it wrote for each checkpoint.
 *
 * @param <T> the rows
 * @param <R> the writer's results, each {@link WriteResult}s of a checkpoint
 */
final class CountingSinkWriter<T, R> implements CommittingSinkWriter<T, R> {
  private final CommittingSinkWriter<T, R> writer;
  private final SinkWriterMetricGroup metrics;
  private final Function<R, WriteResult> files;

  CountingSinkWriter(
      CommittingSinkWriter<T, R> writer,
      SinkWriterMetricGroup metrics,
      Function<R, WriteResult> files) {
    this.writer = writer;
    this.metrics = metrics;
    this.files = files;
  }

  @Override
  public void write(T row, Context context) throws IOException, InterruptedException {
    try {
      writer.write(row, context);
    } catch (IOException | RuntimeException e) {
      metrics.getNumRecordsSendErrorsCounter().inc();
      throw e;
    }
    metrics.getNumRecordsSendCounter().inc();
  }

  @Override
  public Collection<R> prepareCommit() throws IOException, InterruptedException {
    Collection<R> results = writer.prepareCommit();
    long bytes = 0;
    for (R result : results) {
      WriteResult written = files.apply(result);
      bytes += size(written.dataFiles()) + size(written.deleteFiles());
    }
    metrics.getNumBytesSendCounter().inc(bytes);
    return results;
  }

  private static long size(ContentFile<?>[] files) {
    long bytes = 0;
    for (ContentFile<?> file : files) {
      bytes += file.fileSizeInBytes();
    }
    return bytes;
  }

  @Override
  public void flush(boolean endOfInput) throws IOException, InterruptedException {
    writer.flush(endOfInput);
  }

  @Override
  public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
    writer.writeWatermark(watermark);
  }

  @Override
  public void close() throws Exception {
    writer.close();
  }
}
