package io.skade.scan;

import java.io.File;
import java.io.IOException;
import java.util.Map;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Files;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.util.PartitionUtil;

/** How skade reads the rows of one Parquet data file of a table, deletes not applied. */
public final class DataFileRows {
  private DataFileRows() {}

  /**
   * Every row of the task's data file, in {@code required} (which may hold metadata columns such as
   * the row position), with identity-partition values filled in; files written without field ids
   * (imported ones) are read by the table's name mapping. Row groups whose statistics, dictionaries
   * or bloom filters prove no row matches {@code rowGroups} are skipped; rows are not filtered.
   *
   * @throws UnsupportedOperationException if the file is not Parquet
   */
  public static CloseableIterable<Record> read(
      Table table, FileScanTask task, Schema required, Expression rowGroups) {
    return read(table, task, required, rowGroups, null, null, null);
  }

  /** What a reader of data files is told of its I/O (for per-probe counters). */
  public interface ReadListener {
    /** A stream on a data file was opened. */
    void opened();

    /** One read call returned {@code bytes} bytes. */
    void read(int bytes);
  }

  /** As {@link #read(Table, FileScanTask, Schema, Expression)}, telling {@code io} of its I/O. */
  public static CloseableIterable<Record> read(
      Table table, FileScanTask task, Schema required, Expression rowGroups, ReadListener io) {
    return read(table, task, required, rowGroups, io, null, null);
  }

  /**
   * As {@link #read(Table, FileScanTask, Schema, Expression)}, the file's bytes taken from {@code
   * files} when it fetched them ahead, its rows decoded by {@code decoder} when it {@link
   * RecordDecoder#decodes decodes} {@code required} (null: Iceberg's generic records).
   */
  public static CloseableIterable<Record> read(
      FileFetch files,
      Table table,
      FileScanTask task,
      Schema required,
      Expression rowGroups,
      RecordDecoder decoder) {
    return read(table, task, required, rowGroups, null, files, decoder);
  }

  private static CloseableIterable<Record> read(
      Table table,
      FileScanTask task,
      Schema required,
      Expression rowGroups,
      ReadListener io,
      FileFetch files,
      RecordDecoder decoder) {
    if (task.file().format() != FileFormat.PARQUET) {
      throw new UnsupportedOperationException(
          "table "
              + table.name()
              + ": data file "
              + task.file().location()
              + " is "
              + task.file().format()
              + "; skade reads Parquet"
              + " data files only — rewrite the table's files to Parquet");
    }
    long length = task.file().fileSizeInBytes();
    InputFile file =
        files == null
            ? inputFile(table.io(), task.file().location(), length)
            : files.input(task.file());
    Parquet.ReadBuilder read = Parquet.read(new PlainInputFile(file, length, io)).project(required);
    boolean decoded = decoder != null && decoder.decodes(required);
    if (decoded) {
      read.createReaderFunc(fileSchema -> decoder.reader(required, fileSchema, task));
    } else {
      Map<Integer, ?> constants =
          PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant);
      read.createReaderFunc(
          fileSchema -> GenericParquetReaders.buildReader(required, fileSchema, constants));
    }
    if (rowGroups.op() != Expression.Operation.TRUE) {
      read.filter(rowGroups); // evaluating it costs even when it keeps everything
    }
    String mapping = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    if (mapping != null) {
      read.withNameMapping(NameMappingParser.fromJson(mapping));
    }
    return decoded
        ? CloseableIterable.transform(read.build(), decoder.records(required))
        : read.build();
  }

  /**
   * The file at {@code location} as {@code io} gives it, of the length its manifest gives (so no
   * request asks for it); but a local file ({@link #localPath}) is read directly: Hadoop's local
   * file system parses the path, looks up the file system, opens a checksum file and merges I/O
   * statistics on every open, costs that rival reading the few rows of a streaming commit's file.
   * (Iceberg's other file IOs keep no checksum files either.)
   */
  static InputFile inputFile(FileIO io, String location, long length) {
    String path = localPath(io, location);
    return path != null ? Files.localInput(new File(path)) : io.newInputFile(location, length);
  }

  /**
   * The local path of {@code location} when {@code io} is skade's default (Hadoop's file IO, not a
   * subclass, whose local files need nothing of it) and the location names a local file: a {@code
   * file:} URI, or a path without a scheme while Hadoop's default file system is the local one.
   * Otherwise null: the file is read through {@code io} (object storage, HDFS, another file IO).
   */
  static String localPath(FileIO io, String location) {
    if (io.getClass() != HadoopFileIO.class) {
      return null;
    }
    String path =
        location.startsWith("file://")
            ? location.substring("file://".length())
            : location.startsWith("file:")
                ? location.substring("file:".length())
                : isLocalByDefault((HadoopFileIO) io) ? location : null;
    return path != null && path.startsWith("/") ? path : null;
  }

  /** Whether a path without a scheme names a local file under {@code io}'s Hadoop settings. */
  private static boolean isLocalByDefault(HadoopFileIO io) {
    return io.conf()
        .get(CommonConfigurationKeysPublic.FS_DEFAULT_NAME_KEY, "file:///")
        .startsWith("file:");
  }

  /**
   * A file IO's input file under a type of its own. Given Hadoop's, Iceberg's Parquet reader copies
   * the whole Hadoop configuration and asks the file system for the file's status on every open:
   * fixed costs that dominate reading the one small file a streaming commit adds. Its length is the
   * manifest's, so no file status is asked for.
   */
  private record PlainInputFile(InputFile file, long length, ReadListener io) implements InputFile {
    @Override
    public long getLength() {
      return length;
    }

    @Override
    public SeekableInputStream newStream() {
      if (io != null) {
        io.opened();
      }
      return new PlainStream(file.newStream(), io);
    }

    @Override
    public String location() {
      return file.location();
    }

    @Override
    public boolean exists() {
      return file.exists();
    }
  }

  /**
   * The IO's stream behind a plain stream type. Parquet unwraps a stream that exposes Hadoop's
   * underneath and drops the wrapper, whose cleaner then closes the shared Hadoop stream while it
   * is still being read; holding the wrapper here keeps it alive until Parquet closes this.
   */
  private static final class PlainStream extends SeekableInputStream {
    private final SeekableInputStream in;
    private final ReadListener io;

    PlainStream(SeekableInputStream in, ReadListener io) {
      this.in = in;
      this.io = io;
    }

    @Override
    public long getPos() throws IOException {
      return in.getPos();
    }

    @Override
    public void seek(long newPos) throws IOException {
      in.seek(newPos);
    }

    @Override
    public int read() throws IOException {
      int read = in.read();
      if (io != null && read >= 0) {
        io.read(1);
      }
      return read;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int read = in.read(buffer, offset, length);
      if (io != null && read > 0) {
        io.read(read);
      }
      return read;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
