package io.skade.benchmarks;

import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PrimitiveIterator;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.bytes.ByteBufferInputStream;
import org.apache.parquet.bytes.BytesInput;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.ValuesType;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.DataPage;
import org.apache.parquet.column.page.DataPageV1;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.page.PageReader;
import org.apache.parquet.column.values.ValuesReader;
import org.apache.parquet.column.values.bloomfilter.BloomFilter;
import org.apache.parquet.compression.CompressionCodecFactory;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.filter2.bloomfilterlevel.BloomFilterImpl;
import org.apache.parquet.filter2.compat.FilterCompat;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.parquet.filter2.predicate.Operators;
import org.apache.parquet.filter2.statisticslevel.StatisticsFilter;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.BloomFilterReader;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexFilter;
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexStore;
import org.apache.parquet.internal.filter2.columnindex.RowRanges;
import org.apache.parquet.io.InputFile;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * parquet-mr doing a point lookup's work on one data file of {@link SkadeDim}'s table, for {@link
 * ProbeDecodingBenchmark}: its {@code ParquetFileReader} holds the footer; a probe drops row groups
 * by statistics ({@code StatisticsFilter}) and bloom filters ({@code BloomFilterImpl}), selects
 * rows by the column index ({@code ColumnIndexFilter}), reads them with {@code
 * readFilteredRowGroup} and finds the key's rows with its column readers. With a page cache, it
 * keeps the pages its {@code PageReader}s return, decoded by its {@code ValuesReader}s into arrays,
 * and a probe whose pages are kept scans the kept key page. Not thread-safe.
 */
final class ParquetMrProbes implements Closeable {
  static final ParquetReadOptions OPTIONS = ParquetReadOptions.builder().build();
  static final ParquetMetadataConverter METADATA = new ParquetMetadataConverter(OPTIONS);
  static final CompressionCodecFactory CODECS = OPTIONS.getCodecFactory();
  private static final Operators.LongColumn ID = FilterApi.longColumn("id");

  private final CountingFile file;
  private final ParquetFileReader reader;
  private final MessageType schema;
  private final ColumnDescriptor[] columns;
  private final Set<ColumnPath> paths;
  private final List<BlockMetaData> blocks;
  private final long[] groupStarts;
  private final String createdBy;
  private final GroupConverter converter;
  private final Schema tableSchema;
  private final BloomFilterReader[] blooms;

  /** Decoded pages by row group, column and page; null without a page cache. */
  private final Map<Long, Decoded> pages;

  private long rowsDecoded;

  ParquetMrProbes(CountingFile file, Schema tableSchema, boolean cachePages) throws IOException {
    this.file = file;
    this.reader = new ParquetFileReader(file, OPTIONS);
    this.schema = reader.getFileMetaData().getSchema();
    this.columns = schema.getColumns().toArray(new ColumnDescriptor[0]);
    this.paths = new java.util.HashSet<>();
    for (ColumnDescriptor column : columns) {
      paths.add(ColumnPath.get(column.getPath()));
    }
    this.blocks = reader.getRowGroups();
    this.groupStarts = new long[blocks.size()];
    for (int g = 1; g < blocks.size(); g++) {
      groupStarts[g] = groupStarts[g - 1] + blocks.get(g - 1).getRowCount();
    }
    this.createdBy = reader.getFileMetaData().getCreatedBy();
    this.converter = new GroupRecordConverter(schema).getRootConverter();
    this.tableSchema = tableSchema;
    this.blooms = new BloomFilterReader[blocks.size()];
    this.pages = cachePages ? new HashMap<>() : null;
  }

  /** Reads every row group's page indexes and key bloom filter, as the open figure counts. */
  void indexAll() throws IOException {
    for (int g = 0; g < blocks.size(); g++) {
      ColumnIndexStore store = reader.getColumnIndexStore(g);
      for (ColumnPath path : paths) {
        store.getColumnIndex(path);
        store.getOffsetIndex(path);
      }
      bloom(g).readBloomFilter(blocks.get(g).getColumns().get(0));
    }
  }

