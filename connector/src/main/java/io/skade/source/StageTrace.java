package io.skade.source;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * When each commit passed each stage of the source on its way to a row, for the latency benchmarks'
 * breakdown: off unless the system property {@value #PROPERTY} names a directory. Then every JVM
 * the source runs in (the job's, or a cluster's JobManager and TaskManagers) appends one line per
 * stage and commit to its own file there: the stage, the commit's {@code commit_seq} and the wall
 * clock in microseconds since the epoch — the clock the catalog's committer stamps commits with, so
 * stages of processes on one machine line up with the commit.
 *
 * <p>A split marks the {@code commit_seq} of the window's last commit. Off, a mark costs one read
 * of a final field.
 */
public final class StageTrace {
  /** The system property naming the directory the marks go to. */
  public static final String PROPERTY = "skade.trace.stages";

  /** The stages a commit passes in the source, in order. */
  public enum Stage {
    /** The enumerator's commit feed delivered the commit. */
    FEED_DELIVERED,
    /** The enumerator planned the window that ends at the commit. */
    WINDOW_PLANNED,
    /** The enumerator assigned the window's split to a reader. */
    SPLIT_ASSIGNED,
    /** The reader's fetcher received the split. */
    SPLIT_RECEIVED,
    /** The fetcher opened the split: its table read, its window planned for reading. */
    SPLIT_OPENED,
    /** The fetcher decoded the split's first change. */
    FIRST_ROW_DECODED
  }

  private static final Path FILE = file();

  private static FileChannel out;

  private StageTrace() {}

  private static Path file() {
    String dir = System.getProperty(PROPERTY);
    return dir == null ? null : Path.of(dir, "stages-" + ProcessHandle.current().pid() + ".tsv");
  }

  /** Whether marks are written in this JVM. */
  public static boolean enabled() {
    return FILE != null;
  }

  /** Notes that the commit {@code commitSeq} reached {@code stage} now. */
  public static void mark(Stage stage, long commitSeq) {
    if (FILE != null) {
      write(stage, commitSeq);
    }
  }

  private static synchronized void write(Stage stage, long commitSeq) {
    Instant now = Instant.now();
    long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    String line = stage + "\t" + commitSeq + "\t" + micros + "\n";
    try {
      if (out == null) {
        // kept open: a mark is one write, which a process killed right after it keeps
        out = FileChannel.open(FILE, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      }
      out.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
    } catch (IOException e) {
      throw new UncheckedIOException("could not write the stage trace " + FILE, e);
    }
  }

  /**
   * Every mark written under {@code dir} by any JVM: per {@code commit_seq}, per stage, the first
   * time it was reached, in microseconds since the epoch.
   */
  public static Map<Long, Map<Stage, Long>> read(Path dir) throws IOException {
    Map<Long, Map<Stage, Long>> marks = new HashMap<>();
    List<Path> files;
    try (Stream<Path> listed = Files.list(dir)) {
      files = listed.filter(p -> p.getFileName().toString().startsWith("stages-")).toList();
    }
    for (Path file : files) {
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        String[] parts = line.split("\t");
        if (parts.length != 3) {
          continue; // a line cut by a process killed while writing it
        }
        marks
            .computeIfAbsent(Long.parseLong(parts[1]), seq -> new EnumMap<>(Stage.class))
            .merge(Stage.valueOf(parts[0]), Long.parseLong(parts[2]), Math::min);
      }
    }
    return marks;
  }
}
