package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The search of a sorted decoded page for a key's first row ({@code Values.firstCandidate}): an
 * interpolated guess, a gallop and a binary search must find what a scan finds, however the values
 * are spread.
 */
class ProbeFileSearchTest {
  private static final int PAGES = 2_000;

  @Test
  void findsTheFirstRowNotBelowTheKeyAsAScanDoesOverEvenSkewedAndRepeatedLongs() {
    SplittableRandom random = new SplittableRandom(11);
    for (int page = 0; page < PAGES; page++) {
      long[] values = sortedLongs(random, 1 + random.nextInt(300));
      DecodedPage sorted =
          new DecodedPage(values.length, values, null, null, null, null, null, true);
      for (int probe = 0; probe < 50; probe++) {
        int from = random.nextInt(values.length + 1);
        int to = from + random.nextInt(values.length - from + 1);
        long key =
            probe % 5 == 0
                ? values[random.nextInt(values.length)]
                : values[0] - 3 + random.nextLong(values[values.length - 1] - values[0] + 7);
        assertThat(sorted.firstCandidate(from, to, key))
            .as("key %d in rows [%d, %d) of %s", key, from, to, Arrays.toString(values))
            .isEqualTo(scan(values, from, to, key));
      }
    }
  }

  @Test
  void findsTheFirstRowOfIntsAtTheExtremesOfTheirRange() {
    int[] values = new int[100];
    for (int i = 0; i < values.length; i++) {
      values[i] = i < 50 ? Integer.MIN_VALUE + i : Integer.MAX_VALUE - 99 + i;
    }
    DecodedPage sorted = new DecodedPage(values.length, null, values, null, null, null, null, true);
    long[] asLongs = Arrays.stream(values).asLongStream().toArray();
    for (int key :
        new int[] {
          Integer.MIN_VALUE,
          Integer.MIN_VALUE + 49,
          Integer.MIN_VALUE + 50,
          0,
          Integer.MAX_VALUE - 50,
          Integer.MAX_VALUE - 49,
          Integer.MAX_VALUE
        }) {
      assertThat(sorted.firstCandidate(0, values.length, key))
          .as("key %d", key)
          .isEqualTo(scan(asLongs, 0, values.length, key));
    }
  }

  /** Ascending longs, spread evenly, in clusters or exponentially, with runs of one value. */
  private static long[] sortedLongs(SplittableRandom random, int count) {
    long[] values = new long[count];
    long value = random.nextLong(-1_000_000, 1_000_000);
    int shape = random.nextInt(3);
    for (int i = 0; i < count; i++) {
      values[i] = value;
      long step =
          switch (shape) {
            case 0 -> 1 + random.nextInt(3);
            case 1 -> random.nextInt(10) == 0 ? 100_000 : random.nextInt(2);
            default -> (long) Math.pow(2, Math.min(40, i / 4)) * random.nextInt(2);
          };
      value += step;
    }
    return values;
  }

  private static int scan(long[] values, int from, int to, long key) {
    for (int i = from; i < to; i++) {
      if (values[i] >= key) {
        return i;
      }
    }
    return to;
  }
}
