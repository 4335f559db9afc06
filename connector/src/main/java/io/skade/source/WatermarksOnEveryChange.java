package io.skade.source;

import org.apache.flink.api.common.eventtime.TimestampAssigner;
import org.apache.flink.api.common.eventtime.TimestampAssignerSupplier;
import org.apache.flink.api.common.eventtime.WatermarkAlignmentParams;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkGeneratorSupplier;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;

/**
 * A watermark strategy whose generators emit after every change what they would emit periodically.
 * Flink generates a FLIP-27 source's watermark per split and drops a split's output, with any
 * watermark its generator has not emitted yet, when the split ends; a skade split (a commit's
 * changes in one slot) often ends within one periodic interval, so a periodic strategy on a skade
 * source would advance no watermark. Timestamps, idleness and alignment stay the wrapped
 * strategy's.
 */
public final class WatermarksOnEveryChange<T> implements WatermarkStrategy<T> {
  private static final long serialVersionUID = 1L;

  private final WatermarkStrategy<T> strategy;

  private WatermarksOnEveryChange(WatermarkStrategy<T> strategy) {
    this.strategy = strategy;
  }

  /** {@code strategy}, its watermark emitted after every change as well as periodically. */
  public static <T> WatermarkStrategy<T> of(WatermarkStrategy<T> strategy) {
    return new WatermarksOnEveryChange<>(strategy);
  }

  @Override
  public WatermarkGenerator<T> createWatermarkGenerator(
      WatermarkGeneratorSupplier.Context context) {
    WatermarkGenerator<T> generator = strategy.createWatermarkGenerator(context);
    return new WatermarkGenerator<>() {
      @Override
      public void onEvent(T event, long timestamp, WatermarkOutput output) {
        generator.onEvent(event, timestamp, output);
        generator.onPeriodicEmit(output);
      }

      @Override
      public void onPeriodicEmit(WatermarkOutput output) {
        generator.onPeriodicEmit(output);
      }
    };
  }

  @Override
  public TimestampAssigner<T> createTimestampAssigner(TimestampAssignerSupplier.Context context) {
    return strategy.createTimestampAssigner(context);
  }

  @Override
  public WatermarkAlignmentParams getAlignmentParameters() {
    return strategy.getAlignmentParameters();
  }
}
