package io.skade.lookup;

import io.skade.lookup.FileBytes.Region;
import io.skade.scan.DataFileRows;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.format.Util;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.internal.column.columnindex.BoundaryOrder;
import org.apache.parquet.internal.column.columnindex.ColumnIndex;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.apache.parquet.internal.hadoop.metadata.IndexReference;
import org.apache.parquet.schema.PrimitiveComparator;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * What a probe knows of a Parquet file before reading any page: its row groups' statistics and,
 * parsed when a probe first reaches a row group, their page indexes (offset and column indexes) and
 * bloom filters, in arrays by row group and column; and the pruning over them: row groups by
 * statistics and bloom filters, a key column's pages by its column index, both by bisection over
 * their bounds (as longs for integral columns) when the file is sorted by the column.
 *
 * <p>The footer, the offset and column indexes and the bloom filter headers are parsed by
 * parquet-mr ({@code ParquetMetadataConverter}, {@code Util}); their bytes come from the one read
 * of the file's tail. The pruning is hand-written because parquet-mr's costs more for one key
 * (ProbeDecodingBenchmark, 1M rows in 32 files: finding a key's first row over kept pages 0.44-0.51
 * us here, 4.6-5.4 us with {@code StatisticsFilter} and {@code ColumnIndexFilter}, which build row
 * ranges per row group and search no sorted bounds; about 100 bytes allocated against 8,000).
 */
final class FileIndex {
  /** Parquet's order of plain INT64 and INT32 columns (signed): its comparators are not public. */
  private static final Object SIGNED_INT64 =
      org.apache.parquet.schema.Types.required(PrimitiveTypeName.INT64).named("long").comparator();

  private static final Object SIGNED_INT32 =
      org.apache.parquet.schema.Types.required(PrimitiveTypeName.INT32).named("int").comparator();

  private final String location;

  /** Told of each row group whose indexes were just parsed, before probes see them. */
  private final IntConsumer parsed;

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
   * The page bounds [row group][column] of a signed integral column whose pages ascend, as longs,
   * min and max of each page in turn (else null): searched without boxing, in one array.
   */
  private final long[][][] pageBounds;

  /** Whether a column chunk's pages have ascending bounds and no null page (a sorted file). */
  private final boolean[][] ascendingPages;

  private final BloomCheck[][] blooms;

  /** Each column chunk's statistics, as stored values (null: unknown), and whether all null. */
  private final Object[][] mins;

  private final Object[][] maxs;
  private final boolean[][] allNull;

  /** Whether a column's row groups have ascending bounds (a file sorted by it). */
  private final boolean[] ascendingGroups;

  /** The row groups' bounds of such a column when signed integral, as {@link #pageBounds}. */
  private final long[][] groupBounds;

  /** Where each column chunk's dictionary page starts, or -1 without one. */
  private final long[][] dictionaryStarts;

  /** The bytes of the page indexes and bloom filters, until every row group's are parsed. */
  private Region indexes; // guarded by this once the file is open

  /** Whether a row group's page indexes and bloom filters are parsed (1), by row group. */
  private final AtomicIntegerArray indexed;

  private int groupsIndexed; // guarded by this

