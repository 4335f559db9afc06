package io.skade.lookup;

import io.skade.catalog.SkadeRuntime;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Byte ranges of remote data files kept on local disk for point lookups (footers, page indexes,
 * bloom filters, pages), bounded in bytes and shared by every lookup of this JVM that names the
 * same directory. Data files are immutable, so a range is never stale: it is keyed by the file's
 * location and length, and by its offsets. A read is served when one kept range covers it; a range
 * past the bound is evicted least recently used first.
 *
 * <p>Several processes may share one directory. Each range is its own file, written to a temporary
 * file and renamed into place (an atomic rename), so no reader sees a partial range; each ends with
 * a CRC-32C of its bytes, checked on every read, so a range damaged on disk (a crash before the
 * operating system wrote it out) is dropped and read again from the store, never answered. A range
 * another process evicted while this one still knows it is a miss. Each process bounds the ranges
 * it knows (those it found on disk when it opened the directory, wrote, or read), so processes
 * sharing a directory keep at most the sum of their bounds.
 */
final class DiskCache {
  private static final Logger LOG = LoggerFactory.getLogger(DiskCache.class);

  /** The default bound of a disk cache: 1 GiB. */
  static final long DEFAULT_MAX_BYTES = 1L << 30;

  /**
   * The directory a disk cache lies in when none is chosen: {@code skade-lookup-cache-<user>} in
   * the JVM's temporary directory ({@code java.io.tmpdir}, which Flink's {@code io.tmp.dirs}
   * defaults to), one per user, so that a host's TaskManagers share it.
   */
  static Path defaultDirectory() {
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
    return Path.of(System.getProperty("java.io.tmpdir"), "skade-lookup-cache-" + user);
  }

  private static final String SUFFIX = ".range";
  private static final String TEMP = ".tmp";
  private static final int CHECKSUM = 8;

  /** Kept ranges a read looks back over for one that covers it. */
  private static final int LOOK_BACK = 16;

  /** A temporary file older than this was left by a process that died while writing it. */
  private static final long STALE_TEMP_MILLIS = 3_600_000L;

  private static final AtomicLong TEMP_IDS = new AtomicLong();

  private final Path dir;
  private volatile long maxBytes;

  /** Every range known, least recently used first; guarded by this. */
  private final LinkedHashMap<Path, Range> recency = new LinkedHashMap<>(256, 0.75f, true);

  /** The ranges known per data file, by start (the longest at a start); guarded by this. */
  private final Map<String, NavigableMap<Long, Range>> byFile = new HashMap<>();

  private long bytes; // guarded by this
  private volatile boolean warned;

  private record Range(String file, long start, long end, Path path) {
    long length() {
      return end - start;
    }
  }

  /** What a read found: the bytes were filled in ({@link #HIT}) or must come from the store. */
  enum Outcome {
    HIT,
    MISS
  }

