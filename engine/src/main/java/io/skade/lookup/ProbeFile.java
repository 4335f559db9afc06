package io.skade.lookup;

import io.skade.lookup.FileBytes.Region;
import io.skade.scan.DataFileRows;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.format.converter.ParquetMetadataConverter;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;

/**
 * A Parquet data file held open for point lookups. Opening it reads the file's tail once: the
 * footer, the page indexes and the bloom filters, which Parquet writes together at the end of the
 * file (one read, a second when they do not fit the first). A probe then prunes row groups by their
 * statistics and the key column's pages by its column index (both by bisection when the file is
 * sorted by the key; {@link FileIndex}); when a candidate page is not decoded yet, the bloom
 * filters decide whether to read it. It reads, in one byte-range read per row group where the pages
 * lie close together ({@link FileBytes}), only the pages of every column that cover the rows of a
 * candidate key page, decodes them ({@link PageDecoder}) and keeps the decoded pages and
 * dictionaries ({@link KeptPages}), within a bound in bytes that the JVM's probes share ({@link
 * PageCache}). A probe whose pages are kept reads and decodes nothing: it compares the key page's
 * values (by bisection in a sorted page; {@link DecodedPage}) and converts the matching rows'
 * values to Iceberg's generic ones ({@link StoredValues}).
 *
 * <p>Why this is hand-written rather than parquet-mr's {@code ParquetFileReader} with {@code
 * ColumnIndexFilter}, {@code readFilteredRowGroup} and its column readers, which it replaced:
 * ProbeDecodingBenchmark measures both doing the same work, and each class above says which of its
 * figures keeps it. Parsing (footer, page indexes, page and bloom filter headers), levels,
 * dictionaries and every encoding but PLAIN are parquet-mr's.
 *
 * <p>Only flat files whose columns carry field ids and page offset indexes are read this way;
 * {@link #open} returns null for any other file, which is then read through Iceberg's reader.
 */
final class ProbeFile implements Closeable {
  private static final ParquetReadOptions OPTIONS = ParquetReadOptions.builder().build();
  private static final ParquetMetadataConverter METADATA = new ParquetMetadataConverter(OPTIONS);

  /** Bytes read from the end of a local file on open: the footer and usually its indexes. */
  private static final int TAIL = 64 << 10;

  /**
   * Bytes read from the end of a remote file on open: a request costs far more than these bytes
   * (tens of milliseconds to the first byte on S3), so the footer, page indexes and bloom filters
   * of a file of a few dozen lookup-sized row groups come in one.
   */
  static final int REMOTE_TAIL = 256 << 10;

  private static final byte[] MAGIC = "PAR1".getBytes(StandardCharsets.US_ASCII);

  private final String location;
  private final FileBytes bytes;
  private final FileIndex index;
  private final KeptPages kept;

  /** An empty record of the schema probes last asked for, copied for each row found. */
  private volatile GenericRecord template;

  /** The plan of the schema and key probes asked with last: a lookup asks with the same ones. */
  private volatile Plan plan;

  /**
   * Bounds the decoded pages and dictionaries that open files keep, by bytes: it is told of each
   * one decoded and, to evict one, calls {@link #forget}.
   */
  interface PageCache {
    /**
     * Page {@code page} (or, when -1, the dictionary) of column {@code c} in row group {@code g} of
     * {@code file} was decoded and is kept.
     */
    void added(ProbeFile file, int g, int c, int page, long bytes);
  }

  private ProbeFile(String location, FileBytes bytes, ParquetMetadata footer, PageCache pages) {
    this.location = location;
    this.bytes = bytes;
    this.index = new FileIndex(location, footer, this::parsed);
    this.kept = new KeptPages(this, pages, index.groupCount(), index.columnCount());
  }

  /** Row group {@code g}'s page indexes are parsed: its pages get their places. */
  private void parsed(int g) {
    kept.makeRoom(g, index);
  }

  /**
   * The data file opened for probes (its tail read and parsed), or null when it cannot be probed
   * here: nested columns, columns without field ids or without offset indexes.
   */
  static ProbeFile open(
      FileIO io, DataFile dataFile, PageCache pages, DataFileRows.ReadListener listener) {
    return open(io, dataFile, pages, null, listener);
  }

