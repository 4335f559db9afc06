package io.skade.lookup;

import io.skade.scan.DataFileRows;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.IOUtil;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.RangeReadable;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.parquet.bytes.ByteBufferInputStream;

/**
 * Positioned reads of one data file held open for probes, each counted as one read call: a local
 * file with positional reads of its channel (no buffering or checksum layer between a probe and the
 * page cache), a file on object storage (or any other store whose stream is Iceberg's {@link
 * RangeReadable}) with ranged reads, each a bounded request (a ranged GET on S3), which concurrent
 * probes of one file make at once; a stream that cannot read ranges is read as one seek and read at
 * a time. A probe's page ranges are read coalesced: ranges closer than {@value #MAX_GAP} bytes in
 * one read. A remote file's reads go through the {@link DiskCache} first, when there is one.
 *
 * <p>Hand-written because parquet-mr's reads cost more calls for the same work
 * (ProbeDecodingBenchmark, 1M rows in 32 files: opening a file, 2 read calls and 1.7-2.0 ms here
 * against 265 and 2.7-3.5 ms through {@code ParquetFileReader}, which reads each column's page
 * indexes apart, even through a 4 KB buffer; a cold probe, 0.90 read calls against 2.24 for {@code
 * readFilteredRowGroup}, which merges only adjacent column chunks). The streams handed to
 * parquet-mr's parsers are its own {@code ByteBufferInputStream}.
 */
abstract class FileBytes implements Closeable {
  /** Pages this close are read together: one read costs more than these bytes. */
  static final int MAX_GAP = 16 << 10;

  static final Region[] NO_REGIONS = new Region[0];

  /** Where a read's bytes came from. */
  enum Source {
    /** A local file. */
    LOCAL,
    /** The store, no disk cache asked. */
    REMOTE,
    /** The disk cache. */
    DISK_CACHE,
    /** The store, after the disk cache missed. */
    REMOTE_AFTER_MISS
  }

  /** The file at {@code location}, opened (counted as an open), its length unknown, no cache. */
  static FileBytes open(FileIO io, String location, DataFileRows.ReadListener listener) {
    return open(io, location, -1, null, listener);
  }

  /**
   * The file at {@code location} of {@code length} bytes (-1: unknown), opened (counted as an
   * open); a remote file's reads go through {@code disk} first, when not null.
   */
  static FileBytes open(
      FileIO io, String location, long length, DiskCache disk, DataFileRows.ReadListener listener) {
    listener.opened();
    URI uri = new org.apache.hadoop.fs.Path(location).toUri(); // as HadoopFileIO reads it
    if (io instanceof HadoopFileIO && (uri.getScheme() == null || uri.getScheme().equals("file"))) {
      try {
        return new LocalFile(location, Path.of(uri.getPath()));
      } catch (IOException e) {
        throw new UncheckedIOException("opening " + location + " for lookups", e);
      }
    }
    InputFile input = length >= 0 ? io.newInputFile(location, length) : io.newInputFile(location);
    SeekableInputStream stream = input.newStream(); // S3: no request until a read
    FileBytes remote =
        stream instanceof RangeReadable ranges
            ? new RangedFile(stream, ranges)
            : new StreamedFile(stream);
    return disk == null || length < 0
        ? remote
        : new DiskCachedFile(remote, disk, DiskCache.fileKey(location, length));
  }

  /** Reads {@code into.length} bytes from {@code position}: one read call. */
  final void read(long position, byte[] into, DataFileRows.ReadListener listener)
      throws IOException {
    Source source = readFully(position, into);
    listener.read(into.length);
    if (source != Source.LOCAL && listener instanceof PointLookup.Counters counters) {
      counters.read(source, into.length);
    }
  }

  /** Reads {@code into.length} bytes from {@code position}; says where they came from. */
  abstract Source readFully(long position, byte[] into) throws IOException;

  /** Whether this is a local file (a read costs a system call, not a request). */
  boolean local() {
    return false;
  }

  /**
   * A remote file read in ranges: each read one bounded request, with no lock, so probes of one
   * file on several threads read at once (S3FileIO's ranged reads share no state but the client).
   */
  private static final class RangedFile extends FileBytes {
    private final SeekableInputStream stream;
    private final RangeReadable ranges;

    RangedFile(SeekableInputStream stream, RangeReadable ranges) {
      this.stream = stream;
      this.ranges = ranges;
    }

    @Override
    Source readFully(long position, byte[] into) throws IOException {
      ranges.readFully(position, into, 0, into.length);
      return Source.REMOTE;
    }

    @Override
    public void close() throws IOException {
      stream.close();
    }
  }

  /** A remote file whose stream reads no ranges: one seek and read at a time. */
  private static final class StreamedFile extends FileBytes {
    private final SeekableInputStream stream;

    StreamedFile(SeekableInputStream stream) {
      this.stream = stream;
    }

    @Override
    synchronized Source readFully(long position, byte[] into) throws IOException {
      stream.seek(position);
      IOUtil.readFully(stream, into, 0, into.length);
      return Source.REMOTE;
    }

