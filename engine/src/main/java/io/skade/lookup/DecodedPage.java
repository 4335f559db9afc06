package io.skade.lookup;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.parquet.io.api.Binary;

/**
 * One data page's values, decoded as stored (null where a row has none): longs and ints in
 * primitive arrays, byte strings in one array with each value's start and end side by side in
 * {@code spans} (a PLAIN page's own bytes), others as parquet-mr's readers read them; {@code
 * sorted} when longs or ints never decrease. This is what the page cache keeps, in few objects (for
 * the garbage collector, and for the processor's cache: a warm probe of a random key touches each
 * array once), so that a warm probe compares and picks values without decoding.
 *
 * <p>Hand-written because parquet-mr has no decoded page to keep: its {@code ValuesReader}s yield
 * values one at a time (a {@code Binary} each for strings), and nothing of it searches a sorted
 * page. ProbeDecodingBenchmark (1M rows in 32 files): a key's first row over kept pages 0.44-0.51
 * us here against 4.6-5.4 us with parquet-mr's pruning and a scan of its decoded page.
 */
record DecodedPage(
    int count,
    long[] longs,
    int[] ints,
    byte[] bytes,
    int[] spans,
    Object[] objects,
    boolean[] nulls,
    boolean sorted) {
  /**
   * In a page of sorted longs or ints ({@code sorted}), the first of rows {@code [from, to)} whose
   * value is not below {@code value}; else {@code from}. One guess by interpolation comes first,
   * then a gallop from it and a binary search: keys spread evenly (ids, times) are found at the
   * guess, and the page's values are loaded from memory in about two steps (its two ends at once,
   * then the guess) instead of a binary search's five or more.
   */
  int firstCandidate(int from, int to, Object value) {
    if (!sorted) {
      return from;
    }
    long key = longs != null ? (Long) value : (Integer) value;
    int low = from;
    int high = to;
    if (high - low > 16) {
      long first = at(low);
      long last = at(high - 1);
      if (key <= first) {
        return low;
      }
      if (key > last) {
        return high;
      }
      double fraction = ((double) key - first) / ((double) last - first); // no overflow
      int guess = Math.min(high - 1, low + (int) (fraction * (high - 1 - low)));
      int step = 1;
      if (at(guess) < key) {
        low = guess + 1; // every row up to the guess is below the key
        int next = low;
        while (next < high && at(next) < key) {
          low = next + 1;
          next = guess + (step <<= 1);
        }
        high = Math.min(high, next);
      } else {
        high = guess; // rows from the guess on are not below the key
        int next = guess - 1;
        while (next >= low && at(next) >= key) {
          high = next;
          next = guess - (step <<= 1);
        }
        low = Math.max(low, next + 1);
      }
    }
    while (low < high) {
      int mid = (low + high) >>> 1;
      if (at(mid) < key) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  private long at(int i) {
    return longs != null ? longs[i] : ints[i];
  }

  Object get(int i) {
    if (nulls != null && nulls[i]) {
      return null;
    }
    if (longs != null) {
      return longs[i];
    }
    if (ints != null) {
      return ints[i];
    }
    if (bytes != null) {
      return Binary.fromConstantByteArray(bytes, spans[2 * i], spans[2 * i + 1] - spans[2 * i]);
    }
    return objects[i];
  }

  /** Value {@code i} of a page of byte strings, as UTF-8 text. */
  String string(int i) {
    return nulls != null && nulls[i]
        ? null
        : new String(bytes, spans[2 * i], spans[2 * i + 1] - spans[2 * i], StandardCharsets.UTF_8);
  }

  boolean equals(int i, Object value) {
    if (nulls != null && nulls[i]) {
      return false;
    }
    if (longs != null) {
      return longs[i] == (Long) value;
    }
    if (ints != null) {
      return ints[i] == (Integer) value;
    }
    if (bytes != null) {
      Binary binary = (Binary) value;
      return Arrays.equals(
          bytes, spans[2 * i], spans[2 * i + 1], binary.getBytesUnsafe(), 0, binary.length());
    }
    return value.equals(objects[i]);
  }

  /** Estimated heap bytes. */
  long weight() {
    long size = 64L + (nulls == null ? 0 : count);
    if (longs != null) {
      return size + 8L * count;
    }
    if (ints != null) {
      return size + 4L * count;
    }
    if (bytes != null) {
      return size + bytes.length + 8L * count;
    }
    return size + 24L * count;
  }
}