  private BloomFilterReader bloom(int g) {
    if (blooms[g] == null) {
      blooms[g] = reader.getBloomFilterDataReader(g); // keeps what it reads
    }
    return blooms[g];
  }

  long rowsDecoded() {
    return rowsDecoded;
  }

  /** The rows of {@code key}. */
  List<Record> probe(long key) throws IOException {
    FilterPredicate predicate = FilterApi.eq(ID, key);
    FilterCompat.Filter filter = FilterCompat.get(predicate);
    List<Record> found = new ArrayList<>(1);
    for (int g = 0; g < blocks.size(); g++) {
      BlockMetaData block = blocks.get(g);
      if (StatisticsFilter.canDrop(predicate, block.getColumns())
          || BloomFilterImpl.canDrop(predicate, block.getColumns(), bloom(g))) {
        continue;
      }
      RowRanges ranges =
          ColumnIndexFilter.calculateRowRanges(
              filter, reader.getColumnIndexStore(g), paths, block.getRowCount());
      if (ranges.rowCount() == 0) {
        continue;
      }
      if (pages == null) {
        readRows(g, ranges, key, found);
      } else {
        cachedRows(g, ranges, key, found);
      }
    }
    return found;
  }

  /** readFilteredRowGroup and its column readers, row by row over the selected rows. */
  private void readRows(int g, RowRanges ranges, long key, List<Record> found) throws IOException {
    PageReadStore store = reader.readFilteredRowGroup(g, ranges);
    ColumnReadStoreImpl readers = new ColumnReadStoreImpl(store, converter, schema, createdBy);
    ColumnReader[] columnReaders = new ColumnReader[columns.length];
    for (int c = 0; c < columns.length; c++) {
      columnReaders[c] = readers.getColumnReader(columns[c]);
    }
    PrimitiveIterator.OfLong rows = store.getRowIndexes().orElse(null);
    long count = store.getRowCount();
    rowsDecoded += count;
    for (long i = 0; i < count; i++) {
      long row = rows == null ? i : rows.nextLong();
      ColumnReader id = columnReaders[0];
      boolean match = id.getLong() == key;
      id.consume();
      GenericRecord record = match ? GenericRecord.create(tableSchema) : null;
      if (match) {
        record.set(0, key);
      }
      for (int c = 1; c < columns.length; c++) {
        ColumnReader column = columnReaders[c];
        if (column.getCurrentDefinitionLevel() == columns[c].getMaxDefinitionLevel()) {
          if (match) {
            record.set(c, value(columns[c], column));
          } else {
            column.skip();
          }
        }
        column.consume();
      }
      if (match) {
        found.add(record);
      }
    }
  }

  private static Object value(ColumnDescriptor column, ColumnReader reader) {
    return switch (column.getPrimitiveType().getPrimitiveTypeName()) {
      case INT64 -> reader.getLong();
      case INT32 -> reader.getInteger();
      case BINARY -> reader.getBinary().toStringUsingUTF8();
      default -> throw new IllegalStateException("not in the benchmark's table: " + column);
    };
  }

  /** The selected key pages from the page cache, read and decoded first when not kept. */
  private void cachedRows(int g, RowRanges ranges, long key, List<Record> found)
      throws IOException {
    ColumnIndexStore store = reader.getColumnIndexStore(g);
    OffsetIndex keyPages = store.getOffsetIndex(ColumnPath.get(columns[0].getPath()));
    long rowCount = blocks.get(g).getRowCount();
    boolean filled = false;
    for (RowRanges.Range range : ranges.getRanges()) {
      for (int p = pageOf(keyPages, range.from);
          p < keyPages.getPageCount() && keyPages.getFirstRowIndex(p) <= range.to;
          p++) {
        Decoded page = pages.get(pageKey(g, 0, p));
        if (page == null && !filled) {
          fill(g, ranges);
          filled = true;
          page = pages.get(pageKey(g, 0, p));
        }
        long first = keyPages.getFirstRowIndex(p);
        for (int i = 0; i < page.count(); i++) {
          if (page.longs()[i] == key) {
            found.add(row(g, store, first + i));
          }
        }
      }
    }
  }

