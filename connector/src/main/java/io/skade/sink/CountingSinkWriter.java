package io.skade.sink;

import java.io.IOException;
import java.util.Collection;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.io.WriteResult;

/**
 * Iceberg's writer, counted in Flink's standard sink metrics: rows handed to it, rows it failed on,
 * and the bytes of the files it wrote for each checkpoint.
 */
final class CountingSinkWriter implements CommittingSinkWriter<RowData, WriteResult> {
  private final CommittingSinkWriter<RowData, WriteResult> writer;
  private final SinkWriterMetricGroup metrics;

  CountingSinkWriter(
      CommittingSinkWriter<RowData, WriteResult> writer, SinkWriterMetricGroup metrics) {
    this.writer = writer;
    this.metrics = metrics;
  }

  @Override
  public void write(RowData row, Context context) throws IOException, InterruptedException {
    try {
      writer.write(row, context);
    } catch (IOException | RuntimeException e) {
      metrics.getNumRecordsSendErrorsCounter().inc();
      throw e;
    }
    metrics.getNumRecordsSendCounter().inc();
  }

  @Override
  public Collection<WriteResult> prepareCommit() throws IOException, InterruptedException {
    Collection<WriteResult> results = writer.prepareCommit();
    long bytes = 0;
    for (WriteResult result : results) {
      bytes += size(result.dataFiles()) + size(result.deleteFiles());
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