    @Override
    public synchronized void close() throws IOException {
      stream.close();
    }
  }

  /**
   * A remote file whose ranges are looked for in the disk cache first, and kept there once read.
   */
  private static final class DiskCachedFile extends FileBytes {
    private final FileBytes remote;
    private final DiskCache disk;
    private final String key;

    DiskCachedFile(FileBytes remote, DiskCache disk, String key) {
      this.remote = remote;
      this.disk = disk;
      this.key = key;
    }

    @Override
    Source readFully(long position, byte[] into) throws IOException {
      if (disk.read(key, position, into) == DiskCache.Outcome.HIT) {
        return Source.DISK_CACHE;
      }
      remote.readFully(position, into);
      disk.write(key, position, into);
      return Source.REMOTE_AFTER_MISS;
    }

    @Override
    public void close() throws IOException {
      remote.close();
    }
  }

  /** Reads the ranges, those closer than {@link #MAX_GAP} together, one read each. */
  Region[] readCoalesced(List<long[]> ranges, DataFileRows.ReadListener listener)
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
      region.read(this, listener);
    }
    return regions.toArray(new Region[0]);
  }

  /**
   * The region holding {@code offset}; a page evicted from the cache since the probe planned its
   * reads is read on its own.
   */
  Region regionOf(Region[] regions, long offset, int length, DataFileRows.ReadListener listener)
      throws IOException {
    for (Region region : regions) {
      if (region.start <= offset && offset < region.end) {
        return region;
      }
    }
    Region alone = new Region(offset, offset + length);
    alone.read(this, listener);
    return alone;
  }

  /**
   * A local file read with positional reads, which threads share without a lock. An interrupt of
   * any thread reading a {@link FileChannel} closes it for every thread (the interrupted one gets
   * {@link ClosedByInterruptException}, the others {@link ClosedChannelException}): a probe
   * interrupted when its task is cancelled must not break the file for the other probes of the JVM,
   * which hold it open in the shared caches. So a channel closed by anything but {@link #close} is
   * opened again, and a read that found it closed is tried again on the new one.
   */
  private static final class LocalFile extends FileBytes {
    private final String location;
    private final Path path;
    private volatile FileChannel channel;
    private volatile boolean closed;

    LocalFile(String location, Path path) throws IOException {
      this.location = location;
      this.path = path;
      this.channel = FileChannel.open(path, StandardOpenOption.READ);
    }

    @Override
    boolean local() {
      return true;
    }

    @Override
    Source readFully(long position, byte[] into) throws IOException {
      ByteBuffer buffer = ByteBuffer.wrap(into);
      while (buffer.hasRemaining()) {
        FileChannel current = channel;
        int read;
        try {
          read = current.read(buffer, position + buffer.position());
        } catch (ClosedChannelException e) {
          if (closed) {
            throw e;
          }
          reopen(current);
          if (e instanceof ClosedByInterruptException) {
            throw e; // this thread was interrupted: it stops, the others read on
          }
          continue;
        }
        if (read < 0) {
          throw new EOFException(location + " ends before " + (position + into.length));
        }
      }
      return Source.LOCAL;
    }

    private synchronized void reopen(FileChannel broken) throws IOException {
      if (channel == broken && !closed) {
        channel = FileChannel.open(path, StandardOpenOption.READ);
      }
    }

    @Override
    public synchronized void close() throws IOException {
      closed = true;
      channel.close();
    }
  }

  static final class Region {
    final long start;
    final long end;
    byte[] bytes;

    Region(long start, long end) {
      this.start = start;
      this.end = end;
    }

    void read(FileBytes source, DataFileRows.ReadListener listener) throws IOException {
      bytes = new byte[Math.toIntExact(end - start)];
      source.read(start, bytes, listener);
    }

    /**
     * This region grown back to {@code from}: only the bytes before it are read, the rest copied.
     */
    Region extendedTo(long from, FileBytes source, DataFileRows.ReadListener listener)
        throws IOException {
      Region before = new Region(from, start);
      before.read(source, listener);
      Region whole = new Region(from, end);
      whole.bytes = new byte[Math.toIntExact(end - from)];
      System.arraycopy(before.bytes, 0, whole.bytes, 0, before.bytes.length);
      System.arraycopy(bytes, 0, whole.bytes, before.bytes.length, bytes.length);
      return whole;
    }

    int index(long offset) {
      return (int) (offset - start);
    }

    /**
     * Bytes {@code [offset, offset + length)} as a stream for parquet-mr's Thrift decoding, which
     * reads footers, page indexes and page headers from it a byte at a time: parquet-mr's own
     * stream over a buffer, whose reads take no lock.
     */
    ByteBufferInputStream stream(long offset, int length) {
      return ByteBufferInputStream.wrap(ByteBuffer.wrap(bytes, index(offset), length));
    }

    byte[] bytes(long offset, int length) {
      return Arrays.copyOfRange(bytes, index(offset), index(offset) + length);
    }

    int intAt(long offset) {
      return ByteBuffer.wrap(bytes, index(offset), 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
  }
}