  FileIndex(String location, ParquetMetadata footer, IntConsumer parsed) {
    this.location = location;
    this.parsed = parsed;
    this.groups = footer.getBlocks();
    this.columns =
        footer.getFileMetaData().getSchema().getColumns().toArray(new ColumnDescriptor[0]);
    this.orders = orders(columns);
    for (int c = 0; c < columns.length; c++) {
      PrimitiveType type = columns[c].getPrimitiveType();
      if (columns[c].getPath().length == 1
          && columns[c].getMaxRepetitionLevel() == 0
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
    this.blooms = new BloomCheck[count][columns.length];
    this.dictionaryStarts = new long[count][columns.length];
    this.indexed = new AtomicIntegerArray(count);
    this.mins = new Object[count][columns.length];
    this.maxs = new Object[count][columns.length];
    this.allNull = new boolean[count][columns.length];
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
        dictionaryStarts[g][c] =
            chunk.hasDictionaryPage() && chunk.getStartingPos() < chunk.getFirstDataPageOffset()
                ? chunk.getStartingPos()
                : -1;
      }
    }
    this.ascendingGroups = new boolean[columns.length];
    for (int c = 0; c < columns.length; c++) {
      boolean ascending = true;
      for (int g = 0; g < count && ascending; g++) {
        ascending =
            mins[g][c] != null
                && (g == 0
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

  /** Whether every column is a top-level one with a field id (else Iceberg's reader reads). */
  boolean flatWithFieldIds() {
    return columnOfField.size() == columns.length;
  }

  int groupCount() {
    return groups.size();
  }

  long rowCount(int g) {
    return groups.get(g).getRowCount();
  }

  /** The position in the file of row group {@code g}'s first row. */
  long groupStart(int g) {
    return groupStarts[g];
  }

  int columnCount() {
    return columns.length;
  }

  ColumnDescriptor column(int c) {
    return columns[c];
  }

  /** The column of table field {@code fieldId}, or -1 when the file does not store it. */
  int columnOf(int fieldId) {
    Integer c = columnOfField.get(fieldId);
    return c == null ? -1 : c;
  }

  ColumnChunkMetaData chunk(int g, int c) {
    return groups.get(g).getColumns().get(c);
  }

  /** Column {@code c}'s offset index in row group {@code g} (parsed: {@link #index} first). */
  OffsetIndex offsets(int g, int c) {
    return offsets[g][c];
  }

  /** Each page's first row of column {@code c} in row group {@code g} (parsed first). */
  long[] firstRows(int g, int c) {
    return firstRows[g][c];
  }

  /** Where column chunk {@code c} of row group {@code g} has its dictionary page, or -1. */
  long dictionaryStart(int g, int c) {
    return dictionaryStarts[g][c];
  }

  /** Row group {@code g}'s bloom filter on column {@code c} (parsed first), or null. */
  BloomCheck bloom(int g, int c) {
    return blooms[g][c];
  }

  /**
   * The row groups whose bounds of column {@code c} admit {@code value}, as {@code [first, end)}:
   * by bisection when the row groups ascend by it, else all.
   */
  int[] groupSpan(int c, Object value) {
    return groupBounds[c] != null
        ? admitting(groupBounds[c], ((Number) value).longValue())
        : ascendingGroups[c]
            ? admitting(groups.size(), g -> mins[g][c], g -> maxs[g][c], value, order(c))
            : new int[] {0, groups.size()};
  }

  /**
   * Reads the bytes of every column's offset index, column index and bloom filter, in one read with
   * the footer: Parquet writes them just before it, so they are usually in {@code tail} already. A
   * row group's are parsed when a probe first reaches it ({@link #index}): with dozens of row
   * groups per file, parsing them all would make a file's first probe several times slower.
   */
  boolean loadIndexes(FileBytes source, Region tail, DataFileRows.ReadListener listener)
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
      indexes = tail.extendedTo(first, source, listener); // the tail is not read again
    }
    return true;
  }

  /**
   * Parses row group {@code g}'s page indexes and bloom filters, once, and tells the file (which
   * makes room for the row group's decoded pages). The flag is set after them (a volatile write),
   * so a probe that sees it set sees them whole.
   */
  void index(int g) {
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
      parsed.accept(g);
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
      offsets[g][c] =
          ParquetMetadataConverter.fromParquetOffsetIndex(
              Util.readOffsetIndex(indexes.stream(ref.getOffset(), ref.getLength())));
      firstRows[g][c] = new long[offsets[g][c].getPageCount()];
      for (int p = 0; p < firstRows[g][c].length; p++) {
        firstRows[g][c][p] = offsets[g][c].getFirstRowIndex(p);
      }
      ref = chunk.getColumnIndexReference();
      if (ref != null) {
        loadColumnIndex(
            g,
            c,
            ParquetMetadataConverter.fromParquetColumnIndex(
                columns[c].getPrimitiveType(),
                Util.readColumnIndex(indexes.stream(ref.getOffset(), ref.getLength()))));
      }
      if (chunk.getBloomFilterOffset() >= 0) {
        blooms[g][c] =
            BloomCheck.read(
                indexes.stream(
                    chunk.getBloomFilterOffset(),
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
        pageMins[g][c][p] = StoredValues.statValue(type, mins.get(p));
        pageMaxs[g][c][p] = StoredValues.statValue(type, maxs.get(p));
      }
    }
    ascendingPages[g][c] = !anyNullPage && index.getBoundaryOrder() == BoundaryOrder.ASCENDING;
    if (ascendingPages[g][c] && signedIntegral(c)) {
      Object[] lows = pageMins[g][c];
      Object[] highs = pageMaxs[g][c];
      pageBounds[g][c] = longBounds(pages, p -> lows[p], p -> highs[p]);
    }
  }

  /** Row-group pruning by the statistics of every key column. */
  boolean inStatistics(int g, int[] keyColumns, Object[] storedKey) {
    for (int k = 0; k < keyColumns.length; k++) {
      int c = keyColumns[k];
      if (allNull[g][c]) {
        return false;
      }
      if (mins[g][c] != null
          && (order(c).compare(mins[g][c], storedKey[k]) > 0
              || order(c).compare(storedKey[k], maxs[g][c]) > 0)) {
        return false;
      }
    }
    return true;
  }

  /** Row-group pruning by the bloom filters of every key column. */
  boolean bloomsAdmit(int g, int[] keyColumns, long[] hashes) {
    for (int k = 0; k < keyColumns.length; k++) {
      BloomCheck bloom = blooms[g][keyColumns[k]];
      if (bloom != null && hashes[k] != BloomCheck.NO_HASH && !bloom.mayContain(hashes[k])) {
        return false;
      }
    }
    return true;
  }

  /** Whether row group {@code g} has a bloom filter on some key column. */
  boolean hasBlooms(int g, int[] keyColumns) {
    for (int c : keyColumns) {
      if (blooms[g][c] != null) {
        return true;
      }
    }
    return false;
  }

  /** The bloom filter hash of each key value, computed once per probe. */
  static long[] bloomHashes(Object[] storedKey) {
    long[] hashes = new long[storedKey.length];
    for (int k = 0; k < hashes.length; k++) {
      hashes[k] = BloomCheck.hash(storedKey[k]);
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
   * Whether column {@code c}'s pages in row group {@code g} ascend (the file is sorted by it), so
   * that {@link #candidatePages} finds them by bisection.
   */
  boolean ascendingPages(int g, int c) {
    return ascendingPages[g][c];
  }

  /** The pages of column {@code c} in row group {@code g} whose index admits {@code value}. */
  int[] candidatePages(int g, int c, Object value) {
    int count = offsets[g][c].getPageCount();
    if (ascendingPages[g][c]) {
      Object[] lows = pageMins[g][c];
      Object[] highs = pageMaxs[g][c];
      int[] span =
          pageBounds[g][c] != null
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
  private static int[] admitting(
      int count,
      IntFunction<Object> min,
      IntFunction<Object> max,
      Object value,
      PrimitiveComparator<Object> order) {
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

  static int pageOf(long[] firstRows, long row) {
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
}
