package io.skade.lookup;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.parquet.column.values.bloomfilter.XxHash;
import org.apache.parquet.format.BloomFilterHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.io.api.Binary;

/**
 * A split-block bloom filter as Parquet writes it, read-only, and the hash a probe asks it with.
 * Its header is parsed by parquet-mr ({@code Util.readBloomFilterHeader}) and its hash is
 * parquet-mr's {@code XxHash}.
 *
 * <p>Hand-written because parquet-mr's {@code BlockSplitBloomFilter} is not thread-safe: {@code
 * findHash} computes its mask in a field shared by all callers and {@code hash} fills one shared
 * buffer, so probes on several threads ({@code lookup.async}) could see another probe's. This one
 * keeps both on the stack. ProbeDecodingBenchmark finds neither test faster (35 to 69 ns here, 42
 * to 56 ns in parquet-mr's, over the 1M-row table's filters across runs on a shared machine);
 * parquet-mr's hash of a long is about 10 ns faster (12 to 18 ns against 23 to 26), once per probe
 * of 3 to 25 us, which does not pay for a filter threads cannot share.
 */
record BloomCheck(int[] words) {
  /** Marks a key value without a bloom filter hash (a boolean): its filters are not asked. */
  static final long NO_HASH = 0;

  private static final XxHash XXHASH = new XxHash();
  private static final int[] SALT = {
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31
  };

  /** The filter that {@code in} holds (header and bits), or null when it is of another kind. */
  static BloomCheck read(InputStream in) throws IOException {
    BloomFilterHeader header = Util.readBloomFilterHeader(in);
    if (!header.getAlgorithm().isSetBLOCK()
        || !header.getHash().isSetXXHASH()
        || !header.getCompression().isSetUNCOMPRESSED()
        || header.getNumBytes() <= 0
        || header.getNumBytes() > in.available()) {
      return null; // a filter this reader does not know: the row group is read
    }
    byte[] bits = new byte[header.getNumBytes()];
    in.readNBytes(bits, 0, bits.length);
    int[] words = new int[bits.length / 4];
    ByteBuffer.wrap(bits).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(words);
    return new BloomCheck(words);
  }

  /** Whether a value of this hash may be in the filter (Parquet's findHash). */
  boolean mayContain(long hash) {
    long blocks = words.length / SALT.length;
    int block = (int) (((hash >>> 32) * blocks) >> 32);
    int key = (int) hash;
    for (int i = 0; i < SALT.length; i++) {
      if ((words[block * SALT.length + i] & (1 << ((key * SALT[i]) >>> 27))) == 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * The hash Parquet's bloom filters (XXH64 of the plain encoding) hold for a stored value, or
   * {@link #NO_HASH} for a value they are not asked for; computed once per probe rather than per
   * row group.
   */
  static long hash(Object value) {
    if (value instanceof Binary binary) {
      return XXHASH.hashBytes(binary.getBytes());
    }
    if (value instanceof Integer i) {
      return XXHASH.hashBytes(littleEndian(i, 4));
    } else if (value instanceof Long l) {
      return XXHASH.hashBytes(littleEndian(l, 8));
    } else if (value instanceof Float f) {
      return XXHASH.hashBytes(littleEndian(Float.floatToRawIntBits(f), 4));
    } else if (value instanceof Double d) {
      return XXHASH.hashBytes(littleEndian(Double.doubleToRawLongBits(d), 8));
    }
    return NO_HASH;
  }

  private static byte[] littleEndian(long bits, int size) {
    byte[] bytes = new byte[size];
    for (int i = 0; i < size; i++) {
      bytes[i] = (byte) (bits >>> (8 * i));
    }
    return bytes;
  }
}
