package io.skade.lookup;

import io.skade.changelog.DataFileRows;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PrimitiveIterator;
import java.util.Set;
import java.util.UUID;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.parquet.ParquetBloomRowGroupFilter;
import org.apache.iceberg.parquet.ParquetMetricsRowGroupFilter;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.DateTimeUtil;
import org.apache.iceberg.util.UUIDUtil;
import org.apache.parquet.ParquetReadOptions;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.filter2.compat.FilterCompat;
import org.apache.parquet.filter2.predicate.FilterApi;
import org.apache.parquet.filter2.predicate.FilterPredicate;
import org.apache.parquet.hadoop.BloomFilterReader;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.internal.filter2.columnindex.ColumnIndexFilter;
import org.apache.parquet.internal.filter2.columnindex.RowRanges;
import org.apache.parquet.io.DelegatingSeekableInputStream;
import org.apache.parquet.io.SeekableInputStream;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.io.api.Converter;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.io.api.PrimitiveConverter;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType;

/**
 * A Parquet data file held open for point lookups: its footer is parsed once, its stream stays
 * open, and the bloom filters and page indexes it reads are kept, so a warm probe reads only the
 * pages that can hold the key. A probe prunes row groups by statistics and bloom filters, then
 * pages by the key column's column index, and reads only the rows of those pages (every column's
 * pages that cover them, through the offset indexes), decoding values straight into Iceberg's
 * generic row values.
 *
 * <p>Only flat tables whose files carry field ids are read this way; {@link #open} returns null
 * for any other file, which is then read through Iceberg's reader.
 */
final class ProbeFile implements Closeable {
  private final CountingFile file;
  private final ParquetFileReader reader;
  private final MessageType fileSchema;
  private final long[] rowGroupStarts;
  /** Rows of the pages the last {@link #candidates} call decoded (its key columns). */
  long decoded;
  /** Each row group's bloom filter reader, which keeps the filters it read. */
  private final BloomFilterReader[] blooms;
  /** The file's column of each table field id. */
  private final Map<Integer, ColumnDescriptor> columns = new HashMap<>();
  private final Map<Integer, PrimitiveType> types = new HashMap<>();
  /** Every column's path, for the page index filter. */
  private final Set<ColumnPath> paths = new java.util.HashSet<>();

  private ProbeFile(CountingFile file, ParquetFileReader reader) {
    this.file = file;
    this.reader = reader;
    this.fileSchema = reader.getFooter().getFileMetaData().getSchema();
    List<BlockMetaData> blocks = reader.getRowGroups();
    this.rowGroupStarts = new long[blocks.size()];
    this.blooms = new BloomFilterReader[blocks.size()];
    long start = 0;
    for (int i = 0; i < blocks.size(); i++) {
      rowGroupStarts[i] = start;
      start += blocks.get(i).getRowCount();
    }
    for (ColumnDescriptor column : fileSchema.getColumns()) {
      paths.add(ColumnPath.get(column.getPath()));
      PrimitiveType type = column.getPrimitiveType();
      if (column.getPath().length == 1 && type.getId() != null) {
        columns.put(type.getId().intValue(), column);
        types.put(type.getId().intValue(), type);
      }
    }
  }

  /** The file opened for probes (one open, the footer read), or null if it cannot be probed. */
  static ProbeFile open(InputFile input, DataFileRows.ReadListener io) {
    CountingFile file = new CountingFile(input);
    file.listener = io;
    try {
      SeekableInputStream stream = file.newStream();
      ParquetFileReader reader = new ParquetFileReader(file, ParquetReadOptions.builder().build(),
          stream);
      ProbeFile opened = new ProbeFile(file, reader);
      if (opened.columns.size() != opened.fileSchema.getColumns().size()) {
        opened.close(); // nested columns or no field ids: Iceberg's reader handles those
        return null;
      }
      return opened;
    } catch (IOException e) {
      throw new UncheckedIOException("opening " + input.location() + " for lookups", e);
    }
  }

  /** Whether every column of {@code schema} in this file can be decoded here. */
  boolean canRead(Schema schema) {
    for (Types.NestedField field : schema.columns()) {
      PrimitiveType type = types.get(field.fieldId());
      if (type != null && !decodable(field.type(), type)) {
        return false;
      }
    }
    return true;
  }

