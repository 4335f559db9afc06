package io.skade.catalog.remote;

import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.inmemory.InMemoryInputFile;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * A table's file IO that takes table metadata files from the skade server that owns the catalog
 * ({@link SkadeProtocol#METADATA}), and every other file from the table's own file IO.
 *
 * <p>A process that follows a table's commits through a server reads each commit's metadata file:
 * on object storage a round trip to the store per commit and per process, the first of the reads
 * that stand between a commit and its rows. The server wrote that file, and keeps what it wrote in
 * memory, so asking it costs a round trip on the cluster's network instead. Metadata files are
 * immutable, so the server and the store hand out the same metadata: a file the server does not
 * serve (outside its warehouse), a server that does not answer within {@link #ASK_TIMEOUT}, and a
 * file on local disk (cheaper to read than to ask for; see {@link #over}) are read from the store,
 * and after a failed ask the server is not asked again for {@link #PAUSE_AFTER_FAILURE}, so that a
 * server that is down costs a follower one time-out, not one per file.
 */
final class ServerMetadataIO implements FileIO {
  /** How long a metadata file is waited for from the server before the store is asked. */
  static final Duration ASK_TIMEOUT = Duration.ofSeconds(1);

  /** How long the server is not asked after it failed to answer. */
  static final Duration PAUSE_AFTER_FAILURE = Duration.ofSeconds(10);

  private static final String METADATA_SUFFIX = ".metadata.json";

  private final FileIO files;
  private final boolean ownsFiles;
  private final SkadeServerClient server;
  private volatile long pausedUntilNanos = System.nanoTime();

  /**
   * @param files the table's file IO, for every other file and when the server does not serve one
   * @param ownsFiles whether {@link #close} closes {@code files}
   * @param server the server that owns the catalog
   */
  ServerMetadataIO(FileIO files, boolean ownsFiles, SkadeServerClient server) {
    this.files = files;
    this.ownsFiles = ownsFiles;
    this.server = server;
  }

  /**
   * {@code files} taking metadata files from {@code server}, or {@code files} itself when the
   * tables under {@code location} (a warehouse or a table's location; null when unknown) are on
   * local disk, where reading a file is cheaper than asking for it and readers take a fast path of
   * their own for Hadoop's file IO.
   */
  static FileIO over(FileIO files, boolean ownsFiles, SkadeServerClient server, String location) {
    return location != null && isLocal(location)
        ? files
        : new ServerMetadataIO(files, ownsFiles, server);
  }

  private static boolean isLocal(String location) {
    return location.startsWith("/") || location.startsWith("file:");
  }

  @Override
  public InputFile newInputFile(String path) {
    InputFile stored = files.newInputFile(path);
    return served(path) ? new ServedInputFile(stored) : stored;
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    return files.newInputFile(path, length);
  }

  @Override
  public OutputFile newOutputFile(String path) {
    return files.newOutputFile(path);
  }

  @Override
  public void deleteFile(String path) {
    files.deleteFile(path);
  }

  @Override
  public Map<String, String> properties() {
    return files.properties();
  }

  @Override
  public void close() {
    if (ownsFiles) {
      files.close();
    }
  }

  /** Whether the server is asked for {@code path}: a plain metadata file on remote storage. */
  private static boolean served(String path) {
    return path.endsWith(METADATA_SUFFIX)
        && !path.endsWith(".gz" + METADATA_SUFFIX)
        && !isLocal(path);
  }

  /** The file's JSON from the server, or empty when it is to be read from the store. */
  private Optional<byte[]> ask(String path) {
    if (System.nanoTime() - pausedUntilNanos < 0) {
      return Optional.empty();
    }
    try {
      return server
          .metadataJson(path, ASK_TIMEOUT)
          .map(json -> json.getBytes(StandardCharsets.UTF_8));
    } catch (UncheckedIOException e) {
      pausedUntilNanos = System.nanoTime() + PAUSE_AFTER_FAILURE.toNanos();
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(
          new InterruptedIOException("interrupted while reading " + path));
    }
  }

  /** A metadata file, read from the server when it answers and from the store otherwise. */
  private final class ServedInputFile implements InputFile {
    private final InputFile stored;

    ServedInputFile(InputFile stored) {
      this.stored = stored;
    }

    @Override
    public long getLength() {
      return stored.getLength();
    }

    @Override
    public SeekableInputStream newStream() {
      return ask(stored.location())
          .map(json -> new InMemoryInputFile(stored.location(), json).newStream())
          .orElseGet(stored::newStream);
    }

    @Override
    public String location() {
      return stored.location();
    }

    @Override
    public boolean exists() {
      return stored.exists();
    }
  }
}
