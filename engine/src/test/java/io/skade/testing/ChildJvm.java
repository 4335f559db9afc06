package io.skade.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A test's child process: a main class of this class path in a JVM of its own, spoken to in lines
 * (the child's stdin, its stdout), its stderr kept in a file for failure messages.
 */
public final class ChildJvm implements AutoCloseable {
  private static final String END = "\u0000end of stdout";
  private final String name;
  private final Process process;
  private final Path stderr;
  private final Duration wait;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

  private ChildJvm(String name, Process process, Path stderr, Duration wait) {
    this.name = name;
    this.process = process;
    this.stderr = stderr;
    this.wait = wait;
    Thread reader = new Thread(this::readStdout, name + "-stdout-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts {@code main} with {@code args}; its stderr goes to {@code stderr}, and every wait for
   * one of its lines, or for its exit, is bounded by {@code wait}.
   */
  public static ChildJvm start(Class<?> main, Path stderr, Duration wait, String... args)
      throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                // Surefire's java.class.path is a manifest-only jar whose Class-Path the child
                // inherits.
                "-cp",
                System.getProperty("java.class.path")));
    // The child runs this class path's code, so it needs this JVM's module openings (the
    // surefire argLine's --add-opens, e.g. for Arrow, or Kryo serializing a ByteBuffer).
    ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(option -> option.startsWith("--add-opens"))
        .forEach(command::add);
    command.add(main.getName());
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
    return new ChildJvm(main.getSimpleName(), process, stderr, wait);
  }

  private void readStdout() {
    try (BufferedReader in =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        lines.add(line);
      }
    } catch (IOException e) {
      lines.add("stdout failed: " + e);
    } finally {
      lines.add(END);
    }
  }

  /** Waits for the line {@code expected}, skipping the lines before it. */
  public void await(String expected) throws InterruptedException {
    linesBefore(expected);
  }

  /** Waits for the line {@code expected}; returns the lines printed before it, in order. */
  public List<String> linesBefore(String expected) throws InterruptedException {
    List<String> before = new ArrayList<>();
    next(expected::equals, "'" + expected + "'", before);
    return before;
  }

  /** Waits for a line starting with {@code prefix}, skipping the lines before it; returns it. */
  public String lineStartingWith(String prefix) throws InterruptedException {
    return next(
        line -> line.startsWith(prefix),
        "a line starting with '" + prefix + "'",
        new ArrayList<>());
  }

  private String next(Predicate<String> wanted, String what, List<String> before)
      throws InterruptedException {
    long deadline = System.nanoTime() + wait.toNanos();
    for (; ; ) {
      String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
      if (line == null || line.equals(END)) {
        fail(
            name
                + " did not print "
                + what
                + " within "
                + wait
                + " ("
                + (line == null ? "timed out" : "its stdout ended")
                + "); the lines before: "
                + before
                + "; its stderr:\n"
                + stderr());
      }
      if (wanted.test(line)) {
        return line;
      }
      before.add(line);
    }
  }

  /** Writes {@code line} to the child's stdin. */
  public void send(String line) throws IOException {
    OutputStream in = process.getOutputStream();
    in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    in.flush();
  }

  /** What the child wrote to stderr so far (its logs, a stack trace). */
  public String stderr() {
    try {
      return Files.exists(stderr) ? Files.readString(stderr) : "";
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** Closes the child's stdin, waits for it to exit and asserts it exited 0. */
  @Override
  public void close() throws Exception {
    try {
      process.getOutputStream().close();
      if (!process.waitFor(wait.toMillis(), TimeUnit.MILLISECONDS)) {
        fail(
            name
                + " did not exit within "
                + wait
                + " of its stdin closing; its stderr:\n"
                + stderr());
      }
      assertThat(process.exitValue())
          .as("%s's exit code; its stderr:\n%s", name, stderr())
          .isZero();
    } finally {
      process.destroyForcibly(); // a no-op once it exited; never leave it running
      process.waitFor(wait.toMillis(), TimeUnit.MILLISECONDS);
    }
  }
}
