package io.skade.lookup;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * One Parquet data file opened the way a probe opens it, with the parts of a probe callable one at
 * a time: for {@code ProbeDecodingBenchmark}, which weighs each hand-written part against
 * parquet-mr doing the same work. Not a lookup API: {@link PointLookup} is. Not thread-safe.
 */
public final class ProbeParts implements Closeable {
  private final ProbeFile file;
  private final Schema schema;
  private final List<Types.NestedField> key;
  private final PointLookup.Counters counters;
  private final boolean keepPages;
  private final List<long[]> added = new ArrayList<>();
  private ProbeFile.Reads rowGroup;
  private int rowGroupIndex = -1;
  private long rowsDecoded;

  private ProbeParts(
      ProbeFile file,
      Schema schema,
      List<Types.NestedField> key,
      PointLookup.Counters counters,
      boolean keepPages) {
    this.file = file;
    this.schema = schema;
    this.key = key;
    this.counters = counters;
    this.keepPages = keepPages;
  }

  /**
   * {@code dataFile} of {@code table} opened for probes by {@code keyColumn} (its tail read and
   * parsed), counting into {@code counters}; decoded pages are kept when {@code keepPages}, else
   * dropped after each probe.
   *
   * @throws IllegalArgumentException when the file cannot be probed directly
   */
  public static ProbeParts open(
      Table table,
      DataFile dataFile,
      String keyColumn,
      PointLookup.Counters counters,
      boolean keepPages) {
    Schema schema = table.schema();
    List<Types.NestedField> key = List.of(schema.findField(keyColumn));
    ProbeParts[] parts = new ProbeParts[1];
    ProbeFile file =
        ProbeFile.open(
            table.io(),
            dataFile,
            (f, g, c, page, bytes) -> {
              if (!parts[0].keepPages) {
                parts[0].added.add(new long[] {g, c, page});
              }
            },
            counters);
    if (file == null) {
      throw new IllegalArgumentException(dataFile.location() + " cannot be probed directly");
    }
    parts[0] = new ProbeParts(file, schema, key, counters, keepPages);
    return parts[0];
  }

  /** Parses every row group's page indexes and bloom filters (probes do it as they reach one). */
  public void indexAll() {
    file.indexAll();
  }

  /** The rows of {@code keyValue}, as {@link PointLookup} finds them in this file (no deletes). */
  public List<Record> probe(Object keyValue) throws IOException {
    List<Record> rows = new ArrayList<>(1);
    Object[] stored = file.storedKey(schema, key, List.of(keyValue));
    long decoded = file.probe(schema, key, stored, Map.of(), rows, new ArrayList<>(1), counters);
    rowsDecoded += decoded;
    for (long[] page : added) {
      file.forget((int) page[0], (int) page[1], (int) page[2]);
    }
    added.clear();
    return rows;
  }

  /** The rows probes decoded so far (in the column that decoded most). */
  public long rowsDecoded() {
    return rowsDecoded;
  }

  public int rowGroups() {
    return file.rowGroupCount();
  }

  /** The file's column of table field {@code fieldId}. */
  public int column(int fieldId) {
    return file.columnOf(fieldId);
  }

  public int pages(int rowGroup, int column) {
    return file.pageCount(rowGroup, column);
  }

  /** Reads row group {@code g}'s bytes (one read), which {@link #decodePage} decodes from. */
  public void loadRowGroup(int g) throws IOException {
    rowGroup = file.readRowGroup(g, counters);
    rowGroupIndex = g;
  }

  /**
   * Page {@code p} of column {@code c} in the loaded row group: its header parsed, decompressed and
   * decoded (a dictionary decoded once and kept); returns its number of values.
   */
  public int decodePage(int c, int p) throws IOException {
    return file.decodePage(rowGroupIndex, c, p, rowGroup).count();
  }

  /**
   * Page {@code p} of column {@code c} in the loaded row group with its header parsed and its bytes
   * decompressed, for {@link #decodeDecompressed}.
   */
  public Object decompressPage(int c, int p) throws IOException {
    return file.decompressPage(rowGroupIndex, c, p, rowGroup);
  }

  /** A page from {@link #decompressPage} decoded; returns its number of values. */
  public int decodeDecompressed(int c, Object page) throws IOException {
    return file.decodeDecompressed(rowGroupIndex, c, (PageDecoder.DataPage) page, rowGroup).count();
  }

  /** The bloom filter hash of a long key value (XXH64 of its plain encoding). */
  public static long bloomHash(long value) {
    return BloomCheck.hash(value);
  }

  /** Whether row group {@code g}'s bloom filter on column {@code c} admits {@code hash}. */
  public boolean bloomAdmits(int g, int c, long hash) {
    return file.bloomAdmits(g, c, hash);
  }

  /**
   * The sorted-key search: the file position of the first row of the key column not below {@code
   * value} in its candidate page, or -1 (the page read and decoded when not kept).
   */
  public long search(long value) throws IOException {
    return file.search(file.columnOf(key.get(0).fieldId()), value, file.noReads(counters));
  }

  @Override
  public void close() throws IOException {
    file.close();
  }
}
