package io.skade.source;

import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;

/**
 * The watermark generator of {@link SkadeSource#commitTimeWatermarks}: the reader emits the
 * watermark itself, on its main output, so each split's own output stays out of it. An output that
 * saw changes (a split's; the main output sees none) is marked idle at each periodic emit, so that
 * the splits' side neither holds the reader back nor keeps it active once its splits are done.
 */
final class SplitOutputsIdle<T> implements WatermarkGenerator<T> {
  private boolean seen;

  @Override
  public void onEvent(T event, long eventTimestamp, WatermarkOutput output) {
    seen = true;
  }

  @Override
  public void onPeriodicEmit(WatermarkOutput output) {
    if (seen) {
      output.markIdle();
    }
  }
}
