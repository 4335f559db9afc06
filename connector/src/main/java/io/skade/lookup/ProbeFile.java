package io.skade.lookup;

import io.airlift.compress.Decompressor;
import io.airlift.compress.lz4.Lz4Decompressor;
import io.airlift.compress.snappy.SnappyDecompressor;
import io.airlift.compress.zstd.ZstdDecompressor;
import io.skade.changelog.DataFileRows;
import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.IntFunction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.IOUtil;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;
import org.apache.iceberg.util.UUIDUtil;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.bytes.BytesUtils;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ValuesType;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.column.values.ValuesReader;
import org.apache.parquet.column.values.bloomfilter.XxHash;
import org.apache.parquet.column.values.dictionary.PlainValuesDictionary;
import org.apache.parquet.column.values.rle.RunLengthBitPackingHybridDecoder;
import org.apache.parquet.compression.CompressionCodecFactory;
import org.apache.parquet.format.BloomFilterHeader;
import org.apache.parquet.format.DataPageHeader;
import org.apache.parquet.format.DataPageHeaderV2;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.PageType;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.internal.column.columnindex.BoundaryOrder;
import org.apache.parquet.internal.column.columnindex.ColumnIndex;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.apache.parquet.internal.hadoop.metadata.IndexReference;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveComparator;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * A Parquet data file held open for point lookups. Opening it reads the file's tail once: the
 * footer, the page indexes and the bloom filters, which Parquet writes together at the end of the
 * file (one read, a second when they do not fit the first). A probe then prunes row groups by
 * their statistics and the key column's pages by its column index (both by bisection when the
 * file is sorted by the key); when a candidate page is not decoded yet, the bloom filters decide
 * whether to read it. It reads, in one byte-range read per row group where the pages lie close
 * together, only the pages of every column that cover the rows of a candidate key page, decodes
 * them (PLAIN pages of longs, ints and byte strings straight from their bytes) and keeps the
 * decoded pages (and dictionaries), within a bound in bytes that the JVM's probes share ({@link
 * PageCache}). A probe whose pages are kept reads and decodes nothing: it compares the key
 * page's values (by bisection in a sorted page) and converts the matching rows' values to
 * Iceberg's generic ones.
 *
 * <p>Only flat files whose columns carry field ids and page offset indexes are read this way;
 * {@link #open} returns null for any other file, which is then read through Iceberg's reader.
 */
final class ProbeFile implements Closeable {
  private static final ParquetReadOptions OPTIONS = ParquetReadOptions.builder().build();
  private static final ParquetMetadataConverter METADATA = new ParquetMetadataConverter(OPTIONS);
  private static final CompressionCodecFactory CODECS = OPTIONS.getCodecFactory();
  /** Bytes read from the end of the file on open: the footer and usually its indexes. */
  private static final int TAIL = 64 << 10;
  /** Pages this close are read together: one read costs more than these bytes. */
  private static final int MAX_GAP = 16 << 10;
  /** Decompressors per thread, pure Java: a JNI call per small page costs more than it saves. */
  private static final ThreadLocal<Decompressor> ZSTD =
      ThreadLocal.withInitial(ZstdDecompressor::new);
  private static final ThreadLocal<Decompressor> LZ4 =
      ThreadLocal.withInitial(Lz4Decompressor::new);
  private static final ThreadLocal<Decompressor> SNAPPY =
      ThreadLocal.withInitial(SnappyDecompressor::new);
  private static final byte[] MAGIC = "PAR1".getBytes(StandardCharsets.US_ASCII);
  /** A key value no value of the file's column can equal. */
  static final Object NO_VALUE = new Object();
  /** Marks a key value without a bloom filter hash (a boolean): its filters are not asked. */
  private static final long NO_HASH = 0;
  private static final XxHash XXHASH = new XxHash();
  private static final Region[] NO_REGIONS = new Region[0];
  /** Parquet's order of plain INT64 and INT32 columns (signed): its comparators are not public. */
  private static final Object SIGNED_INT64 = org.apache.parquet.schema.Types
      .required(PrimitiveTypeName.INT64).named("long").comparator();
  private static final Object SIGNED_INT32 = org.apache.parquet.schema.Types
      .required(PrimitiveTypeName.INT32).named("int").comparator();

  private final String location;
  private final Source source;
  private final MessageType fileSchema;
  private final List<BlockMetaData> groups;
  private final long[] groupStarts;
  /** The file's columns in order, and the column index of each table field id. */
  private final ColumnDescriptor[] columns;
  /** Each column's order, looked up once: a probe compares with it several times. */
  private final PrimitiveComparator<Object>[] orders;
  private final Map<Integer, Integer> columnOfField = new HashMap<>();
  private final OffsetIndex[][] offsets; // [row group][column]
  /** Each page's first row [row group][column][page], from the offset index, for searches. */
  private final long[][][] firstRows;
  private final Object[][][] pageMins; // [row group][column][page], the stored values
  private final Object[][][] pageMaxs;
  private final boolean[][][] nullPages;
  /**
   * The page bounds [row group][column] of a signed integral column whose pages ascend, as
   * longs, min and max of each page in turn (else null): searched without boxing, in one array.
   */
  private final long[][][] pageBounds;
  /** Whether a column chunk's pages have ascending bounds and no null page (a sorted file). */
  private final boolean[][] ascendingPages;
  private final Bloom[][] blooms;
  /** Each column chunk's statistics, as stored values (null: unknown), and whether all null. */
  private final Object[][] mins;
  private final Object[][] maxs;
  private final boolean[][] allNull;
  /** Whether a column's row groups have ascending bounds (a file sorted by it). */
  private final boolean[] ascendingGroups;
  /** The row groups' bounds of such a column when signed integral, as {@link #pageBounds}. */
  private final long[][] groupBounds;
  /** An empty record of the schema probes last asked for, copied for each row found. */
  private volatile GenericRecord template;
  /** The plan of the schema and key probes asked with last: a lookup asks with the same ones. */
  private volatile Plan plan;
  /** Where each column chunk's dictionary page starts, or -1 without one. */
  private final long[][] dictionaryStarts;
  /**
   * Decoded pages [row group][column][page] and dictionaries [row group][column], set when
   * decoded and cleared when the page cache evicts them. Both are immutable once set (a record's
   * final fields), so a probe on another thread sees them whole.
   */
  private final Values[][][] decoded;
  private final DictionaryRef[][] dictionaries;
  /** The bytes of the page indexes and bloom filters, until every row group's are parsed. */
  private Region indexes; // guarded by this once the file is open
  /** Whether a row group's page indexes and bloom filters are parsed (1), by row group. */
  private final AtomicIntegerArray indexed;
  private int groupsIndexed; // guarded by this

  private record DictionaryRef(Dictionary dictionary) {}
  /** Bounds the decoded pages and dictionaries this file keeps. */
  private final PageCache pages;

  /**
   * Bounds the decoded pages and dictionaries that open files keep, by bytes: it is told of each
   * one decoded and, to evict one, calls {@link #forget}.
   */
  interface PageCache {
    /**
     * Page {@code page} (or, when -1, the dictionary) of column {@code c} in row group {@code g}
     * of {@code file} was decoded and is kept.
     */
    void added(ProbeFile file, int g, int c, int page, long bytes);
  }

  private ProbeFile(String location, Source source, ParquetMetadata footer, PageCache pages) {
    this.location = location;
    this.source = source;
    this.pages = pages;
    this.fileSchema = footer.getFileMetaData().getSchema();
    this.groups = footer.getBlocks();
    this.columns = fileSchema.getColumns().toArray(new ColumnDescriptor[0]);
    this.orders = orders(columns);
    for (int c = 0; c < columns.length; c++) {
      PrimitiveType type = columns[c].getPrimitiveType();
      if (columns[c].getPath().length == 1 && columns[c].getMaxRepetitionLevel() == 0
          && type.getId() != null) {
        columnOfField.put(type.getId().intValue(), c);
      }
    }
    int count = groups.size();
    this.groupStarts = new long[count];
    long start = 0;
    for (int g = 0; g < count; g++) {
      groupStarts[g] = start;
      start += groups.get(g).getRowCount();
    }
    this.offsets = new OffsetIndex[count][columns.length];
    this.firstRows = new long[count][columns.length][];
    this.pageMins = new Object[count][columns.length][];
    this.pageMaxs = new Object[count][columns.length][];
    this.nullPages = new boolean[count][columns.length][];
    this.pageBounds = new long[count][columns.length][];
    this.ascendingPages = new boolean[count][columns.length];
    this.blooms = new Bloom[count][columns.length];
    this.dictionaryStarts = new long[count][columns.length];
    this.decoded = new Values[count][columns.length][];
    this.indexed = new AtomicIntegerArray(count);
    this.mins = new Object[count][columns.length];
    this.maxs = new Object[count][columns.length];
    this.allNull = new boolean[count][columns.length];
    this.dictionaries = new DictionaryRef[count][columns.length];
    for (int g = 0; g < count; g++) {
      for (int c = 0; c < columns.length; c++) {
        ColumnChunkMetaData chunk = groups.get(g).getColumns().get(c);
        Statistics<?> stats = chunk.getStatistics();
        if (stats != null && !stats.isEmpty()) {
          allNull[g][c] = stats.isNumNullsSet() && stats.getNumNulls() == chunk.getValueCount();
          if (stats.hasNonNullValue()) {
            mins[g][c] = stats.genericGetMin();
            maxs[g][c] = stats.genericGetMax();
          }
        }
        dictionaryStarts[g][c] = chunk.hasDictionaryPage()
            && chunk.getStartingPos() < chunk.getFirstDataPageOffset()
            ? chunk.getStartingPos() : -1;
      }
    }
    this.ascendingGroups = new boolean[columns.length];
    for (int c = 0; c < columns.length; c++) {
      boolean ascending = true;
      for (int g = 0; g < count && ascending; g++) {
        ascending = mins[g][c] != null && (g == 0
            || orders[c].compare(mins[g - 1][c], mins[g][c]) <= 0
            && orders[c].compare(maxs[g - 1][c], maxs[g][c]) <= 0);
      }
      ascendingGroups[c] = ascending;
    }
    this.groupBounds = new long[columns.length][];
    for (int c = 0; c < columns.length; c++) {
      int column = c;
      if (ascendingGroups[c] && signedIntegral(c)) {
        groupBounds[c] = longBounds(count, g -> mins[g][column], g -> maxs[g][column]);
      }
    }
  }

  /** Whether column {@code c} orders its values as signed longs or ints. */
  private boolean signedIntegral(int c) {
    return orders[c] == SIGNED_INT64 || orders[c] == SIGNED_INT32;
  }

  private static long[] longBounds(int count, IntFunction<Object> min, IntFunction<Object> max) {
    long[] bounds = new long[2 * count];
    for (int i = 0; i < count; i++) {
      bounds[2 * i] = ((Number) min.apply(i)).longValue();
      bounds[2 * i + 1] = ((Number) max.apply(i)).longValue();
    }
    return bounds;
  }

  /**
   * The data file opened for probes (its tail read and parsed), or null when it cannot be
   * probed here: nested columns, columns without field ids or without offset indexes.
   */
  static ProbeFile open(FileIO io, DataFile dataFile, PageCache pages,
      DataFileRows.ReadListener listener) {
    String location = dataFile.location();
    Source source = Source.open(io, location, listener);
    try {
      long length = dataFile.fileSizeInBytes();
      Region tail = new Region(Math.max(0, length - TAIL), length);
      tail.read(source, listener);
      int footerLength = tail.intAt(length - 8);
      if (!Arrays.equals(tail.bytes(length - 4, 4), MAGIC) || footerLength <= 0
          || footerLength > length - 12) {
        source.close();
        return null; // encrypted or not Parquet: Iceberg's reader says what is wrong
      }
      long footerStart = length - 8 - footerLength;
      if (footerStart < tail.start) {
        tail = new Region(footerStart, length);
        tail.read(source, listener);
      }
      ParquetMetadata footer = METADATA.readParquetMetadata(
          tail.stream(footerStart, footerLength), ParquetMetadataConverter.NO_FILTER);
      ProbeFile file = new ProbeFile(location, source, footer, pages);
      if (file.columnOfField.size() != file.columns.length || !file.loadIndexes(tail, listener)) {
        file.close(); // nested columns, no field ids or no page index: Iceberg's reader
        return null;
      }
      return file;
    } catch (IOException | RuntimeException e) {
      try {
        source.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new UncheckedIOException("opening " + location + " for lookups",
          e instanceof IOException io0 ? io0 : new IOException(e));
    }
  }

  /**
   * Reads the bytes of every column's offset index, column index and bloom filter, in one read
   * with the footer: Parquet writes them just before it, so they are usually in {@code tail}
   * already. A row group's are parsed when a probe first reaches it ({@link #index}): with
   * dozens of row groups per file, parsing them all would make a file's first probe several
   * times slower.
   */
  private boolean loadIndexes(Region tail, DataFileRows.ReadListener listener)
      throws IOException {
    long first = tail.start;
    for (BlockMetaData group : groups) {
      for (ColumnChunkMetaData chunk : group.getColumns()) {
        IndexReference offsetIndex = chunk.getOffsetIndexReference();
        if (offsetIndex == null) {
          return false;
        }
        first = Math.min(first, offsetIndex.getOffset());
        if (chunk.getColumnIndexReference() != null) {
          first = Math.min(first, chunk.getColumnIndexReference().getOffset());
        }
        if (chunk.getBloomFilterOffset() >= 0) {
          first = Math.min(first, chunk.getBloomFilterOffset());
        }
      }
    }
    indexes = tail;
    if (first < tail.start) {
      indexes = new Region(first, tail.end);
      indexes.read(source, listener);
    }
    return true;
  }

  /**
   * Parses row group {@code g}'s page indexes and bloom filters, once. The flag is set after
   * them (a volatile write), so a probe that sees it set sees them whole.
   */
  private void index(int g) {
    if (indexed.get(g) == 1) {
      return;
    }
    synchronized (this) {
      if (indexed.get(g) == 1) {
        return;
      }
      try {
        parseIndexes(g);
      } catch (IOException e) {
        throw new UncheckedIOException("reading the page indexes of " + location, e);
      }
      indexed.set(g, 1);
      if (++groupsIndexed == groups.size()) {
        indexes = null; // all parsed: the bytes are no longer needed
      }
    }
  }

  private void parseIndexes(int g) throws IOException {
    List<ColumnChunkMetaData> chunks = groups.get(g).getColumns();
    for (int c = 0; c < columns.length; c++) {
      ColumnChunkMetaData chunk = chunks.get(c);
      IndexReference ref = chunk.getOffsetIndexReference();
      offsets[g][c] = ParquetMetadataConverter.fromParquetOffsetIndex(
          Util.readOffsetIndex(indexes.stream(ref.getOffset(), ref.getLength())));
      decoded[g][c] = new Values[offsets[g][c].getPageCount()];
      firstRows[g][c] = new long[offsets[g][c].getPageCount()];
      for (int p = 0; p < firstRows[g][c].length; p++) {
        firstRows[g][c][p] = offsets[g][c].getFirstRowIndex(p);
      }
      ref = chunk.getColumnIndexReference();
      if (ref != null) {
        loadColumnIndex(g, c, ParquetMetadataConverter.fromParquetColumnIndex(
            columns[c].getPrimitiveType(),
            Util.readColumnIndex(indexes.stream(ref.getOffset(), ref.getLength()))));
      }
      if (chunk.getBloomFilterOffset() >= 0) {
        blooms[g][c] = bloomFilter(indexes.stream(chunk.getBloomFilterOffset(),
            (int) (indexes.end - chunk.getBloomFilterOffset())));
      }
    }
  }

  private void loadColumnIndex(int g, int c, ColumnIndex index) {
    if (index == null) {
      return; // Parquet drops indexes it cannot order (e.g. INT96)
    }
    PrimitiveType type = columns[c].getPrimitiveType();
    List<ByteBuffer> mins = index.getMinValues();
    List<ByteBuffer> maxs = index.getMaxValues();
    List<Boolean> nulls = index.getNullPages();
    int pages = nulls.size();
    pageMins[g][c] = new Object[pages];
    pageMaxs[g][c] = new Object[pages];
    nullPages[g][c] = new boolean[pages];
    boolean anyNullPage = false;
    for (int p = 0; p < pages; p++) {
      nullPages[g][c][p] = nulls.get(p);
      anyNullPage |= nulls.get(p);
      if (!nulls.get(p)) {
        pageMins[g][c][p] = statValue(type, mins.get(p));
        pageMaxs[g][c][p] = statValue(type, maxs.get(p));
      }
    }
    ascendingPages[g][c] = !anyNullPage && index.getBoundaryOrder() == BoundaryOrder.ASCENDING;
    if (ascendingPages[g][c] && signedIntegral(c)) {
      Object[] lows = pageMins[g][c];
      Object[] highs = pageMaxs[g][c];
      pageBounds[g][c] = longBounds(pages, p -> lows[p], p -> highs[p]);
    }
  }

  private static Bloom bloomFilter(ByteArrayInputStream in) throws IOException {
    BloomFilterHeader header = Util.readBloomFilterHeader(in);
    if (!header.getAlgorithm().isSetBLOCK() || !header.getHash().isSetXXHASH()
        || !header.getCompression().isSetUNCOMPRESSED() || header.getNumBytes() <= 0
        || header.getNumBytes() > in.available()) {
      return null; // a filter this reader does not know: the row group is read
    }
    byte[] bits = new byte[header.getNumBytes()];
    in.readNBytes(bits, 0, bits.length);
    int[] words = new int[bits.length / 4];
    ByteBuffer.wrap(bits).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(words);
    return new Bloom(words);
  }

  /**
   * A split-block bloom filter as Parquet writes it, read-only. Parquet's {@code
   * BlockSplitBloomFilter.findHash} computes its mask in a field shared by all callers, so
   * probes on several threads (lookup.async) could see another probe's mask; this one keeps it
   * on the stack.
   */
  private record Bloom(int[] words) {
    private static final int[] SALT = {0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d,
        0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31};

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
  }

  /** Drops a decoded page (or, when {@code page} is -1, dictionary): the cache evicted it. */
  void forget(int g, int c, int page) {
    if (page < 0) {
      dictionaries[g][c] = null;
    } else {
      decoded[g][c][page] = null;
    }
  }

  /**
   * Where a lookup's columns are in this file, worked out once per schema and key (a lookup asks
   * with the same ones on every probe): each schema column's column here (-1: not stored), with
   * its field id and type; each key column's; and whether every stored column decodes here.
   */
  private record Plan(Schema schema, List<Types.NestedField> key, int[] fieldColumns,
      int[] fieldIds, Type[] types, int[] keyColumns, boolean readable) {}

  private Plan plan(Schema schema, List<Types.NestedField> key) {
    Plan known = plan;
    if (known != null && known.schema() == schema && known.key() == key) {
      return known;
    }
    List<Types.NestedField> fields = schema.columns();
    int[] fieldColumns = new int[fields.size()];
    int[] fieldIds = new int[fields.size()];
    Type[] types = new Type[fields.size()];
    boolean readable = true;
    for (int f = 0; f < fields.size(); f++) {
      Types.NestedField field = fields.get(f);
      Integer c = columnOfField.get(field.fieldId());
      fieldColumns[f] = c == null ? -1 : c;
      fieldIds[f] = field.fieldId();
      types[f] = field.type();
      readable &= c == null || decodable(field.type(), columns[c].getPrimitiveType());
    }
    int[] keyColumns = new int[key.size()];
    for (int k = 0; k < keyColumns.length; k++) {
      Integer c = columnOfField.get(key.get(k).fieldId());
      keyColumns[k] = c == null ? -1 : c;
    }
    known = new Plan(schema, key, fieldColumns, fieldIds, types, keyColumns, readable);
    plan = known;
    return known;
  }

  /** Whether every column of {@code schema} that this file stores can be decoded here. */
  boolean canRead(Schema schema, List<Types.NestedField> key) {
    return plan(schema, key).readable();
  }

  /**
   * The key as this file stores it, one value per key column, or null when this file cannot be
   * probed for it (a key column it does not store, or a type without a comparable stored form).
   * A value this file's type cannot hold (a long beyond an int column) is {@link #NO_VALUE}.
   */
  Object[] storedKey(Schema schema, List<Types.NestedField> key, List<?> values) {
    int[] keyColumns = plan(schema, key).keyColumns();
    Object[] stored = new Object[keyColumns.length];
    for (int i = 0; i < keyColumns.length; i++) {
      int c = keyColumns[i];
      if (c < 0) {
        return null;
      }
      stored[i] = storedValue(key.get(i).type(), columns[c].getPrimitiveType(), values.get(i));
      if (stored[i] == null) {
        return null;
      }
    }
    return stored;
  }

  /**
   * The rows of {@code schema} whose key columns hold {@code storedKey} (from {@link
   * #storedKey}), each with its position in the file in {@code positions}. {@code constants}
   * give the columns the file does not store (identity partitions, added columns). Returns the
   * number of rows decoded from the file's bytes (none when every page was in the cache).
   */
  long probe(Schema schema, List<Types.NestedField> key, Object[] storedKey,
      Map<Integer, ?> constants, List<Record> rows, List<Long> positions,
      DataFileRows.ReadListener listener) throws IOException {
    for (Object value : storedKey) {
      if (value == NO_VALUE) {
        return 0;
      }
    }
    Plan plan = plan(schema, key);
    int[] keyColumns = plan.keyColumns();
    long[] hashes = null;
    long decoded = 0;
    int c0 = keyColumns[0];
    int[] span = groupBounds[c0] != null
        ? admitting(groupBounds[c0], ((Number) storedKey[0]).longValue())
        : ascendingGroups[c0]
            ? admitting(groups.size(), g -> mins[g][c0], g -> maxs[g][c0], storedKey[0],
                order(c0))
            : new int[] {0, groups.size()};
    for (int g = span[0]; g < span[1]; g++) {
      if (!inStatistics(g, keyColumns, storedKey)) {
        continue;
      }
      index(g);
      // The bloom filters first: in a file not sorted by the key every row group's bounds admit
      // it, and a filter's answer (one cache line) is the cheapest way past all but one.
      boolean bloomed = hasBlooms(g, keyColumns);
      if (bloomed) {
        hashes = hashes == null ? bloomHashes(storedKey) : hashes;
        if (!bloomsAdmit(g, keyColumns, hashes)) {
          continue;
        }
      }
      // The key column whose page index leaves the fewest pages leads: its candidate pages
      // are decoded, the other key columns only at the rows that match it.
      int lead = 0;
      int[] candidates = candidatePages(g, keyColumns[0], storedKey[0]);
      for (int k = 1; k < keyColumns.length && candidates.length > 1; k++) {
        int[] other = candidatePages(g, keyColumns[k], storedKey[k]);
        if (other.length < candidates.length) {
          lead = k;
          candidates = other;
        }
      }
      if (candidates.length == 0) {
        continue;
      }
      OffsetIndex pages = offsets[g][keyColumns[lead]];
      for (int p : candidates) {
        long from = pages.getFirstRowIndex(p);
        long to = pages.getLastRowIndex(p, groups.get(g).getRowCount()) + 1;
        decoded += readRows(g, plan, storedKey, lead, from, to, bloomed, constants, rows,
            positions, listener);
      }
    }
    return decoded;
  }

  /** Row-group pruning by the statistics of every key column. */
  private boolean inStatistics(int g, int[] keyColumns, Object[] storedKey) {
    for (int k = 0; k < keyColumns.length; k++) {
      int c = keyColumns[k];
      if (allNull[g][c]) {
        return false;
      }
      if (mins[g][c] != null && (order(c).compare(mins[g][c], storedKey[k]) > 0
          || order(c).compare(storedKey[k], maxs[g][c]) > 0)) {
        return false;
      }
    }
    return true;
  }

  /** Row-group pruning by the bloom filters of every key column. */
  private boolean bloomsAdmit(int g, int[] keyColumns, long[] hashes) {
    for (int k = 0; k < keyColumns.length; k++) {
      Bloom bloom = blooms[g][keyColumns[k]];
      if (bloom != null && hashes[k] != NO_HASH && !bloom.mayContain(hashes[k])) {
        return false;
      }
    }
    return true;
  }

  /** Whether row group {@code g} has a bloom filter on some key column. */
  private boolean hasBlooms(int g, int[] keyColumns) {
    for (int c : keyColumns) {
      if (blooms[g][c] != null) {
        return true;
      }
    }
    return false;
  }

  private static long[] bloomHashes(Object[] storedKey) {
    long[] hashes = new long[storedKey.length];
    for (int k = 0; k < hashes.length; k++) {
      hashes[k] = bloomHash(storedKey[k]);
    }
    return hashes;
  }

  private PrimitiveComparator<Object> order(int c) {
    return orders[c];
  }

  @SuppressWarnings("unchecked")
  private static PrimitiveComparator<Object>[] orders(ColumnDescriptor[] columns) {
    PrimitiveComparator<Object>[] orders = new PrimitiveComparator[columns.length];
    for (int c = 0; c < columns.length; c++) {
      orders[c] = (PrimitiveComparator<Object>) columns[c].getPrimitiveType().comparator();
    }
    return orders;
  }

  /**
   * The hash Parquet's bloom filters (XXH64 of the plain encoding) hold for a stored value,
   * computed once per probe rather than per row group; {@code BlockSplitBloomFilter.hash} would
   * also share one buffer between threads.
   */
  private static long bloomHash(Object value) {
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

  /** The pages of column {@code c} in row group {@code g} whose index admits {@code value}. */
  private int[] candidatePages(int g, int c, Object value) {
    int count = offsets[g][c].getPageCount();
    if (ascendingPages[g][c]) {
      Object[] lows = pageMins[g][c];
      Object[] highs = pageMaxs[g][c];
      int[] span = pageBounds[g][c] != null
          ? admitting(pageBounds[g][c], ((Number) value).longValue())
          : admitting(count, p -> lows[p], p -> highs[p], value, order(c));
      int[] pages = new int[span[1] - span[0]];
      for (int p = span[0]; p < span[1]; p++) {
        pages[p - span[0]] = p;
      }
      return pages;
    }
    int[] pages = new int[count];
    int found = 0;
    for (int p = 0; p < count; p++) {
      if (pageMayHold(g, c, p, value)) {
        pages[found++] = p;
      }
    }
    return Arrays.copyOf(pages, found);
  }

  /**
   * Of {@code count} ranges sorted by their bounds (mins and maxs both ascending, as in a file
   * sorted by the column), those whose bounds admit {@code value}, as {@code [first, end)}: a
   * bisection to the first whose max reaches the value, then on while their min admits it.
   */
  private static int[] admitting(int count, IntFunction<Object> min, IntFunction<Object> max,
      Object value, PrimitiveComparator<Object> order) {
    int first = 0;
    int high = count;
    while (first < high) {
      int mid = (first + high) >>> 1;
      if (order.compare(max.apply(mid), value) < 0) {
        first = mid + 1;
      } else {
        high = mid;
      }
    }
    int end = first;
    while (end < count && order.compare(min.apply(end), value) <= 0) {
      end++;
    }
    return new int[] {first, end};
  }

  /** {@link #admitting} over {@code bounds} (min and max of each range in turn) as longs. */
  private static int[] admitting(long[] bounds, long value) {
    int count = bounds.length / 2;
    int first = 0;
    int high = count;
    while (first < high) {
      int mid = (first + high) >>> 1;
      if (bounds[2 * mid + 1] < value) {
        first = mid + 1;
      } else {
        high = mid;
      }
    }
    int end = first;
    while (end < count && bounds[2 * end] <= value) {
      end++;
    }
    return new int[] {first, end};
  }

  private boolean pageMayHold(int g, int c, int page, Object value) {
    if (nullPages[g][c] == null) {
      return true; // no column index: every page
    }
    if (nullPages[g][c][page]) {
      return false;
    }
    return order(c).compare(pageMins[g][c][page], value) <= 0
        && order(c).compare(value, pageMaxs[g][c][page]) <= 0;
  }

  /**
   * Reads the pages of row group {@code g} that cover rows {@code [from, to)} (a candidate page
   * of key column {@code lead}) in every column needed, matches the key on those rows and adds
   * the matching rows.
   */
  private long readRows(int g, Plan plan, Object[] storedKey, int lead, long from, long to,
      boolean bloomed, Map<Integer, ?> constants, List<Record> rows, List<Long> positions,
      DataFileRows.ReadListener listener) throws IOException {
    int[] keyColumns = plan.keyColumns();
    int[] fieldColumns = plan.fieldColumns();
    // A bloom filter that admitted the key makes a match likely: every column is read at once.
    // Without one most row groups hold no match, so only the key's pages are read up front and
    // the other columns' pages on a match.
    List<long[]> ranges = new ArrayList<>(0);
    for (int c : bloomed ? fieldColumns : keyColumns) {
      if (c >= 0) {
        pageRanges(g, c, from, to, ranges);
      }
    }
    Reads regions = new Reads(read(ranges, listener), listener, new long[columns.length]);
    int[] matches = matchAll(g, keyColumns[lead], storedKey[lead], from, to, regions);
    for (int k = 0; k < keyColumns.length && matches.length > 0; k++) {
      if (k == lead) {
        continue;
      }
      int kept = 0;
      for (int i = 0; i < matches.length; i++) {
        if (storedKey[k].equals(storedAt(g, keyColumns[k], matches[i], regions))) {
          matches[kept++] = matches[i];
        }
      }
      matches = Arrays.copyOf(matches, kept);
    }
    if (matches.length == 0) {
      return regions.rowsDecoded();
    }
    GenericRecord[] records = new GenericRecord[matches.length];
    for (int i = 0; i < matches.length; i++) {
      records[i] = emptyRecord(plan.schema());
    }
    for (int f = 0; f < fieldColumns.length; f++) {
      int c = fieldColumns[f];
      if (c < 0) {
        Object constant = constants.get(plan.fieldIds()[f]);
        for (GenericRecord record : records) {
          record.set(f, constant);
        }
      } else {
        for (int i = 0; i < matches.length; i++) {
          records[i].set(f, genericAt(g, c, matches[i], regions, plan.types()[f]));
        }
      }
    }
    for (int i = 0; i < matches.length; i++) {
      rows.add(records[i]);
      positions.add(groupStarts[g] + matches[i]);
    }
    return regions.rowsDecoded();
  }

  /**
   * A new empty record of {@code schema}: a copy of a kept one, since {@code
   * GenericRecord.create} looks up the struct's field names in a shared cache on every call.
   */
  private GenericRecord emptyRecord(Schema schema) {
    GenericRecord empty = template;
    if (empty == null || empty.struct() != schema.asStruct()) {
      empty = GenericRecord.create(schema);
      template = empty;
    }
    return empty.copy();
  }

  /**
   * The byte ranges of column {@code c}'s pages over rows {@code [from, to)} and of its
   * dictionary, those not decoded already.
   */
  private void pageRanges(int g, int c, long from, long to, List<long[]> ranges) {
    OffsetIndex index = offsets[g][c];
    long[] starts = firstRows[g][c];
    for (int p = pageOf(starts, from); p < starts.length && starts[p] < to; p++) {
      if (decoded[g][c][p] == null) {
        ranges.add(new long[] {index.getOffset(p), index.getOffset(p)
            + index.getCompressedPageSize(p)});
      }
    }
    ColumnChunkMetaData chunk = groups.get(g).getColumns().get(c);
    if (dictionaryStarts[g][c] >= 0 && dictionaries[g][c] == null) {
      ranges.add(new long[] {dictionaryStarts[g][c], chunk.getFirstDataPageOffset()});
    }
  }

  private static int pageOf(long[] firstRows, long row) {
    int low = 0;
    int high = firstRows.length - 1;
    while (low < high) { // the last page whose first row is at most row
      int mid = (low + high + 1) >>> 1;
      if (firstRows[mid] <= row) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  }

  /** Reads the ranges, those closer than {@link #MAX_GAP} together, one read each. */
  private Region[] read(List<long[]> ranges, DataFileRows.ReadListener listener)
      throws IOException {
    if (ranges.isEmpty()) {
      return NO_REGIONS; // every page decoded already: a warm probe
    }
    ranges.sort((a, b) -> Long.compare(a[0], b[0]));
    List<Region> regions = new ArrayList<>();
    Region current = null;
    for (long[] range : ranges) {
      if (current != null && range[0] - current.end <= MAX_GAP) {
        current = new Region(current.start, Math.max(current.end, range[1]));
        regions.set(regions.size() - 1, current);
      } else {
        current = new Region(range[0], range[1]);
        regions.add(current);
      }
    }
    for (Region region : regions) {
      region.read(source, listener);
    }
    return regions.toArray(new Region[0]);
  }

  /**
   * The region holding {@code offset}; a page evicted from the cache since the probe planned
   * its reads is read on its own.
   */
  private Region regionOf(Region[] regions, long offset, int length,
      DataFileRows.ReadListener listener) throws IOException {
    for (Region region : regions) {
      if (region.start <= offset && offset < region.end) {
        return region;
      }
    }
    Region alone = new Region(offset, offset + length);
    alone.read(source, listener);
    return alone;
  }

  /**
   * The rows of {@code [from, to)} (relative to the row group) whose column {@code c} holds
   * {@code value}.
   */
  private int[] matchAll(int g, int c, Object value, long from, long to, Reads reads)
      throws IOException {
    long[] starts = firstRows[g][c];
    int[] matches = new int[4];
    int found = 0;
    for (int p = pageOf(starts, from); p < starts.length && starts[p] < to; p++) {
      Values page = page(g, c, p, reads);
      int first = (int) starts[p];
      int start = (int) Math.max(0, from - first);
      int end = (int) Math.min(page.count(), to - first);
      for (int i = page.firstCandidate(start, end, value); i < end; i++) {
        if (page.equals(i, value)) {
          if (found == matches.length) {
            matches = Arrays.copyOf(matches, found * 2);
          }
          matches[found++] = first + i;
        } else if (page.sorted()) {
          break; // past the value: the rest of the page is greater
        }
      }
    }
    return Arrays.copyOf(matches, found);
  }

  /** Column {@code c}'s value at {@code row} (relative to the row group) as stored, or null. */
  private Object storedAt(int g, int c, int row, Reads reads) throws IOException {
    long[] starts = firstRows[g][c];
    int p = pageOf(starts, row);
    return page(g, c, p, reads).get((int) (row - starts[p]));
  }

  /** Column {@code c}'s value at {@code row} as an Iceberg value of {@code type}, or null. */
  private Object genericAt(int g, int c, int row, Reads reads, Type type) throws IOException {
    long[] starts = firstRows[g][c];
    int p = pageOf(starts, row);
    Values page = page(g, c, p, reads);
    int i = (int) (row - starts[p]);
    if (page.bytes() != null && type.typeId() == Type.TypeID.STRING) {
      return page.string(i); // straight from the page's bytes, without a Binary in between
    }
    Object value = page.get(i);
    return value == null ? null : generic(type, columns[c].getPrimitiveType(), value);
  }

  /**
   * What a probe read: the regions, whom to tell of a read it makes late, and the values it
   * decoded per column.
   */
  record Reads(Region[] regions, DataFileRows.ReadListener listener, long[] decoded) {
    /** The rows whose values were decoded in some column. */
    long rowsDecoded() {
      long most = 0;
      for (long rows : decoded) {
        most = Math.max(most, rows);
      }
      return most;
    }
  }

  /**
   * One data page's values, decoded as stored (null where a row has none): longs and ints in
   * primitive arrays, byte strings in one array with each value's start and end side by side in
   * {@code spans} (a PLAIN page's own bytes), others as {@link #stored} reads them; {@code
   * sorted} when longs or ints never decrease. This is what the page cache keeps, in few objects
   * (for the garbage collector, and for the processor's cache: a warm probe of a random key
   * touches each array once), so that a warm probe compares and picks values without decoding.
   */
  record Values(int count, long[] longs, int[] ints, byte[] bytes, int[] spans,
      Object[] objects, boolean[] nulls, boolean sorted) {
    /**
     * In a page of sorted longs or ints ({@code sorted}), the first of rows {@code [from, to)}
     * whose value is not below {@code value}; else {@code from}. One guess by interpolation
     * comes first, then a gallop from it and a binary search: keys spread evenly (ids, times)
     * are found at the guess, and the page's values are loaded from memory in about two steps
     * (its two ends at once, then the guess) instead of a binary search's five or more.
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
      return nulls != null && nulls[i] ? null
          : new String(bytes, spans[2 * i], spans[2 * i + 1] - spans[2 * i],
              StandardCharsets.UTF_8);
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
        return Arrays.equals(bytes, spans[2 * i], spans[2 * i + 1], binary.getBytesUnsafe(), 0,
            binary.length());
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

  /** Page {@code p} of column {@code c} in row group {@code g}, decoded (or from the cache). */
  private Values page(int g, int c, int p, Reads reads) throws IOException {
    Values cached = decoded[g][c][p];
    if (cached != null) {
      return cached;
    }
    DataPage data = readPage(g, c, p, reads);
    Values values = plainValues(c, data);
    if (values == null) {
      values = decodedValues(g, c, data, reads);
    }
    reads.decoded()[c] += values.count();
    decoded[g][c][p] = values;
    pages.added(this, g, c, p, values.weight());
    return values;
  }

  /**
   * A PLAIN page of longs, ints or byte strings (at most one definition level) read straight
   * from its bytes, which the values then point into; null for other pages.
   */
  private Values plainValues(int c, DataPage data) throws IOException {
    PrimitiveTypeName physical = columns[c].getPrimitiveType().getPrimitiveTypeName();
    int maxDefinition = columns[c].getMaxDefinitionLevel();
    if (data.encoding() != Encoding.PLAIN || maxDefinition > 1
        || columns[c].getMaxRepetitionLevel() > 0 || physical != PrimitiveTypeName.INT64
            && physical != PrimitiveTypeName.INT32 && physical != PrimitiveTypeName.BINARY) {
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
        levels = new RunLengthBitPackingHybridDecoder(1,
            new ByteArrayInputStream(bytes, 4, length));
        at = 4 + length;
      } else {
        levels = new RunLengthBitPackingHybridDecoder(1, new ByteArrayInputStream(
            data.levels(), data.repetitionLength(),
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
    return new Values(count, longs, ints, spans == null ? null : bytes, spans, null,
        nulls, nulls == null && ascending(longs, ints, count));
  }

  /** A page of any other encoding or type, decoded through Parquet's readers. */
  private Values decodedValues(int g, int c, DataPage data, Reads reads) throws IOException {
    Page page = reader(g, c, data, reads);
    PrimitiveTypeName physical = columns[c].getPrimitiveType().getPrimitiveTypeName();
    int count = page.count;
    // Few objects per page: primitives in arrays, byte strings in one array with their ends.
    long[] longs = physical == PrimitiveTypeName.INT64 ? new long[count] : null;
    int[] ints = physical == PrimitiveTypeName.INT32 ? new int[count] : null;
    boolean binary = physical == PrimitiveTypeName.BINARY
        || physical == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
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
    return new Values(count, longs, ints, binary ? bytes.toByteArray() : null, spans, objects,
        nulls, nulls == null && ascending(longs, ints, count));
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
  private Page reader(int g, int c, DataPage data, Reads reads) throws IOException {
    ColumnDescriptor column = columns[c];
    int maxDefinition = column.getMaxDefinitionLevel();
    ValuesReader values = valuesReader(g, c, data.encoding(), reads);
    if (data.levels() == null) {
      ByteBufferInputStream stream = ByteBufferInputStream.wrap(ByteBuffer.wrap(data.values()));
      data.repetition().getValuesReader(column, ValuesType.REPETITION_LEVEL)
          .initFromPage(data.count(), stream);
      ValuesReader definition =
          data.definition().getValuesReader(column, ValuesType.DEFINITION_LEVEL);
      definition.initFromPage(data.count(), stream);
      values.initFromPage(data.count(), stream);
      return new Page(data.count(), maxDefinition, definition::readInteger, values);
    }
    RunLengthBitPackingHybridDecoder definition = maxDefinition == 0 ? null
        : new RunLengthBitPackingHybridDecoder(BytesUtils.getWidthFromMaxInt(maxDefinition),
            new ByteArrayInputStream(data.levels(), data.repetitionLength(),
                data.levels().length - data.repetitionLength()));
    values.initFromPage(data.count(), ByteBufferInputStream.wrap(ByteBuffer.wrap(data.values())));
    return new Page(data.count(), maxDefinition,
        definition == null ? () -> 0 : definition::readInt, values);
  }

  /**
   * A data page decompressed: V1 pages whole (levels and values), V2 pages with their
   * uncompressed levels apart.
   */
  record DataPage(int count, Encoding repetition, Encoding definition, Encoding encoding,
      byte[] levels, int repetitionLength, byte[] values) {}

  private DataPage readPage(int g, int c, int p, Reads reads) throws IOException {
    OffsetIndex index = offsets[g][c];
    long offset = index.getOffset(p);
    int length = index.getCompressedPageSize(p);
    Region region = regionOf(reads.regions(), offset, length, reads.listener());
    ByteArrayInputStream in = region.stream(offset, length);
    PageHeader header = Util.readPageHeader(in);
    int start = region.index(offset) + length - in.available();
    CompressionCodecName codec = groups.get(g).getColumns().get(c).getCodec();
    if (header.getType() == PageType.DATA_PAGE) {
      DataPageHeader data = header.getData_page_header();
      return new DataPage(data.getNum_values(),
          METADATA.getEncoding(data.getRepetition_level_encoding()),
          METADATA.getEncoding(data.getDefinition_level_encoding()),
          METADATA.getEncoding(data.getEncoding()), null, 0,
          decompress(codec, region.bytes, start, header.getCompressed_page_size(),
              header.getUncompressed_page_size()));
    }
    if (header.getType() == PageType.DATA_PAGE_V2) {
      DataPageHeaderV2 data = header.getData_page_header_v2();
      int levels = data.getRepetition_levels_byte_length()
          + data.getDefinition_levels_byte_length();
      int valuesStart = start + levels;
      int valuesLength = header.getCompressed_page_size() - levels;
      return new DataPage(data.getNum_values(), null, null,
          METADATA.getEncoding(data.getEncoding()),
          Arrays.copyOfRange(region.bytes, start, valuesStart),
          data.getRepetition_levels_byte_length(),
          data.isIs_compressed()
              ? decompress(codec, region.bytes, valuesStart, valuesLength,
                  header.getUncompressed_page_size() - levels)
              : Arrays.copyOfRange(region.bytes, valuesStart, valuesStart + valuesLength));
    }
    throw new IOException("page " + p + " of column " + columns[c] + " in " + location
        + " is a " + header.getType() + ", not a data page");
  }

  private ValuesReader valuesReader(int g, int c, Encoding encoding, Reads reads)
      throws IOException {
    if (!encoding.usesDictionary()) {
      return encoding.getValuesReader(columns[c], ValuesType.VALUES);
    }
    DictionaryRef cached = dictionaries[g][c];
    Dictionary dictionary = cached == null ? null : cached.dictionary();
    if (dictionary == null) {
      ColumnChunkMetaData chunk = groups.get(g).getColumns().get(c);
      long offset = dictionaryStarts[g][c];
      if (offset < 0) {
        throw noDictionary(g, c);
      }
      int length = (int) (chunk.getFirstDataPageOffset() - offset);
      Region region = regionOf(reads.regions(), offset, length, reads.listener());
      ByteArrayInputStream in = region.stream(offset, length);
      PageHeader header = Util.readPageHeader(in);
      if (header.getType() != PageType.DICTIONARY_PAGE) {
        throw noDictionary(g, c);
      }
      int start = region.index(offset) + length - in.available();
      byte[] bytes = decompress(chunk.getCodec(), region.bytes, start,
          header.getCompressed_page_size(), header.getUncompressed_page_size());
      DictionaryPage page = new DictionaryPage(BytesInput.from(bytes),
          header.getDictionary_page_header().getNum_values(),
          METADATA.getEncoding(header.getDictionary_page_header().getEncoding()));
      dictionary = threadSafe(page.getEncoding().initDictionary(columns[c], page));
      dictionaries[g][c] = new DictionaryRef(dictionary);
      // Decoded entries take about twice their encoded bytes.
      pages.added(this, g, c, -1, 64L + 2L * bytes.length + 16L * page.getDictionarySize());
    }
    return encoding.getDictionaryBasedValuesReader(columns[c], ValuesType.VALUES, dictionary);
  }

  /**
   * A dictionary whose byte strings are each backed by an array of their own. Parquet's share
   * one {@code ByteBuffer}, whose position and limit every read of a value moves, so threads
   * decoding pages of one file at once (asynchronous lookups) read each other's bytes.
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

  private IOException noDictionary(int g, int c) {
    return new IOException("column " + columns[c] + " of row group " + g + " in " + location
        + " has dictionary-encoded pages but no dictionary page");
  }

  private static byte[] decompress(CompressionCodecName codec, byte[] from, int start,
      int length, int size) throws IOException {
    Decompressor decompressor = switch (codec) {
      case ZSTD -> ZSTD.get();
      case LZ4_RAW -> LZ4.get();
      case SNAPPY -> SNAPPY.get();
      default -> null;
    };
    if (codec == CompressionCodecName.UNCOMPRESSED) {
      return Arrays.copyOfRange(from, start, start + length);
    }
    if (decompressor == null) {
      return CODECS.getDecompressor(codec)
          .decompress(BytesInput.from(from, start, length), size).toByteArray();
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

  /** A column index or statistics bound, as the values {@link #stored} reads. */
  private static Object statValue(PrimitiveType type, ByteBuffer bound) {
    ByteBuffer little = bound.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    return switch (type.getPrimitiveTypeName()) {
      case INT32 -> little.getInt(little.position());
      case INT64 -> little.getLong(little.position());
      case FLOAT -> little.getFloat(little.position());
      case DOUBLE -> little.getDouble(little.position());
      case BOOLEAN -> little.get(little.position()) != 0;
      default -> {
        byte[] bytes = new byte[little.remaining()];
        little.get(bytes);
        yield Binary.fromConstantByteArray(bytes);
      }
    };
  }

  /**
   * An Iceberg internal key value as this file stores it: null when it has no stored form here
   * (the probe then reads through Iceberg), {@link #NO_VALUE} when no stored value can equal it.
   */
  private static Object storedValue(Type type, PrimitiveType stored, Object value) {
    PrimitiveTypeName physical = stored.getPrimitiveTypeName();
    if (!decodable(type, stored)) {
      return null;
    }
    return switch (type.typeId()) {
      case BOOLEAN, INTEGER, DATE, TIME, TIMESTAMP -> value;
      case LONG -> {
        long v = (Long) value;
        if (physical == PrimitiveTypeName.INT64) {
          yield v;
        }
        yield v == (int) v ? (Object) (int) v : NO_VALUE;
      }
      case STRING -> Binary.fromString(value.toString());
      case BINARY, FIXED -> Binary.fromConstantByteBuffer(((ByteBuffer) value).duplicate());
      case UUID -> Binary.fromConstantByteArray(UUIDUtil.convert((java.util.UUID) value));
      default -> null; // decimals and floating point: compared by Iceberg's reader
    };
  }

  /** The Iceberg generic value of a stored one. */
  private static Object generic(Type type, PrimitiveType stored, Object value) {
    return switch (type.typeId()) {
      case DATE -> DateTimeUtil.dateFromDays((Integer) value);
      case LONG -> value instanceof Integer i ? (Object) (long) i : value;
      case DOUBLE -> value instanceof Float f ? (Object) (double) f : value;
      case TIME -> DateTimeUtil.timeFromMicros((Long) value);
      case TIMESTAMP -> ((Types.TimestampType) type).shouldAdjustToUTC()
          ? DateTimeUtil.timestamptzFromMicros((Long) value)
          : DateTimeUtil.timestampFromMicros((Long) value);
      case STRING -> new String(((Binary) value).getBytesUnsafe(), StandardCharsets.UTF_8);
      case BINARY -> ByteBuffer.wrap(((Binary) value).getBytes());
      case FIXED -> ((Binary) value).getBytes();
      case UUID -> UUIDUtil.convert(((Binary) value).getBytes());
      case DECIMAL -> {
        int scale = ((Types.DecimalType) type).scale();
        if (value instanceof Integer i) {
          yield BigDecimal.valueOf(i, scale);
        }
        if (value instanceof Long l) {
          yield BigDecimal.valueOf(l, scale);
        }
        yield new BigDecimal(new BigInteger(((Binary) value).getBytes()), scale);
      }
      default -> value;
    };
  }

  /** Whether values of Parquet type {@code stored} decode to Iceberg type {@code type} here. */
  private static boolean decodable(Type type, PrimitiveType stored) {
    PrimitiveTypeName physical = stored.getPrimitiveTypeName();
    LogicalTypeAnnotation logical = stored.getLogicalTypeAnnotation();
    return switch (type.typeId()) {
      case BOOLEAN -> physical == PrimitiveTypeName.BOOLEAN;
      case INTEGER, DATE -> physical == PrimitiveTypeName.INT32;
      case LONG -> physical == PrimitiveTypeName.INT64 || physical == PrimitiveTypeName.INT32;
      case FLOAT -> physical == PrimitiveTypeName.FLOAT;
      case DOUBLE -> physical == PrimitiveTypeName.DOUBLE || physical == PrimitiveTypeName.FLOAT;
      case TIME, TIMESTAMP -> physical == PrimitiveTypeName.INT64 && micros(logical);
      case STRING, BINARY -> physical == PrimitiveTypeName.BINARY;
      case FIXED, UUID -> physical == PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
      case DECIMAL -> physical != PrimitiveTypeName.INT96
          && physical != PrimitiveTypeName.BOOLEAN;
      default -> false;
    };
  }

  private static boolean micros(LogicalTypeAnnotation logical) {
    if (logical instanceof LogicalTypeAnnotation.TimestampLogicalTypeAnnotation timestamp) {
      return timestamp.getUnit() == LogicalTypeAnnotation.TimeUnit.MICROS;
    }
    if (logical instanceof LogicalTypeAnnotation.TimeLogicalTypeAnnotation time) {
      return time.getUnit() == LogicalTypeAnnotation.TimeUnit.MICROS;
    }
    return false;
  }

  // The parts of a probe one at a time, for ProbeParts (the benchmark weighing them against
  // parquet-mr): none of these is on a probe's path.

  int rowGroupCount() {
    return groups.size();
  }

  /** Parses every row group's page indexes and bloom filters, as probes reaching them would. */
  void indexAll() {
    for (int g = 0; g < groups.size(); g++) {
      index(g);
    }
  }

  int pageCount(int g, int c) {
    index(g);
    return offsets[g][c].getPageCount();
  }

  int columnOf(int fieldId) {
    return columnOfField.get(fieldId);
  }

  /** Row group {@code g}'s column chunks, read in one read, for {@link #decodePage}. */
  Reads readRowGroup(int g, DataFileRows.ReadListener listener) throws IOException {
    index(g);
    List<ColumnChunkMetaData> chunks = groups.get(g).getColumns();
    long start = Long.MAX_VALUE;
    long end = 0;
    for (ColumnChunkMetaData chunk : chunks) {
      start = Math.min(start, chunk.getStartingPos());
      end = Math.max(end, chunk.getStartingPos() + chunk.getTotalSize());
    }
    Region region = new Region(start, end);
    region.read(source, listener);
    return new Reads(new Region[] {region}, listener, new long[columns.length]);
  }

  /** No bytes read yet: pages are read (and kept) as a probe reaches them. */
  Reads noReads(DataFileRows.ReadListener listener) {
    return new Reads(NO_REGIONS, listener, new long[columns.length]);
  }

  /** Page {@code p} parsed, decompressed and decoded from {@code reads}, not kept. */
  Values decodePage(int g, int c, int p, Reads reads) throws IOException {
    DataPage data = readPage(g, c, p, reads);
    Values values = plainValues(c, data);
    return values != null ? values : decodedValues(g, c, data, reads);
  }

  /** Page {@code p}'s header parsed and its bytes decompressed, from {@code reads}. */
  DataPage decompressPage(int g, int c, int p, Reads reads) throws IOException {
    return readPage(g, c, p, reads);
  }

  /** A decompressed page decoded, not kept. */
  Values decodeDecompressed(int g, int c, DataPage data, Reads reads) throws IOException {
    Values values = plainValues(c, data);
    return values != null ? values : decodedValues(g, c, data, reads);
  }

  /** The bloom filter hash of a stored value, as a probe computes it once per key. */
  static long bloomHashOf(Object stored) {
    return bloomHash(stored);
  }

  /** Whether row group {@code g}'s bloom filter on column {@code c} admits {@code hash}. */
  boolean bloomAdmits(int g, int c, long hash) {
    Bloom bloom = blooms[g][c];
    return bloom == null || bloom.mayContain(hash);
  }

  /**
   * The sorted-key search alone: the position in the file of the first row of column {@code c}
   * not below {@code value} in the first candidate page of the first row group admitting it
   * (row groups and pages by bisection, the page by {@link Values#firstCandidate}), or -1; the
   * page is decoded from {@code reads} when not kept already.
   */
  long search(int c, long value, Reads reads) throws IOException {
    Object key = value;
    int[] span = groupBounds[c] != null ? admitting(groupBounds[c], value)
        : admitting(groups.size(), g -> mins[g][c], g -> maxs[g][c], key, order(c));
    for (int g = span[0]; g < span[1]; g++) {
      index(g);
      int[] candidates = candidatePages(g, c, key);
      if (candidates.length > 0) {
        int p = candidates[0];
        Values page = page(g, c, p, reads);
        return groupStarts[g] + firstRows[g][c][p] + page.firstCandidate(0, page.count(), key);
      }
    }
    return -1;
  }

  @Override
  public void close() throws IOException {
    source.close();
  }

  /** Bytes {@code [start, end)} of the file, once read. */
  static final class Region {
    final long start;
    final long end;
    byte[] bytes;

    Region(long start, long end) {
      this.start = start;
      this.end = end;
    }

    void read(Source source, DataFileRows.ReadListener listener) throws IOException {
      bytes = new byte[Math.toIntExact(end - start)];
      source.read(start, bytes, listener);
    }

    int index(long offset) {
      return (int) (offset - start);
    }

    ByteArrayInputStream stream(long offset, int length) {
      return new UnsyncedBytes(bytes, index(offset), length);
    }

    byte[] bytes(long offset, int length) {
      return Arrays.copyOfRange(bytes, index(offset), index(offset) + length);
    }

    int intAt(long offset) {
      return ByteBuffer.wrap(bytes, index(offset), 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
  }

  /**
   * A {@link ByteArrayInputStream} whose reads take no lock. Parquet's Thrift decoder reads the
   * footer, page indexes and page headers from a stream one byte at a time: without a lock per
   * byte, a footer of 44 row groups decodes in 360 us instead of 540 us.
   */
  private static final class UnsyncedBytes extends ByteArrayInputStream {
    UnsyncedBytes(byte[] bytes, int offset, int length) {
      super(bytes, offset, length);
    }

    @Override
    public int read() {
      return pos < count ? buf[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] into, int offset, int length) {
      if (pos >= count) {
        return -1;
      }
      int n = Math.min(length, count - pos);
      if (n == 1) {
        into[offset] = buf[pos];
      } else {
        System.arraycopy(buf, pos, into, offset, n);
      }
      pos += n;
      return n;
    }
  }

  /**
   * Positioned reads of one file, each counted as one read call. A local file is read with
   * positional reads of its channel (no buffering or checksum layer between a probe and the
   * page cache); any other through its FileIO stream, held open.
   */
  private abstract static class Source implements Closeable {
    static Source open(FileIO io, String location, DataFileRows.ReadListener listener) {
      listener.opened();
      URI uri = new org.apache.hadoop.fs.Path(location).toUri(); // as HadoopFileIO reads it
      if (io instanceof HadoopFileIO && (uri.getScheme() == null
          || uri.getScheme().equals("file"))) {
        try {
          FileChannel channel = FileChannel.open(Path.of(uri.getPath()),
              StandardOpenOption.READ);
          return new Source() {
            @Override
            void readFully(long position, byte[] into) throws IOException {
              ByteBuffer buffer = ByteBuffer.wrap(into);
              while (buffer.hasRemaining()) {
                if (channel.read(buffer, position + buffer.position()) < 0) {
                  throw new java.io.EOFException(location + " ends before "
                      + (position + into.length));
                }
              }
            }

            @Override
            public void close() throws IOException {
              channel.close();
            }
          };
        } catch (IOException e) {
          throw new UncheckedIOException("opening " + location + " for lookups", e);
        }
      }
      SeekableInputStream stream = io.newInputFile(location).newStream();
      return new Source() {
        @Override
        synchronized void readFully(long position, byte[] into) throws IOException {
          stream.seek(position);
          IOUtil.readFully(stream, into, 0, into.length);
        }

        @Override
        public void close() throws IOException {
          stream.close();
        }
      };
    }

    final void read(long position, byte[] into, DataFileRows.ReadListener listener)
        throws IOException {
      readFully(position, into);
      listener.read(into.length);
    }

    abstract void readFully(long position, byte[] into) throws IOException;
  }
}
