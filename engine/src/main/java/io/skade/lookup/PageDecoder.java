package io.skade.lookup;

import io.airlift.compress.Decompressor;
import io.airlift.compress.lz4.Lz4Decompressor;
import io.airlift.compress.snappy.SnappyDecompressor;
import io.airlift.compress.zstd.ZstdDecompressor;
import io.skade.lookup.FileBytes.Region;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.function.Supplier;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.BytesUtils;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ValuesType;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.values.ValuesReader;
import org.apache.parquet.column.values.dictionary.PlainValuesDictionary;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridDecoder;
import org.apache.parquet.compression.CompressionCodecFactory;
import org.apache.parquet.format.DataPageHeader;
import org.apache.parquet.format.DataPageHeaderV2;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.PageType;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * A Parquet page's bytes to its values: the header parsed by parquet-mr ({@code
 * Util.readPageHeader}), the bytes decompressed, the values decoded into a {@link DecodedPage}; a
 * dictionary page into a dictionary that threads can share.
 *
 * <p>Hand-written only where ProbeDecodingBenchmark shows parquet-mr slower doing the same:
 * decompression calls aircompressor's pure-Java decompressors on the page's bytes directly (1M rows
 * in 32 files: header and LZ4 decompression of a 250-row page 0.46 to 0.83 times the time through
 * parquet-mr's {@code BytesInputDecompressor}, allocating a third as much), and PLAIN pages of
 * longs, ints and byte strings are decoded straight from their bytes (0.09 to 0.35 times the time
 * of parquet-mr's {@code ValuesReader}s, which make a {@code Binary} per string). Every other
 * encoding and type, the levels and the dictionaries are decoded by parquet-mr's readers, other
 * codecs by its codec factory.
 */
final class PageDecoder {
  private static final ParquetReadOptions OPTIONS = ParquetReadOptions.builder().build();
  private static final ParquetMetadataConverter METADATA = new ParquetMetadataConverter(OPTIONS);
  private static final CompressionCodecFactory CODECS = OPTIONS.getCodecFactory();

  /** Decompressors per thread, pure Java: a JNI call per small page costs more than it saves. */
  private static final ThreadLocal<Decompressor> ZSTD =
      ThreadLocal.withInitial(ZstdDecompressor::new);

  private static final ThreadLocal<Decompressor> LZ4 =
      ThreadLocal.withInitial(Lz4Decompressor::new);
  private static final ThreadLocal<Decompressor> SNAPPY =
      ThreadLocal.withInitial(SnappyDecompressor::new);

  private PageDecoder() {}

  /** A decoded page: PLAIN ones of longs, ints and byte strings here, others by parquet-mr. */
  static DecodedPage decode(ColumnDescriptor column, DataPage data, Dictionary dictionary)
      throws IOException {
    DecodedPage values = plain(column, data);
    return values != null ? values : decoded(column, data, dictionary);
  }

  /**
   * A PLAIN page of longs, ints or byte strings (at most one definition level) read straight from
   * its bytes, which the values then point into; null for other pages.
   */
  private static DecodedPage plain(ColumnDescriptor column, DataPage data) throws IOException {
    PrimitiveTypeName physical = column.getPrimitiveType().getPrimitiveTypeName();
    int maxDefinition = column.getMaxDefinitionLevel();
    if (data.encoding() != Encoding.PLAIN
        || maxDefinition > 1
        || column.getMaxRepetitionLevel() > 0
        || physical != PrimitiveTypeName.INT64
            && physical != PrimitiveTypeName.INT32
            && physical != PrimitiveTypeName.BINARY) {
      return null;
    }
    int count = data.count();
    byte[] bytes = data.values();
    ByteBuffer little = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    int at = 0;
    boolean[] nulls = null;
    if (maxDefinition == 1) {
      RunLengthBitPackingHybridDecoder levels;
      if (data.levels() == null) { // V1: the levels, after their length, lead the page
        if (data.definition() != Encoding.RLE) {
          return null;
        }
        int length = little.getInt(0);
        levels =
            new RunLengthBitPackingHybridDecoder(1, new ByteArrayInputStream(bytes, 4, length));
        at = 4 + length;
      } else {
        levels =
            new RunLengthBitPackingHybridDecoder(
                1,
                new ByteArrayInputStream(
                    data.levels(),
                    data.repetitionLength(),
                    data.levels().length - data.repetitionLength()));
      }
      for (int i = 0; i < count; i++) {
        if (levels.readInt() == 0) {
          nulls = nulls == null ? new boolean[count] : nulls;
          nulls[i] = true;
        }
      }
    }
    long[] longs = physical == PrimitiveTypeName.INT64 ? new long[count] : null;
    int[] ints = physical == PrimitiveTypeName.INT32 ? new int[count] : null;
    int[] spans = physical == PrimitiveTypeName.BINARY ? new int[2 * count] : null;
    for (int i = 0; i < count; i++) {
      if (nulls != null && nulls[i]) {
        continue;
      }
      if (longs != null) {
        longs[i] = little.getLong(at);
        at += 8;
      } else if (ints != null) {
        ints[i] = little.getInt(at);
        at += 4;
      } else {
        spans[2 * i] = at + 4;
        at += 4 + little.getInt(at);
        spans[2 * i + 1] = at;
      }
    }
    return new DecodedPage(
        count,
        longs,
        ints,
        spans == null ? null : bytes,
        spans,
        null,
        nulls,
        nulls == null && ascending(longs, ints, count));
  }

  /**
   * A page of any other encoding or type, decoded through parquet-mr's readers ({@code dictionary}:
   * the column chunk's, when the page's encoding uses one).
   */
  private static DecodedPage decoded(ColumnDescriptor column, DataPage data, Dictionary dictionary)
      throws IOException {
    Page page = reader(column, data, dictionary);
    PrimitiveTypeName physical = column.getPrimitiveType().getPrimitiveTypeName();
    int count = page.count;
    // Few objects per page: primitives in arrays, byte strings in one array with their ends.
    long[] longs = physical == PrimitiveTypeName.INT64 ? new long[count] : null;
    int[] ints = physical == PrimitiveTypeName.INT32 ? new int[count] : null;
    boolean binary =
        physical == PrimitiveTypeName.BINARY || physical == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
    java.io.ByteArrayOutputStream bytes =
        binary ? new java.io.ByteArrayOutputStream(data.values().length) : null;
    int[] spans = binary ? new int[2 * count] : null;
    Object[] objects = longs == null && ints == null && !binary ? new Object[count] : null;
    boolean[] nulls = null;
    for (int i = 0; i < count; i++) {
      if (!page.defined()) {
        nulls = nulls == null ? new boolean[count] : nulls;
        nulls[i] = true;
      } else if (longs != null) {
        longs[i] = page.values.readLong();
      } else if (ints != null) {
        ints[i] = page.values.readInteger();
      } else if (binary) {
        Binary value = page.values.readBytes();
        spans[2 * i] = bytes.size();
        bytes.write(value.getBytesUnsafe(), 0, value.length());
      } else {
        objects[i] = stored(page.values, physical);
      }
      if (binary) {
        spans[2 * i] = nulls != null && nulls[i] ? bytes.size() : spans[2 * i];
        spans[2 * i + 1] = bytes.size();
      }
    }
    return new DecodedPage(
        count,
        longs,
        ints,
        binary ? bytes.toByteArray() : null,
        spans,
        objects,
        nulls,
        nulls == null && ascending(longs, ints, count));
  }

  /** Whether the first {@code count} longs (or ints) never decrease. */
  private static boolean ascending(long[] longs, int[] ints, int count) {
    if (longs == null && ints == null) {
      return false;
    }
    for (int i = 1; i < count; i++) {
      if (longs != null ? longs[i] < longs[i - 1] : ints[i] < ints[i - 1]) {
        return false;
      }
    }
    return true;
  }

  /** A decompressed page's values, ready to read in row order. */
  private static Page reader(ColumnDescriptor column, DataPage data, Dictionary dictionary)
      throws IOException {
    int maxDefinition = column.getMaxDefinitionLevel();
    ValuesReader values =
        data.encoding().usesDictionary()
            ? data.encoding().getDictionaryBasedValuesReader(column, ValuesType.VALUES, dictionary)
            : data.encoding().getValuesReader(column, ValuesType.VALUES);
    if (data.levels() == null) {
      ByteBufferInputStream stream = ByteBufferInputStream.wrap(ByteBuffer.wrap(data.values()));
      data.repetition()
          .getValuesReader(column, ValuesType.REPETITION_LEVEL)
          .initFromPage(data.count(), stream);
      ValuesReader definition =
          data.definition().getValuesReader(column, ValuesType.DEFINITION_LEVEL);
      definition.initFromPage(data.count(), stream);
      values.initFromPage(data.count(), stream);
      return new Page(data.count(), maxDefinition, definition::readInteger, values);
    }
    RunLengthBitPackingHybridDecoder definition =
        maxDefinition == 0
            ? null
            : new RunLengthBitPackingHybridDecoder(
                BytesUtils.getWidthFromMaxInt(maxDefinition),
                new ByteArrayInputStream(
                    data.levels(),
                    data.repetitionLength(),
                    data.levels().length - data.repetitionLength()));
    values.initFromPage(data.count(), ByteBufferInputStream.wrap(ByteBuffer.wrap(data.values())));
    return new Page(
        data.count(), maxDefinition, definition == null ? () -> 0 : definition::readInt, values);
  }

  /**
   * A data page decompressed: V1 pages whole (levels and values), V2 pages with their uncompressed
   * levels apart.
   */
  record DataPage(
      int count,
      Encoding repetition,
      Encoding definition,
      Encoding encoding,
      byte[] levels,
      int repetitionLength,
      byte[] values) {}

  /**
   * The data page at {@code offset} in {@code region}: its header parsed (parquet-mr's {@code
   * Util.readPageHeader}) and its bytes decompressed; {@code page} names it in an error.
   */
  static DataPage read(
      CompressionCodecName codec, Region region, long offset, int length, Supplier<String> page)
      throws IOException {
    ByteBufferInputStream in = region.stream(offset, length);
    PageHeader header = Util.readPageHeader(in);
    int start = region.index(offset) + length - in.available();
    if (header.getType() == PageType.DATA_PAGE) {
      DataPageHeader data = header.getData_page_header();
      return new DataPage(
          data.getNum_values(),
          METADATA.getEncoding(data.getRepetition_level_encoding()),
          METADATA.getEncoding(data.getDefinition_level_encoding()),
          METADATA.getEncoding(data.getEncoding()),
          null,
          0,
          decompress(
              codec,
              region.bytes,
              start,
              header.getCompressed_page_size(),
              header.getUncompressed_page_size()));
    }
    if (header.getType() == PageType.DATA_PAGE_V2) {
      DataPageHeaderV2 data = header.getData_page_header_v2();
      int levels =
          data.getRepetition_levels_byte_length() + data.getDefinition_levels_byte_length();
      int valuesStart = start + levels;
      int valuesLength = header.getCompressed_page_size() - levels;
      return new DataPage(
          data.getNum_values(),
          null,
          null,
          METADATA.getEncoding(data.getEncoding()),
          Arrays.copyOfRange(region.bytes, start, valuesStart),
          data.getRepetition_levels_byte_length(),
          data.isIs_compressed()
              ? decompress(
                  codec,
                  region.bytes,
                  valuesStart,
                  valuesLength,
                  header.getUncompressed_page_size() - levels)
              : Arrays.copyOfRange(region.bytes, valuesStart, valuesStart + valuesLength));
    }
    throw new IOException(page.get() + " is a " + header.getType() + ", not a data page");
  }

  /** A dictionary as a probe keeps it, with its estimated heap bytes. */
  record KeptDictionary(Dictionary dictionary, long weight) {}

  /**
   * The dictionary page at {@code offset} in {@code region}, decoded; {@code chunk} names its
   * column chunk in an error.
   */
  static KeptDictionary dictionary(
      ColumnDescriptor column,
      CompressionCodecName codec,
      Region region,
      long offset,
      int length,
      Supplier<String> chunk)
      throws IOException {
    ByteBufferInputStream in = region.stream(offset, length);
    PageHeader header = Util.readPageHeader(in);
    if (header.getType() != PageType.DICTIONARY_PAGE) {
      throw noDictionary(chunk);
    }
    int start = region.index(offset) + length - in.available();
    byte[] bytes =
        decompress(
            codec,
            region.bytes,
            start,
            header.getCompressed_page_size(),
            header.getUncompressed_page_size());
    DictionaryPage page =
        new DictionaryPage(
            BytesInput.from(bytes),
            header.getDictionary_page_header().getNum_values(),
            METADATA.getEncoding(header.getDictionary_page_header().getEncoding()));
    Dictionary dictionary = threadSafe(page.getEncoding().initDictionary(column, page));
    // Decoded entries take about twice their encoded bytes.
    return new KeptDictionary(dictionary, 64L + 2L * bytes.length + 16L * page.getDictionarySize());
  }

  static IOException noDictionary(Supplier<String> chunk) {
    return new IOException(chunk.get() + " has dictionary-encoded pages but no dictionary page");
  }

  /**
   * A dictionary whose byte strings are each backed by an array of their own. Parquet's share one
   * {@code ByteBuffer}, whose position and limit every read of a value moves, so threads decoding
   * pages of one file at once (asynchronous lookups) read each other's bytes.
   */
  private static Dictionary threadSafe(Dictionary dictionary) {
    if (!(dictionary instanceof PlainValuesDictionary.PlainBinaryDictionary)) {
      return dictionary; // numbers are decoded into arrays of primitives
    }
    Binary[] values = new Binary[dictionary.getMaxId() + 1];
    for (int id = 0; id < values.length; id++) {
      values[id] = Binary.fromConstantByteArray(dictionary.decodeToBinary(id).getBytes());
    }
    return new Dictionary(dictionary.getEncoding()) {
      @Override
      public Binary decodeToBinary(int id) {
        return values[id];
      }

      @Override
      public int getMaxId() {
        return values.length - 1;
      }
    };
  }

  private static byte[] decompress(
      CompressionCodecName codec, byte[] from, int start, int length, int size) throws IOException {
    Decompressor decompressor =
        switch (codec) {
          case ZSTD -> ZSTD.get();
          case LZ4_RAW -> LZ4.get();
          case SNAPPY -> SNAPPY.get();
          default -> null;
        };
    if (codec == CompressionCodecName.UNCOMPRESSED) {
      return Arrays.copyOfRange(from, start, start + length);
    }
    if (decompressor == null) {
      return CODECS
          .getDecompressor(codec)
          .decompress(BytesInput.from(from, start, length), size)
          .toByteArray();
    }
    byte[] to = new byte[size];
    int written = decompressor.decompress(from, start, length, to, 0, size);
    if (written != size) {
      throw new IOException(codec + " page of " + size + " bytes decompressed to " + written);
    }
    return to;
  }

  /** One data page's values, read in row order. */
  private static final class Page {
    final int count;
    final int maxDefinition;
    final Levels definition;
    final ValuesReader values;

    Page(int count, int maxDefinition, Levels definition, ValuesReader values) {
      this.count = count;
      this.maxDefinition = maxDefinition;
      this.definition = definition;
      this.values = values;
    }

    /** Whether the next row has a value (else it is null and no value is stored). */
    boolean defined() throws IOException {
      return definition.next() == maxDefinition;
    }
  }

  private interface Levels {
    int next() throws IOException;
  }

  private static Object stored(ValuesReader values, PrimitiveTypeName physical) {
    return switch (physical) {
      case INT32 -> values.readInteger();
      case INT64 -> values.readLong();
      case FLOAT -> values.readFloat();
      case DOUBLE -> values.readDouble();
      case BOOLEAN -> values.readBoolean();
      case BINARY, FIXED_LEN_BYTE_ARRAY -> values.readBytes();
      case INT96 -> throw new IllegalStateException("INT96 is not decoded here");
    };
  }
}