  /**
   * The rows of {@code schema} whose key columns hold the key (plus their position in the file,
   * in {@code positions}), found in the pages that the row groups' statistics and bloom filters
   * and the page indexes do not rule out. The key columns of those pages are decoded; the other
   * columns only for matching rows. {@code constants} give columns the file does not store
   * (identity partitions).
   */
  synchronized List<Record> candidates(Schema schema, Expression filter,
      FilterPredicate pagePredicate, Key key, Map<Integer, ?> constants, List<Long> positions,
      DataFileRows.ReadListener io) throws IOException {
    file.listener = io;
    decoded = 0;
    List<Record> rows = new ArrayList<>();
    ParquetMetricsRowGroupFilter stats = new ParquetMetricsRowGroupFilter(schema, filter, false);
    ParquetBloomRowGroupFilter bloomFilter =
        new ParquetBloomRowGroupFilter(schema, filter, false);
    List<BlockMetaData> blocks = reader.getRowGroups();
    for (int i = 0; i < blocks.size(); i++) {
      BlockMetaData block = blocks.get(i);
      if (!stats.shouldRead(fileSchema, block)
          || !bloomFilter.shouldRead(fileSchema, block, blooms(i))) {
        continue;
      }
      RowRanges ranges = pagePredicate == null ? RowRanges.createSingle(block.getRowCount())
          : ColumnIndexFilter.calculateRowRanges(FilterCompat.get(pagePredicate),
              reader.getColumnIndexStore(i), paths, block.getRowCount());
      if (ranges.rowCount() == 0) {
        continue;
      }
      try (PageReadStore pages = reader.readFilteredRowGroup(i, ranges)) {
        decoded += ranges.rowCount();
        decode(schema, pages, ranges, rowGroupStarts[i], key, constants, rows, positions);
      }
    }
    return rows;
  }

  private BloomFilterReader blooms(int rowGroup) {
    if (blooms[rowGroup] == null) {
      blooms[rowGroup] = reader.getBloomFilterDataReader(rowGroup);
    }
    return blooms[rowGroup];
  }

  /** A probe's key: the table positions of its columns, its internal values, their order. */
  record Key(int[] positions, List<?> values, List<java.util.Comparator<Object>> comparators) {}

  private void decode(Schema schema, PageReadStore pages, RowRanges ranges, long start, Key key,
      Map<Integer, ?> constants, List<Record> rows, List<Long> positions) {
    int count = (int) ranges.rowCount();
    List<Types.NestedField> fields = schema.columns();
    Object[][] values = new Object[count][fields.size()];
    ValueConverter[] converters = new ValueConverter[fileSchema.getFieldCount()];
    for (int c = 0; c < fields.size(); c++) {
      ColumnDescriptor column = columns.get(fields.get(c).fieldId());
      if (column != null) {
        converters[fileSchema.getFieldIndex(column.getPath()[0])] =
            new ValueConverter(fields.get(c).type(), column.getPrimitiveType(), values, c);
      }
    }
    GroupConverter root = new GroupConverter() {
      @Override
      public Converter getConverter(int fieldIndex) {
        return converters[fieldIndex] != null ? converters[fieldIndex] : new PrimitiveConverter() {};
      }

      @Override
      public void start() {}

      @Override
      public void end() {}
    };
    ColumnReadStoreImpl store = new ColumnReadStoreImpl(pages, root, fileSchema,
        reader.getFooter().getFileMetaData().getCreatedBy());
    boolean[] keep = new boolean[count];
    java.util.Arrays.fill(keep, true);
    Set<Integer> keyPositions = new java.util.HashSet<>();
    for (int k = 0; k < key.positions().length; k++) { // the key first: it picks the rows
      int c = key.positions()[k];
      keyPositions.add(c);
      read(store, fields.get(c), c, null, constants, values, converters);
      Type type = fields.get(c).type();
      for (int r = 0; r < count; r++) {
        Object value = values[r][c];
        keep[r] &= value != null
            && key.comparators().get(k).compare(internal(type, value), key.values().get(k)) == 0;
      }
    }
    for (int c = 0; c < fields.size(); c++) {
      if (!keyPositions.contains(c)) {
        read(store, fields.get(c), c, keep, constants, values, converters);
      }
    }
    PrimitiveIterator.OfLong indexes = ranges.iterator();
    for (int r = 0; r < count; r++) {
      long index = indexes.nextLong();
      if (!keep[r]) {
        continue;
      }
      GenericRecord record = GenericRecord.create(schema);
      for (int c = 0; c < fields.size(); c++) {
        record.set(c, values[r][c]);
      }
      rows.add(record);
      positions.add(start + index);
    }
  }