  private Record row(int g, ColumnIndexStore store, long row) {
    GenericRecord record = GenericRecord.create(tableSchema);
    for (int c = 0; c < columns.length; c++) {
      OffsetIndex index = store.getOffsetIndex(ColumnPath.get(columns[c].getPath()));
      int p = pageOf(index, row);
      Decoded page = pages.get(pageKey(g, c, p));
      int i = (int) (row - index.getFirstRowIndex(p));
      record.set(c, page.get(i));
    }
    return record;
  }

  /** readFilteredRowGroup, each page its PageReaders return decoded and kept. */
  private void fill(int g, RowRanges ranges) throws IOException {
    PageReadStore store = reader.readFilteredRowGroup(g, ranges);
    ColumnIndexStore indexes = reader.getColumnIndexStore(g);
    for (int c = 0; c < columns.length; c++) {
      PageReader pageReader = store.getPageReader(columns[c]);
      DictionaryPage dictionaryPage = pageReader.readDictionaryPage();
      Dictionary dictionary =
          dictionaryPage == null
              ? null
              : dictionaryPage.getEncoding().initDictionary(columns[c], dictionaryPage);
      OffsetIndex index = indexes.getOffsetIndex(ColumnPath.get(columns[c].getPath()));
      int read = 0; // an unfiltered read (every row selected) returns every page, unnumbered
      for (DataPage page = pageReader.readPage(); page != null; page = pageReader.readPage()) {
        DataPageV1 v1 = (DataPageV1) page;
        Decoded decoded =
            decode(
                columns[c],
                v1.getValueCount(),
                v1.getRlEncoding(),
                v1.getDlEncoding(),
                v1.getValueEncoding(),
                v1.getBytes().toInputStream(),
                dictionary);
        rowsDecoded += c == 0 ? decoded.count() : 0;
        long firstRow = page.getFirstRowIndex().orElse(index.getFirstRowIndex(read++));
        pages.put(pageKey(g, c, pageOf(index, firstRow)), decoded);
      }
    }
  }

  private static long pageKey(int g, int c, int p) {
    return ((long) g << 40) | ((long) c << 32) | p;
  }

