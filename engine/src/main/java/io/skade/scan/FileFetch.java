package io.skade.scan;

import io.skade.catalog.SkadeRuntime;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.LongAdder;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.inmemory.InMemoryInputFile;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.IOUtil;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * The data and delete files one changelog window reads, fetched ahead through the table's {@link
 * FileIO}, several at a time, when they live on remote storage (object storage, HDFS): there each
 * file costs a round trip or more before its first byte, and a window reading its files one after
 * the other waited for every one of them in turn. The reader still decodes the files one by one, in
 * its own order, so what it emits and in which order does not change; only the bytes arrive early.
 *
 * <p>Files are announced in the order they will be read ({@link #ahead}) and fetched whole, in that
 * order, at most {@link #MAX_IN_FLIGHT} at a time and within a byte budget of the heap (fetched and
 * in flight together). A file larger than half the budget and a file asked for before its fetch
 * started are read through the file IO as usual. A failed fetch is forgotten: the reader then reads
 * the file itself and meets the failure where it always did. Data files are dropped once handed
 * out; delete files stay until the window closes, since one delete file serves many data files (and
 * one Puffin file the vectors of several).
 *
 * <p>Fetches run on a small pool of the current {@link SkadeRuntime}, shared by every window of the
 * JVM, so it also bounds the requests the JVM has in flight for changelog reads. Not thread-safe
 * for its reader; fetch threads synchronize on it.
 */
public final class FileFetch implements AutoCloseable {
  /** Files of one window in flight at once, and threads of the shared pool. */
  public static final int MAX_IN_FLIGHT = 8;

  /** Bytes fetched ahead and held per window: 1/16 of the heap, at most 256 MB. */
  private static final long BUDGET_BYTES =
      Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 16);

  private final FileIO io;
  private final long budgetBytes;

  /** Counts the data files read: fetched ahead, or opened in place. */
  private final LongAdder dataFilesRead;

  private final ArrayDeque<Entry> queued = new ArrayDeque<>();
  private final Map<String, Entry> entries = new HashMap<>();
  private int inFlight;
  private long bytesHeld;
  private boolean closed;

  /** A file announced: queued, then in flight, then fetched (or failed). */
  private static final class Entry {
    final String location;
    final long length;
    final boolean data;
    final CompletableFuture<byte[]> bytes = new CompletableFuture<>();
    boolean started;

    Entry(String location, long length, boolean data) {
      this.location = location;
      this.length = length;
      this.data = data;
    }
  }

  /** A fetch of {@code io}'s files within the default budget. */
  public FileFetch(FileIO io) {
    this(io, BUDGET_BYTES, new LongAdder());
  }

  /** As above, counting the data files it reads into {@code dataFilesRead}. */
  public FileFetch(FileIO io, LongAdder dataFilesRead) {
    this(io, BUDGET_BYTES, dataFilesRead);
  }

  FileFetch(FileIO io, long budgetBytes, LongAdder dataFilesRead) {
    this.io = io;
    this.budgetBytes = budgetBytes;
    this.dataFilesRead = dataFilesRead;
  }

  /**
   * Announces {@code files}, in the order they will be read, and starts fetching what fits. Files
   * already announced, local files and files larger than half the budget are passed over.
   */
  public synchronized void ahead(Iterable<? extends ContentFile<?>> files) {
    if (closed) {
      return;
    }
    for (ContentFile<?> file : files) {
      String location = file.location();
      long length = file.fileSizeInBytes();
      if (entries.containsKey(location)
          || length > budgetBytes / 2
          || length > Integer.MAX_VALUE - 8
          || !remote(location)) {
        continue;
      }
      Entry entry = new Entry(location, length, file.content() == FileContent.DATA);
      entries.put(location, entry);
      queued.add(entry);
    }
    pump();
  }

  /**
   * Whether {@code location} names a file on remote storage: a URI of a scheme other than {@code
   * file:}. Local files, with or without a scheme, are read in place.
   */
  static boolean remote(String location) {
    int colon = location.indexOf(':');
    return colon > 0 && !location.startsWith("file:") && location.indexOf('/') > colon;
  }

  /**
   * The file {@code file} is read from: its fetched bytes when it was fetched ahead (waiting for a
   * fetch in flight), else the file as the file IO gives it.
   *
   * @throws UncheckedIOException wrapping an {@link InterruptedIOException} when interrupted while
   *     waiting
   */
  public InputFile input(ContentFile<?> file) {
    return input(file.location(), file.fileSizeInBytes(), file.content() == FileContent.DATA);
  }

  /** As {@link #input(ContentFile)}, for the file at {@code location} of {@code length} bytes. */
  public InputFile input(String location, long length) {
    return input(location, length, false);
  }

  private InputFile input(String location, long length, boolean data) {
    CompletableFuture<byte[]> fetching;
    Entry entry;
    synchronized (this) {
      entry = entries.get(location);
      if (entry == null || !entry.started) {
        if (entry != null) { // wanted before its turn: read directly, not twice
          queued.remove(entry);
          entries.remove(location);
        }
        if (data) {
          dataFilesRead.increment();
        }
        return DataFileRows.inputFile(io, location, length);
      }
      fetching = entry.bytes;
    }
    byte[] bytes;
    try {
      bytes = fetching.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException interrupted =
          new InterruptedIOException("interrupted while fetching " + location);
      interrupted.initCause(e);
      throw new UncheckedIOException(interrupted);
    } catch (ExecutionException e) {
      bytes = null; // the reader reads it itself and meets the failure there
    }
    synchronized (this) {
      if (bytes == null || entry.data) {
        if (entries.remove(location, entry) && bytes != null) {
          bytesHeld -= entry.length;
        }
        pump();
      }
    }
    return bytes == null
        ? DataFileRows.inputFile(io, location, length)
        : new InMemoryInputFile(location, bytes);
  }

  /** Starts queued fetches while the window's bounds allow. */
  private void pump() {
    while (!closed && inFlight < MAX_IN_FLIGHT && !queued.isEmpty()) {
      Entry next = queued.peek();
      if (bytesHeld + next.length > budgetBytes) {
        return; // the file wanted next waits for room (or is read directly when its turn comes)
      }
      queued.poll();
      next.started = true;
      if (next.data) {
        dataFilesRead.increment();
      }
      inFlight++;
      bytesHeld += next.length;
      try {
        pool().submit(() -> fetch(next));
      } catch (RejectedExecutionException | IllegalStateException e) {
        // The runtime closed: nothing is fetched ahead any more.
        finished(next, null);
      }
    }
  }

  private void fetch(Entry entry) {
    byte[] bytes = null;
    try {
      if (!isClosed()) {
        bytes = new byte[(int) entry.length];
        try (SeekableInputStream in = io.newInputFile(entry.location, entry.length).newStream()) {
          IOUtil.readFully(in, bytes, 0, bytes.length);
        }
      }
    } catch (IOException | RuntimeException e) {
      bytes = null;
    } finally {
      finished(entry, bytes);
    }
  }

  private synchronized void finished(Entry entry, byte[] bytes) {
    inFlight--;
    if (bytes == null || closed) {
      if (entries.remove(entry.location, entry)) {
        bytesHeld -= entry.length;
      }
      entry.bytes.completeExceptionally(new IOException("not fetched: " + entry.location));
    } else {
      entry.bytes.complete(bytes);
    }
    pump();
  }

  private synchronized boolean isClosed() {
    return closed;
  }

  /** Stops fetching: queued files are dropped, and fetched bytes released. */
  @Override
  public synchronized void close() {
    closed = true;
    queued.clear();
    entries.clear();
    bytesHeld = 0;
  }

  private static ThreadPoolExecutor pool() {
    return SkadeRuntime.get().component(Pool.class, Pool::new).executor();
  }

  /** The fetch threads of a {@link SkadeRuntime}, shut down with it. */
  private static final class Pool extends FetchPool {
    Pool() {
      super(MAX_IN_FLIGHT, "skade-file-fetch");
    }
  }
}