  /**
   * As {@link #open(FileIO, DataFile, PageCache, DataFileRows.ReadListener)}, through {@code disk}.
   */
  static ProbeFile open(
      FileIO io,
      DataFile dataFile,
      PageCache pages,
      DiskCache disk,
      DataFileRows.ReadListener listener) {
    String location = dataFile.location();
    long length = dataFile.fileSizeInBytes();
    FileBytes bytes = FileBytes.open(io, location, length, disk, listener);
    try {
      Region tail = new Region(Math.max(0, length - (bytes.local() ? TAIL : REMOTE_TAIL)), length);
      tail.read(bytes, listener);
      int footerLength = tail.intAt(length - 8);
      if (!Arrays.equals(tail.bytes(length - 4, 4), MAGIC)
          || footerLength <= 0
          || footerLength > length - 12) {
        bytes.close();
        return null; // encrypted or not Parquet: Iceberg's reader says what is wrong
      }
      long footerStart = length - 8 - footerLength;
      if (footerStart < tail.start) {
        tail = tail.extendedTo(footerStart, bytes, listener);
      }
      ParquetMetadata footer =
          METADATA.readParquetMetadata(
              tail.stream(footerStart, footerLength), ParquetMetadataConverter.NO_FILTER);
      ProbeFile file = new ProbeFile(location, bytes, footer, pages);
      if (!file.index.flatWithFieldIds() || !file.index.loadIndexes(bytes, tail, listener)) {
        file.close(); // nested columns, no field ids or no page index: Iceberg's reader
        return null;
      }
      return file;
    } catch (IOException | RuntimeException e) {
      try {
        bytes.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new UncheckedIOException(
          "opening " + location + " for lookups",
          e instanceof IOException io0 ? io0 : new IOException(e));
    }
  }

  /** Drops a decoded page (or, when {@code page} is -1, dictionary): the cache evicted it. */
  void forget(int g, int c, int page) {
    kept.forget(g, c, page);
  }

  /**
   * Where a lookup's columns are in this file, worked out once per schema and key (a lookup asks
   * with the same ones on every probe): each schema column's column here (-1: not stored), with its
   * field id and type; each key column's; and whether every stored column decodes here.
   */
  private record Plan(
      Schema schema,
      List<Types.NestedField> key,
      int[] fieldColumns,
      int[] fieldIds,
      Type[] types,
      int[] keyColumns,
      boolean readable) {}

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
      int c = index.columnOf(field.fieldId());
      fieldColumns[f] = c;
      fieldIds[f] = field.fieldId();
      types[f] = field.type();
      readable &= c < 0 || StoredValues.decodable(field.type(), index.column(c).getPrimitiveType());
    }
    int[] keyColumns = new int[key.size()];
    for (int k = 0; k < keyColumns.length; k++) {
      keyColumns[k] = index.columnOf(key.get(k).fieldId());
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
   * probed for it (a key column it does not store, or a type without a comparable stored form). A
   * value this file's type cannot hold (a long beyond an int column) is {@link
   * StoredValues#NO_VALUE}.
   */
  Object[] storedKey(Schema schema, List<Types.NestedField> key, List<?> values) {
    int[] keyColumns = plan(schema, key).keyColumns();
    Object[] stored = new Object[keyColumns.length];
    for (int i = 0; i < keyColumns.length; i++) {
      int c = keyColumns[i];
      if (c < 0) {
        return null;
      }
      stored[i] =
          StoredValues.storedValue(
              key.get(i).type(), index.column(c).getPrimitiveType(), values.get(i));
      if (stored[i] == null) {
        return null;
      }
    }
    return stored;
  }

  /**
   * The rows of {@code schema} whose key columns hold {@code storedKey} (from {@link #storedKey}),
   * each with its position in the file in {@code positions}. {@code constants} give the columns the
   * file does not store (identity partitions, added columns). Returns the number of rows decoded
   * from the file's bytes (none when every page was in the cache).
   */
  long probe(
      Schema schema,
      List<Types.NestedField> key,
      Object[] storedKey,
      Map<Integer, ?> constants,
      List<Record> rows,
      List<Long> positions,
      DataFileRows.ReadListener listener)
      throws IOException {
    for (Object value : storedKey) {
      if (value == StoredValues.NO_VALUE) {
        return 0;
      }
    }
    Plan plan = plan(schema, key);
    int[] keyColumns = plan.keyColumns();
    long[] hashes = null;
    long decoded = 0;
    int c0 = keyColumns[0];
    int[] span = index.groupSpan(c0, storedKey[0]);
    for (int g = span[0]; g < span[1]; g++) {
      if (!index.inStatistics(g, keyColumns, storedKey)) {
        continue;
      }
      index.index(g);
      boolean bloomed = index.hasBlooms(g, keyColumns);
      int[] candidates = null;
      if (bloomed && index.ascendingPages(g, keyColumns[0])) {
        // Sorted by the key, the candidate pages come by bisection; when they are all kept, the
        // pages answer at once and exactly, and the filters (a hash, and a cache line of a filter
        // no probe of kept pages touches otherwise) are not asked. Nothing up front is then read
        // on their word either: the other columns' pages are read only on a match.
        candidates = candidatePages(g, keyColumns, storedKey);
        bloomed = !allKept(g, keyColumns[candidates[0]], candidates, 1);
      }
      // Otherwise the bloom filters first: in a file not sorted by the key every row group's
      // bounds admit it, and a filter's answer (one cache line) is the cheapest way past all but
      // one.
      if (bloomed) {
        hashes = hashes == null ? FileIndex.bloomHashes(storedKey) : hashes;
        if (!index.bloomsAdmit(g, keyColumns, hashes)) {
          continue;
        }
      }
      candidates = candidates == null ? candidatePages(g, keyColumns, storedKey) : candidates;
      int lead = candidates[0];
      if (candidates.length == 1) {
        continue;
      }
      OffsetIndex pages = index.offsets(g, keyColumns[lead]);
      for (int i = 1; i < candidates.length; i++) {
        int p = candidates[i];
        long from = pages.getFirstRowIndex(p);
        long to = pages.getLastRowIndex(p, index.rowCount(g)) + 1;
        decoded +=
            readRows(
                g, plan, storedKey, lead, from, to, bloomed, constants, rows, positions, listener);
      }
    }
    return decoded;
  }

  /**
   * The lead key column of row group {@code g} and its candidate pages, as {@code [lead,
   * pages...]}: the key column whose page index leaves the fewest pages leads; its candidate pages
   * are decoded, the other key columns only at the rows that match it.
   */
  private int[] candidatePages(int g, int[] keyColumns, Object[] storedKey) {
    int lead = 0;
    int[] candidates = index.candidatePages(g, keyColumns[0], storedKey[0]);
    for (int k = 1; k < keyColumns.length && candidates.length > 1; k++) {
      int[] other = index.candidatePages(g, keyColumns[k], storedKey[k]);
      if (other.length < candidates.length) {
        lead = k;
        candidates = other;
      }
    }
    int[] led = new int[candidates.length + 1];
    led[0] = lead;
    System.arraycopy(candidates, 0, led, 1, candidates.length);
    return led;
  }

  /** Whether pages {@code pages[from..]} of column {@code c} in row group {@code g} are kept. */
  private boolean allKept(int g, int c, int[] pages, int from) {
    for (int i = from; i < pages.length; i++) {
      if (kept.page(g, c, pages[i]) == null) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads the pages of row group {@code g} that cover rows {@code [from, to)} (a candidate page of
   * key column {@code lead}) in every column needed, matches the key on those rows and adds the
   * matching rows.
   */
  private long readRows(
      int g,
      Plan plan,
      Object[] storedKey,
      int lead,
      long from,
      long to,
      boolean bloomed,
      Map<Integer, ?> constants,
      List<Record> rows,
      List<Long> positions,
      DataFileRows.ReadListener listener)
      throws IOException {
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
    Reads regions =
        new Reads(bytes.readCoalesced(ranges, listener), listener, new long[index.columnCount()]);
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
      positions.add(index.groupStart(g) + matches[i]);
    }
    return regions.rowsDecoded();
  }

  /**
   * A new empty record of {@code schema}: a copy of a kept one, since {@code GenericRecord.create}
   * looks up the struct's field names in a shared cache on every call.
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
   * The byte ranges of column {@code c}'s pages over rows {@code [from, to)} and of its dictionary,
   * those not decoded already.
   */
  private void pageRanges(int g, int c, long from, long to, List<long[]> ranges) {
    OffsetIndex offsets = index.offsets(g, c);
    long[] starts = index.firstRows(g, c);
    for (int p = FileIndex.pageOf(starts, from); p < starts.length && starts[p] < to; p++) {
      if (kept.page(g, c, p) == null) {
        ranges.add(
            new long[] {
              offsets.getOffset(p), offsets.getOffset(p) + offsets.getCompressedPageSize(p)
            });
      }
    }
    long dictionary = index.dictionaryStart(g, c);
    if (dictionary >= 0 && kept.dictionary(g, c) == null) {
      ranges.add(new long[] {dictionary, index.chunk(g, c).getFirstDataPageOffset()});
    }
  }

  /**
   * The rows of {@code [from, to)} (relative to the row group) whose column {@code c} holds {@code
   * value}.
   */
  private int[] matchAll(int g, int c, Object value, long from, long to, Reads reads)
      throws IOException {
    long[] starts = index.firstRows(g, c);
    int[] matches = new int[4];
    int found = 0;
    for (int p = FileIndex.pageOf(starts, from); p < starts.length && starts[p] < to; p++) {
      DecodedPage page = page(g, c, p, reads);
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
    long[] starts = index.firstRows(g, c);
    int p = FileIndex.pageOf(starts, row);
    return page(g, c, p, reads).get((int) (row - starts[p]));
  }

  /** Column {@code c}'s value at {@code row} as an Iceberg value of {@code type}, or null. */
  private Object genericAt(int g, int c, int row, Reads reads, Type type) throws IOException {
    long[] starts = index.firstRows(g, c);
    int p = FileIndex.pageOf(starts, row);
    DecodedPage page = page(g, c, p, reads);
    int i = (int) (row - starts[p]);
    if (page.bytes() != null && type.typeId() == Type.TypeID.STRING) {
      return page.string(i); // straight from the page's bytes, without a Binary in between
    }
    Object value = page.get(i);
    return value == null
        ? null
        : StoredValues.generic(type, index.column(c).getPrimitiveType(), value);
  }

  /**
   * What a probe read: the regions, whom to tell of a read it makes late, and the values it decoded
   * per column.
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

  /** Page {@code p} of column {@code c} in row group {@code g}, decoded (or from the cache). */
  private DecodedPage page(int g, int c, int p, Reads reads) throws IOException {
    DecodedPage cached = kept.page(g, c, p);
    if (cached != null) {
      return cached;
    }
    DecodedPage values = decode(g, c, p, readPage(g, c, p, reads), reads);
    reads.decoded()[c] += values.count();
    kept.keep(g, c, p, values);
    return values;
  }

  /** Page {@code p}'s header parsed and its bytes decompressed. */
  private PageDecoder.DataPage readPage(int g, int c, int p, Reads reads) throws IOException {
    OffsetIndex offsets = index.offsets(g, c);
    long offset = offsets.getOffset(p);
    int length = offsets.getCompressedPageSize(p);
    Region region = bytes.regionOf(reads.regions(), offset, length, reads.listener());
    return PageDecoder.read(
        index.chunk(g, c).getCodec(),
        region,
        offset,
        length,
        () -> "page " + p + " of column " + index.column(c) + " in " + location);
  }

  private DecodedPage decode(int g, int c, int p, PageDecoder.DataPage data, Reads reads)
      throws IOException {
    Dictionary dictionary = data.encoding().usesDictionary() ? dictionary(g, c, reads) : null;
    return PageDecoder.decode(index.column(c), data, dictionary);
  }

  /** Column {@code c}'s dictionary in row group {@code g}, decoded (or from the cache). */
  private Dictionary dictionary(int g, int c, Reads reads) throws IOException {
    Dictionary dictionary = kept.dictionary(g, c);
    if (dictionary != null) {
      return dictionary;
    }
    ColumnDescriptor column = index.column(c);
    long offset = index.dictionaryStart(g, c);
    java.util.function.Supplier<String> chunk =
        () -> "column " + column + " of row group " + g + " in " + location;
    if (offset < 0) {
      throw PageDecoder.noDictionary(chunk);
    }
    int length = (int) (index.chunk(g, c).getFirstDataPageOffset() - offset);
    Region region = bytes.regionOf(reads.regions(), offset, length, reads.listener());
    PageDecoder.KeptDictionary decoded =
        PageDecoder.dictionary(column, index.chunk(g, c).getCodec(), region, offset, length, chunk);
    kept.keepDictionary(g, c, decoded);
    return decoded.dictionary();
  }

  // The parts of a probe one at a time, for ProbeParts (the benchmark weighing them against
  // parquet-mr): none of these is on a probe's path.

  int rowGroupCount() {
    return index.groupCount();
  }

  /** Parses every row group's page indexes and bloom filters, as probes reaching them would. */
  void indexAll() {
    for (int g = 0; g < index.groupCount(); g++) {
      index.index(g);
    }
  }

  int pageCount(int g, int c) {
    index.index(g);
    return index.offsets(g, c).getPageCount();
  }

  int columnOf(int fieldId) {
    return index.columnOf(fieldId);
  }

  /** Row group {@code g}'s column chunks, read in one read, for {@link #decodePage}. */
  Reads readRowGroup(int g, DataFileRows.ReadListener listener) throws IOException {
    index.index(g);
    long start = Long.MAX_VALUE;
    long end = 0;
    for (int c = 0; c < index.columnCount(); c++) {
      start = Math.min(start, index.chunk(g, c).getStartingPos());
      end = Math.max(end, index.chunk(g, c).getStartingPos() + index.chunk(g, c).getTotalSize());
    }
    Region region = new Region(start, end);
    region.read(bytes, listener);
    return new Reads(new Region[] {region}, listener, new long[index.columnCount()]);
  }

  /** No bytes read yet: pages are read (and kept) as a probe reaches them. */
  Reads noReads(DataFileRows.ReadListener listener) {
    return new Reads(FileBytes.NO_REGIONS, listener, new long[index.columnCount()]);
  }

  /** Page {@code p} parsed, decompressed and decoded from {@code reads}, not kept. */
  DecodedPage decodePage(int g, int c, int p, Reads reads) throws IOException {
    return decode(g, c, p, readPage(g, c, p, reads), reads);
  }

  /** Page {@code p}'s header parsed and its bytes decompressed, from {@code reads}. */
  PageDecoder.DataPage decompressPage(int g, int c, int p, Reads reads) throws IOException {
    return readPage(g, c, p, reads);
  }

  /** A decompressed page decoded, not kept. */
  DecodedPage decodeDecompressed(int g, int c, PageDecoder.DataPage data, Reads reads)
      throws IOException {
    return decode(g, c, -1, data, reads);
  }

  /** Whether row group {@code g}'s bloom filter on column {@code c} admits {@code hash}. */
  boolean bloomAdmits(int g, int c, long hash) {
    BloomCheck bloom = index.bloom(g, c);
    return bloom == null || bloom.mayContain(hash);
  }

  /**
   * The sorted-key search alone: the position in the file of the first row of column {@code c} not
   * below {@code value} in the first candidate page of the first row group admitting it (row groups
   * and pages by bisection, the page by {@link DecodedPage#firstCandidate}), or -1; the page is
   * read and decoded when not kept already.
   */
  long search(int c, long value, Reads reads) throws IOException {
    Object key = value;
    int[] span = index.groupSpan(c, key);
    for (int g = span[0]; g < span[1]; g++) {
      index.index(g);
      int[] candidates = index.candidatePages(g, c, key);
      if (candidates.length > 0) {
        int p = candidates[0];
        DecodedPage page = page(g, c, p, reads);
        return index.groupStart(g)
            + index.firstRows(g, c)[p]
            + page.firstCandidate(0, page.count(), key);
      }
    }
    return -1;
  }

  @Override
  public void close() throws IOException {
    bytes.close();
  }
}