  /** Decodes column {@code c} into {@code values}, for the rows {@code keep} marks (or all). */
  private void read(ColumnReadStoreImpl store, Types.NestedField field, int c, boolean[] keep,
      Map<Integer, ?> constants, Object[][] values, ValueConverter[] converters) {
    ColumnDescriptor column = columns.get(field.fieldId());
    if (column == null) {
      Object constant = constants.get(field.fieldId());
      for (Object[] row : values) {
        row[c] = constant;
      }
      return;
    }
    ColumnReader reader0 = store.getColumnReader(column);
    ValueConverter converter = converters[fileSchema.getFieldIndex(column.getPath()[0])];
    int defined = column.getMaxDefinitionLevel();
    for (int r = 0; r < values.length; r++) {
      if (reader0.getCurrentDefinitionLevel() == defined) {
        if (keep == null || keep[r]) {
          converter.row = r;
          reader0.writeCurrentValueToConverter();
        } else {
          reader0.skip(); // a value not read must be skipped, or the next read returns it
        }
      }
      reader0.consume();
    }
  }

  /** Iceberg's internal value of a generic one, as keys are compared. */
  private static Object internal(Type type, Object value) {
    return switch (type.typeId()) {
      case DATE -> DateTimeUtil.daysFromDate((java.time.LocalDate) value);
      case TIME -> DateTimeUtil.microsFromTime((java.time.LocalTime) value);
      case TIMESTAMP -> ((Types.TimestampType) type).shouldAdjustToUTC()
          ? DateTimeUtil.microsFromTimestamptz((java.time.OffsetDateTime) value)
          : DateTimeUtil.microsFromTimestamp((java.time.LocalDateTime) value);
      case FIXED -> ByteBuffer.wrap((byte[]) value);
      default -> value;
    };
  }