  /** The cache in {@code dir} (created if missing), knowing the ranges already there. */
  DiskCache(Path dir, long maxBytes) {
    if (maxBytes <= 0) {
      throw new IllegalArgumentException(
          "a lookup disk cache holds a positive number of bytes, got " + maxBytes);
    }
    this.dir = dir.toAbsolutePath().normalize();
    this.maxBytes = maxBytes;
    try {
      Files.createDirectories(this.dir);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "lookup disk cache directory "
              + this.dir
              + " cannot be created; choose a writable lookup.disk-cache.dir",
          e);
    }
    scan();
  }

  /**
   * The disk cache of this JVM (the current {@link SkadeRuntime}'s) in {@code dir}, opened on first
   * use; a later user asking for a larger bound raises it.
   */
  static DiskCache shared(Path dir, long maxBytes) {
    Map<Path, DiskCache> open = SkadeRuntime.get().component(Registry.class, Registry::new).open;
    DiskCache cache =
        open.computeIfAbsent(
            dir.toAbsolutePath().normalize(), path -> new DiskCache(path, maxBytes));
    cache.raiseBound(maxBytes);
    return cache;
  }

  /** The disk caches a runtime opened, by directory. */
  private static final class Registry {
    final Map<Path, DiskCache> open = new ConcurrentHashMap<>();
  }

  Path dir() {
    return dir;
  }

  /** Bytes of the ranges this process knows. */
  synchronized long bytes() {
    return bytes;
  }

  private synchronized void raiseBound(long asked) {
    if (asked > maxBytes) {
      maxBytes = asked;
    }
  }

  /** The directory of one data file's ranges: a digest of its location and length. */
  static String fileKey(String location, long length) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      byte[] digest = sha.digest((location + '\n' + length).getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 20);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }

  /**
   * Fills {@code into} with the file's bytes from {@code position} when a kept range covers them.
   */
  Outcome read(String file, long position, byte[] into) {
    long end = position + into.length;
    for (int attempt = 0; attempt < 2; attempt++) {
      Range range = covering(file, position, end);
      if (range == null && attempt == 0) {
        learn(file); // another process may have written it
        continue;
      }
      if (range == null) {
        return Outcome.MISS;
      }
      if (readRange(range, position, into)) {
        return Outcome.HIT;
      }
    }
    return Outcome.MISS;
  }

  private synchronized Range covering(String file, long start, long end) {
    NavigableMap<Long, Range> ranges = byFile.get(file);
    if (ranges == null) {
      return null;
    }
    int looked = 0;
    for (Range range : ranges.headMap(start, true).descendingMap().values()) {
      if (range.end() >= end) {
        recency.get(range.path()); // touched: most recently used
        return range;
      }
      if (++looked == LOOK_BACK) {
        break;
      }
    }
    return null;
  }

  /**
   * Reads a kept range's bytes, checked; false (and the range forgotten) when it is gone or bad.
   */
  private boolean readRange(Range range, long position, byte[] into) {
    int length = Math.toIntExact(range.length());
    ByteBuffer buffer = ByteBuffer.allocate(length + CHECKSUM);
    try (FileChannel channel = FileChannel.open(range.path(), StandardOpenOption.READ)) {
      if (channel.size() != length + CHECKSUM) {
        return damaged(range, "its size is " + channel.size());
      }
      while (buffer.hasRemaining()) {
        if (channel.read(buffer, buffer.position()) < 0) {
          return damaged(range, "it ended early");
        }
      }
    } catch (NoSuchFileException gone) {
      forget(range); // evicted by another process sharing the directory
      return false;
    } catch (IOException e) {
      return damaged(range, e.toString());
    }
    CRC32C crc = new CRC32C();
    crc.update(buffer.array(), 0, length);
    if (crc.getValue() != buffer.getLong(length)) {
      return damaged(range, "its checksum does not match");
    }
    System.arraycopy(buffer.array(), (int) (position - range.start()), into, 0, into.length);
    return true;
  }

  private boolean damaged(Range range, String why) {
    LOG.warn("lookup disk cache: dropping {} ({}); it is read again from the store", range, why);
    forget(range);
    try {
      Files.deleteIfExists(range.path());
    } catch (IOException e) {
      // another process may hold it; it stays unknown here
    }
    return false;
  }

  /**
   * Keeps {@code bytes}, the file's bytes from {@code start}; best effort (a failure is logged).
   */
  void write(String file, long start, byte[] bytes) {
    long end = start + bytes.length;
    if (bytes.length + CHECKSUM > maxBytes) {
      return;
    }
    Path sub = dir.resolve(file);
    Path target = sub.resolve(start + "-" + end + SUFFIX);
    Path temp =
        sub.resolve(
            start
                + "-"
                + end
                + "."
                + ProcessHandle.current().pid()
                + "-"
                + TEMP_IDS.incrementAndGet()
                + TEMP);
    CRC32C crc = new CRC32C();
    crc.update(bytes);
    ByteBuffer trailer = ByteBuffer.allocate(CHECKSUM).putLong(0, crc.getValue());
    try {
      Files.createDirectories(sub);
      try (FileChannel channel =
          FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        ByteBuffer body = ByteBuffer.wrap(bytes);
        while (body.hasRemaining()) {
          channel.write(body);
        }
        while (trailer.hasRemaining()) {
          channel.write(trailer);
        }
      }
      try {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.deleteIfExists(temp);
        throw e;
      }
    } catch (IOException e) {
      try {
        Files.deleteIfExists(temp);
      } catch (IOException ignored) {
        // the write failed already; a stale temporary file is swept on a later open
      }
      if (!warned) {
        warned = true;
        LOG.warn(
            "lookup disk cache {}: cannot write ranges ({}); lookups read from the store",
            dir,
            e.toString());
      }
      return;
    }
    add(new Range(file, start, end, target));
  }

  private synchronized void add(Range range) {
    Range known = recency.get(range.path());
    if (known != null) {
      return; // the same range, written again (racing probes, or another process)
    }
    recency.put(range.path(), range);
    bytes += range.length() + CHECKSUM;
    NavigableMap<Long, Range> ranges = byFile.computeIfAbsent(range.file(), f -> new TreeMap<>());
    Range atStart = ranges.get(range.start());
    if (atStart == null || atStart.end() < range.end()) {
      ranges.put(range.start(), range);
    }
    evict();
  }

  private synchronized void evict() {
    List<Path> dropped = new ArrayList<>();
    for (Iterator<Range> it = recency.values().iterator(); bytes > maxBytes && it.hasNext(); ) {
      Range oldest = it.next();
      it.remove();
      unindex(oldest);
      dropped.add(oldest.path());
    }
    for (Path path : dropped) {
      try {
        Files.deleteIfExists(path); // a reader holding it open reads on (POSIX)
      } catch (IOException e) {
        LOG.debug("lookup disk cache: could not delete {}", path, e);
      }
    }
  }

  private synchronized void forget(Range range) {
    if (recency.remove(range.path()) != null) {
      unindex(range);
    }
  }

  /** Drops a range from the per-file index and the byte count (it is out of the recency list). */
  private void unindex(Range range) {
    bytes -= range.length() + CHECKSUM;
    NavigableMap<Long, Range> ranges = byFile.get(range.file());
    if (ranges != null && ranges.get(range.start()) == range) {
      ranges.remove(range.start());
      for (Range other : recency.values()) { // another range at that start takes its place
        if (other.file().equals(range.file()) && other.start() == range.start()) {
          ranges.put(other.start(), other);
          break;
        }
      }
      if (ranges.isEmpty()) {
        byFile.remove(range.file());
      }
    }
  }

  /** Learns the ranges of {@code file} that are on disk (another process may have written them). */
  private void learn(String file) {
    Path sub = dir.resolve(file);
    if (!Files.isDirectory(sub)) {
      return;
    }
    List<Range> found = new ArrayList<>();
    try (Stream<Path> paths = Files.list(sub)) {
      paths.forEach(path -> parse(file, path).ifPresent(found::add));
    } catch (IOException e) {
      return;
    }
    for (Range range : found) {
      add(range);
    }
  }

  /** A range file's offsets from its name, if it is one (not a temporary file). */
  private static java.util.Optional<Range> parse(String file, Path path) {
    String name = path.getFileName().toString();
    if (!name.endsWith(SUFFIX)) {
      return java.util.Optional.empty();
    }
    String[] offsets = name.substring(0, name.length() - SUFFIX.length()).split("-", 2);
    try {
      long start = Long.parseLong(offsets[0]);
      long end = Long.parseLong(offsets[1]);
      return start >= 0 && end > start
          ? java.util.Optional.of(new Range(file, start, end, path))
          : java.util.Optional.empty();
    } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
      return java.util.Optional.empty();
    }
  }

  /**
   * Learns the ranges already in the directory, oldest written first (their recency is lost with
   * the process that used them), and sweeps temporary files left by a process that died writing.
   */
  private void scan() {
    List<Object[]> found = new ArrayList<>(); // {range, modified}
    long now = System.currentTimeMillis();
    try (Stream<Path> subs = Files.list(dir)) {
      for (Path sub : (Iterable<Path>) subs::iterator) {
        if (!Files.isDirectory(sub)) {
          continue;
        }
        String file = sub.getFileName().toString();
        int before = found.size();
        try (Stream<Path> paths = Files.list(sub)) {
          for (Path path : (Iterable<Path>) paths::iterator) {
            long modified = Files.getLastModifiedTime(path).toMillis();
            if (path.getFileName().toString().endsWith(TEMP)) {
              if (now - modified > STALE_TEMP_MILLIS) {
                Files.deleteIfExists(path);
              }
              continue;
            }
            parse(file, path).ifPresent(range -> found.add(new Object[] {range, modified}));
          }
        } catch (NoSuchFileException e) {
          continue; // removed by another process meanwhile
        }
        if (found.size() == before) {
          try {
            Files.deleteIfExists(sub); // empty: its ranges were all evicted
          } catch (DirectoryNotEmptyException e) {
            // another process is writing into it
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "lookup disk cache directory " + dir + " cannot be read; check its permissions", e);
    }
    found.sort((a, b) -> Long.compare((Long) a[1], (Long) b[1]));
    for (Object[] entry : found) {
      add((Range) entry[0]);
    }
  }
}