  static int pageOf(OffsetIndex index, long row) {
    int low = 0;
    int high = index.getPageCount() - 1;
    while (low < high) {
      int mid = (low + high + 1) >>> 1;
      if (index.getFirstRowIndex(mid) <= row) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  }

  /** A page's values decoded by parquet-mr's ValuesReaders into arrays (nulls: not set). */
  record Decoded(int count, long[] longs, int[] ints, Binary[] binaries, boolean[] nulls) {
    Object get(int i) {
      if (nulls != null && nulls[i]) {
        return null;
      }
      return longs != null
          ? (Object) longs[i]
          : ints != null
              ? (Object) ints[i]
              : new String(binaries[i].getBytesUnsafe(), StandardCharsets.UTF_8);
    }
  }

  static Decoded decode(
      ColumnDescriptor column,
      int count,
      Encoding repetition,
      Encoding definition,
      Encoding encoding,
      ByteBufferInputStream in,
      Dictionary dictionary)
      throws IOException {
    ValuesReader repetitions = repetition.getValuesReader(column, ValuesType.REPETITION_LEVEL);
    repetitions.initFromPage(count, in);
    ValuesReader definitions = definition.getValuesReader(column, ValuesType.DEFINITION_LEVEL);
    definitions.initFromPage(count, in);
    ValuesReader values =
        encoding.usesDictionary()
            ? encoding.getDictionaryBasedValuesReader(column, ValuesType.VALUES, dictionary)
            : encoding.getValuesReader(column, ValuesType.VALUES);
    values.initFromPage(count, in);
    PrimitiveTypeName type = column.getPrimitiveType().getPrimitiveTypeName();
    long[] longs = type == PrimitiveTypeName.INT64 ? new long[count] : null;
    int[] ints = type == PrimitiveTypeName.INT32 ? new int[count] : null;
    Binary[] binaries = type == PrimitiveTypeName.BINARY ? new Binary[count] : null;
    boolean[] nulls = null;
    int max = column.getMaxDefinitionLevel();
    for (int i = 0; i < count; i++) {
      if (max > 0 && definitions.readInteger() != max) {
        nulls = nulls == null ? new boolean[count] : nulls;
        nulls[i] = true;
      } else if (longs != null) {
        longs[i] = values.readLong();
      } else if (ints != null) {
        ints[i] = values.readInteger();
      } else {
        binaries[i] = values.readBytes();
      }
    }
    return new Decoded(count, longs, ints, binaries, nulls);
  }

  /** A data page's header and its values' bytes decompressed. */
  record Decompressed(PageHeader header, byte[] bytes) {}

  /**
   * A page of a chunk's bytes ({@code bytes} from file offset {@code base}) as parquet-mr reads
   * one: {@code Util.readPageHeader}, then its codec's {@code BytesInputDecompressor}.
   */
  static Decompressed decompress(
      ColumnChunkMetaData chunk, byte[] bytes, long base, long offset, int length)
      throws IOException {
    ByteArrayInputStream in = new ByteArrayInputStream(bytes, (int) (offset - base), length);
    PageHeader header = Util.readPageHeader(in);
    int start = (int) (offset - base) + length - in.available();
    BytesInput page =
        CODECS
            .getDecompressor(chunk.getCodec())
            .decompress(
                BytesInput.from(bytes, start, header.getCompressed_page_size()),
                header.getUncompressed_page_size());
    return new Decompressed(header, page.toByteArray());
  }

  /** A decompressed page decoded by parquet-mr's {@code ValuesReader}s. */
  static Decoded decode(ColumnDescriptor column, Decompressed page, Dictionary dictionary)
      throws IOException {
    org.apache.parquet.format.DataPageHeader data = page.header().getData_page_header();
    return decode(
        column,
        data.getNum_values(),
        METADATA.getEncoding(data.getRepetition_level_encoding()),
        METADATA.getEncoding(data.getDefinition_level_encoding()),
        METADATA.getEncoding(data.getEncoding()),
        ByteBufferInputStream.wrap(ByteBuffer.wrap(page.bytes())),
        dictionary);
  }

  /** A chunk's dictionary, read from its bytes as {@link #decodePage} reads a page, or null. */
  static Dictionary dictionary(
      ColumnDescriptor column, ColumnChunkMetaData chunk, byte[] bytes, long base)
      throws IOException {
    if (!chunk.hasDictionaryPage() || chunk.getStartingPos() >= chunk.getFirstDataPageOffset()) {
      return null;
    }
    int length = (int) (chunk.getFirstDataPageOffset() - chunk.getStartingPos());
    ByteArrayInputStream in =
        new ByteArrayInputStream(bytes, (int) (chunk.getStartingPos() - base), length);
    PageHeader header = Util.readPageHeader(in);
    int start = (int) (chunk.getStartingPos() - base) + length - in.available();
    BytesInput page =
        CODECS
            .getDecompressor(chunk.getCodec())
            .decompress(
                BytesInput.from(bytes, start, header.getCompressed_page_size()),
                header.getUncompressed_page_size());
    DictionaryPage dictionary =
        new DictionaryPage(
            BytesInput.from(page.toByteArray()),
            header.getDictionary_page_header().getNum_values(),
            METADATA.getEncoding(header.getDictionary_page_header().getEncoding()));
    return dictionary.getEncoding().initDictionary(column, dictionary);
  }

  ParquetFileReader reader() {
    return reader;
  }

  ColumnDescriptor[] columns() {
    return columns;
  }

  long groupStart(int g) {
    return groupStarts[g];
  }

  /** The bloom filter of the key column in row group {@code g}. */
  BloomFilter keyBloom(int g) {
    return bloom(g).readBloomFilter(blocks.get(g).getColumns().get(0));
  }

  /**
   * The sorted-key search with parquet-mr's pruning: the file position of the first row of the key
   * page the column index selects holding a value not below {@code key}, scanned (its rows in the
   * kept decoded page), or -1.
   */
  long search(long key) throws IOException {
    FilterPredicate predicate = FilterApi.eq(ID, key);
    FilterCompat.Filter filter = FilterCompat.get(predicate);
    for (int g = 0; g < blocks.size(); g++) {
      BlockMetaData block = blocks.get(g);
      if (StatisticsFilter.canDrop(predicate, block.getColumns())) {
        continue;
      }
      RowRanges ranges =
          ColumnIndexFilter.calculateRowRanges(
              filter, reader.getColumnIndexStore(g), paths, block.getRowCount());
      if (ranges.rowCount() == 0) {
        continue;
      }
      OffsetIndex keyPages =
          reader.getColumnIndexStore(g).getOffsetIndex(ColumnPath.get(columns[0].getPath()));
      int p = pageOf(keyPages, ranges.getRanges().get(0).from);
      Decoded page = pages.get(pageKey(g, 0, p));
      if (page == null) {
        fill(g, ranges);
        page = pages.get(pageKey(g, 0, p));
      }
      int i = 0;
      while (i < page.count() && page.longs()[i] < key) {
        i++;
      }
      return groupStarts[g] + keyPages.getFirstRowIndex(p) + i;
    }
    return -1;
  }

  @Override
  public void close() throws IOException {
    reader.close();
  }

  /**
   * A local file for parquet-mr, each read of the file counted (calls and bytes). Its streams
   * buffer reads smaller than {@value #BUFFER} bytes as Hadoop's local file system does
   * (io.file.buffer.size), so that parquet-mr's Thrift decoding, which reads page indexes from the
   * stream a byte at a time, is counted as the reads of the file it makes on a real stream.
   */
  static final class CountingFile implements InputFile {
    static final int BUFFER = 4096;
    private final Path path;
    private final long length;
    long reads;
    long bytes;

    CountingFile(Path path) throws IOException {
      this.path = path;
      this.length = java.nio.file.Files.size(path);
    }

    @Override
    public long getLength() {
      return length;
    }

    @Override
    public SeekableInputStream newStream() throws IOException {
      FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
      return new SeekableInputStream() {
        private final byte[] buffer = new byte[BUFFER];
        private long bufferStart;
        private int bufferLength;
        private long position;

        @Override
        public long getPos() {
          return position;
        }

        @Override
        public void seek(long newPos) {
          position = newPos;
        }

        @Override
        public int read() throws IOException {
          byte[] one = new byte[1];
          return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] into, int offset, int count) throws IOException {
          return read(ByteBuffer.wrap(into, offset, count));
        }

        @Override
        public void readFully(byte[] into) throws IOException {
          readFully(ByteBuffer.wrap(into));
        }

        @Override
        public void readFully(byte[] into, int offset, int count) throws IOException {
          readFully(ByteBuffer.wrap(into, offset, count));
        }

        @Override
        public int read(ByteBuffer into) throws IOException {
          if (position >= length) {
            return -1;
          }
          if (into.remaining() >= BUFFER) {
            int n = channel.read(into, position);
            position += n;
            reads++;
            bytes += n;
            return n;
          }
          if (position < bufferStart || position >= bufferStart + bufferLength) {
            ByteBuffer fill = ByteBuffer.wrap(buffer);
            bufferStart = position;
            bufferLength = Math.max(0, channel.read(fill, position));
            reads++;
            bytes += bufferLength;
          }
          int at = (int) (position - bufferStart);
          int n = Math.min(into.remaining(), bufferLength - at);
          into.put(buffer, at, n);
          position += n;
          return n;
        }

        @Override
        public void readFully(ByteBuffer into) throws IOException {
          while (into.hasRemaining()) {
            if (read(into) < 0) {
              throw new EOFException(path + " ends before " + (position + into.remaining()));
            }
          }
        }

        @Override
        public void close() throws IOException {
          channel.close();
        }
      };
    }
  }
}