  /** Whether values of Parquet type {@code stored} decode to Iceberg type {@code type} here. */
  private static boolean decodable(Type type, PrimitiveType stored) {
    PrimitiveType.PrimitiveTypeName physical = stored.getPrimitiveTypeName();
    LogicalTypeAnnotation logical = stored.getLogicalTypeAnnotation();
    return switch (type.typeId()) {
      case BOOLEAN -> physical == PrimitiveType.PrimitiveTypeName.BOOLEAN;
      case INTEGER, DATE -> physical == PrimitiveType.PrimitiveTypeName.INT32;
      case LONG -> physical == PrimitiveType.PrimitiveTypeName.INT64
          || physical == PrimitiveType.PrimitiveTypeName.INT32;
      case FLOAT -> physical == PrimitiveType.PrimitiveTypeName.FLOAT;
      case DOUBLE -> physical == PrimitiveType.PrimitiveTypeName.DOUBLE
          || physical == PrimitiveType.PrimitiveTypeName.FLOAT;
      case TIME, TIMESTAMP -> physical == PrimitiveType.PrimitiveTypeName.INT64
          && micros(logical);
      case STRING, BINARY -> physical == PrimitiveType.PrimitiveTypeName.BINARY;
      case FIXED, UUID -> physical == PrimitiveType.PrimitiveTypeName.FIXED_LEN_BYTE_ARRAY;
      case DECIMAL -> physical != PrimitiveType.PrimitiveTypeName.INT96
          && physical != PrimitiveType.PrimitiveTypeName.BOOLEAN;
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

  /** Puts each decoded value, as Iceberg's generic value, into its row and column. */
  private static final class ValueConverter extends PrimitiveConverter {
    private final Type type;
    private final Object[][] values;
    private final int column;
    int row;

    ValueConverter(Type type, PrimitiveType stored, Object[][] values, int column) {
      this.type = type;
      this.values = values;
      this.column = column;
    }

    private void put(Object value) {
      values[row][column] = value;
    }

    @Override
    public void addBoolean(boolean value) {
      put(value);
    }

    @Override
    public void addInt(int value) {
      switch (type.typeId()) {
        case DATE -> put(DateTimeUtil.dateFromDays(value));
        case LONG -> put((long) value);
        case DECIMAL -> put(BigDecimal.valueOf(value, ((Types.DecimalType) type).scale()));
        default -> put(value);
      }
    }

    @Override
    public void addLong(long value) {
      switch (type.typeId()) {
        case TIME -> put(DateTimeUtil.timeFromMicros(value));
        case TIMESTAMP -> put(((Types.TimestampType) type).shouldAdjustToUTC()
            ? DateTimeUtil.timestamptzFromMicros(value)
            : DateTimeUtil.timestampFromMicros(value));
        case DECIMAL -> put(BigDecimal.valueOf(value, ((Types.DecimalType) type).scale()));
        default -> put(value);
      }
    }

    @Override
    public void addFloat(float value) {
      put(type.typeId() == Type.TypeID.DOUBLE ? (Object) (double) value : value);
    }

    @Override
    public void addDouble(double value) {
      put(value);
    }

    @Override
    public void addBinary(Binary value) {
      switch (type.typeId()) {
        case STRING -> put(value.toStringUsingUTF8());
        case BINARY -> put(ByteBuffer.wrap(value.getBytes()));
        case FIXED -> put(value.getBytes());
        case UUID -> put(UUIDUtil.convert(value.getBytes()));
        case DECIMAL -> put(new BigDecimal(new BigInteger(value.getBytes()),
            ((Types.DecimalType) type).scale()));
        default -> throw new IllegalStateException("no binary values for " + type);
      }
    }
  }

  @Override
  public void close() throws IOException {
    reader.close();
  }

  /** A Parquet input file over Iceberg's, telling the current listener of its I/O. */
  private static final class CountingFile implements org.apache.parquet.io.InputFile {
    private final InputFile input;
    volatile DataFileRows.ReadListener listener;

    CountingFile(InputFile input) {
      this.input = input;
    }

    @Override
    public long getLength() {
      return input.getLength();
    }

    @Override
    public SeekableInputStream newStream() {
      if (listener != null) {
        listener.opened();
      }
      org.apache.iceberg.io.SeekableInputStream in = input.newStream();
      InputStream counting = new InputStream() {
        @Override
        public int read() throws IOException {
          int read = in.read();
          if (read >= 0 && listener != null) {
            listener.read(1);
          }
          return read;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
          int read = in.read(buffer, offset, length);
          if (read > 0 && listener != null) {
            listener.read(read);
          }
          return read;
        }

        @Override
        public void close() throws IOException {
          in.close();
        }
      };
      return new DelegatingSeekableInputStream(counting) {
        @Override
        public long getPos() throws IOException {
          return in.getPos();
        }

        @Override
        public void seek(long newPos) throws IOException {
          in.seek(newPos);
        }
      };
    }
  }

  /** The page predicate of a key, when the key's types allow one (else null: whole groups). */
  static FilterPredicate pagePredicate(List<Types.NestedField> key, List<?> values,
      ProbeFile file) {
    FilterPredicate predicate = null;
    for (int i = 0; i < key.size(); i++) {
      ColumnDescriptor column = file.columns.get(key.get(i).fieldId());
      if (column == null) {
        return null;
      }
      String path = String.join(".", column.getPath());
      PrimitiveType.PrimitiveTypeName physical = column.getPrimitiveType().getPrimitiveTypeName();
      Object value = values.get(i);
      FilterPredicate one = switch (key.get(i).type().typeId()) {
        case INTEGER, DATE -> physical == PrimitiveType.PrimitiveTypeName.INT32
            ? FilterApi.eq(FilterApi.intColumn(path), (Integer) value) : null;
        case LONG, TIME, TIMESTAMP -> physical == PrimitiveType.PrimitiveTypeName.INT64
            ? FilterApi.eq(FilterApi.longColumn(path), (Long) value) : null;
        case STRING -> FilterApi.eq(FilterApi.binaryColumn(path),
            Binary.fromString(value.toString()));
        default -> null;
      };
      if (one == null) {
        return null;
      }
      predicate = predicate == null ? one : FilterApi.and(predicate, one);
    }
    return predicate;
  }
}
