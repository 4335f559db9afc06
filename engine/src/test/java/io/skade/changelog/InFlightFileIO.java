package io.skade.changelog;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Iceberg's {@link S3FileIO} that counts the streams open at once on a table's data and delete
 * files (those under {@code /data/}), and holds each new one until {@link #GATE} are open together
 * or {@link #GATE_WAIT_MS} passed. Readers that open one file at a time therefore show a maximum of
 * 1, however fast the store answers; readers that fetch several at once pass the gate at once.
 * Counters are static: the catalog makes its file IO by reflection.
 */
public final class InFlightFileIO implements FileIO {
  /** Streams that must be open together before any proceeds (until the gate has opened once). */
  static final int GATE = 3;

  static final long GATE_WAIT_MS = 2_000;

  private static final Object LOCK = new Object();
  private static int open;
  private static int maxOpen;
  private static int opened;
  private static boolean gateOpened;

  private final S3FileIO s3 = new S3FileIO();

  /** Starts counting afresh, the gate closed. */
  static void reset() {
    synchronized (LOCK) {
      open = 0;
      maxOpen = 0;
      opened = 0;
      gateOpened = false;
    }
  }

  /** Starts counting afresh with the gate open: streams only counted, never held. */
  static void resetUngated() {
    synchronized (LOCK) {
      reset();
      gateOpened = true;
    }
  }

  /** The most streams on data and delete files that were open at once since {@link #reset}. */
  static int maxOpen() {
    synchronized (LOCK) {
      return maxOpen;
    }
  }

  /** How many streams on data and delete files were opened since {@link #reset}. */
  static int opened() {
    synchronized (LOCK) {
      return opened;
    }
  }

  @Override
  public void initialize(Map<String, String> properties) {
    s3.initialize(properties);
  }

  @Override
  public Map<String, String> properties() {
    return s3.properties();
  }

  @Override
  public InputFile newInputFile(String path) {
    return counted(s3.newInputFile(path));
  }

  @Override
  public InputFile newInputFile(String path, long length) {
    return counted(s3.newInputFile(path, length));
  }

  @Override
  public OutputFile newOutputFile(String path) {
    return s3.newOutputFile(path);
  }

  @Override
  public void deleteFile(String path) {
    s3.deleteFile(path);
  }

  @Override
  public void close() {
    s3.close();
  }

  private static InputFile counted(InputFile file) {
    if (!file.location().contains("/data/")) {
      return file;
    }
    return new InputFile() {
      @Override
      public long getLength() {
        return file.getLength();
      }

      @Override
      public SeekableInputStream newStream() {
        enter();
        try {
          return new Counted(file.newStream());
        } catch (RuntimeException e) {
          leave();
          throw e;
        }
      }

      @Override
      public String location() {
        return file.location();
      }

      @Override
      public boolean exists() {
        return file.exists();
      }
    };
  }

  private static void enter() {
    synchronized (LOCK) {
      open++;
      opened++;
      maxOpen = Math.max(maxOpen, open);
      if (open >= GATE) {
        gateOpened = true;
        LOCK.notifyAll();
      }
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(GATE_WAIT_MS);
      long left;
      while (!gateOpened && (left = deadline - System.nanoTime()) > 0) {
        try {
          TimeUnit.NANOSECONDS.timedWait(LOCK, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private static void leave() {
    synchronized (LOCK) {
      open--;
    }
  }

  /** A stream that leaves the count when closed, once. */
  private static final class Counted extends SeekableInputStream {
    private final SeekableInputStream in;
    private boolean closed;

    Counted(SeekableInputStream in) {
      this.in = in;
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
      return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return in.read(b, off, len);
    }

    @Override
    public void close() throws IOException {
      if (!closed) {
        closed = true;
        leave();
      }
      in.close();
    }
  }
}
