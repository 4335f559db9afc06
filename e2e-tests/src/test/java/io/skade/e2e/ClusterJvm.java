package io.skade.e2e;

import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One process of a test cluster: a JVM on a class path of jars (Flink's lib/, the connector jar),
 * its output, stdout and stderr together, appended to a log file of its own.
 */
public final class ClusterJvm implements AutoCloseable {
  /**
   * The module openings Flink's own {@code config.yaml} passes on Java 17 ({@code
   * env.java.opts.all}): Flink's serializers (Kryo), its memory and network stacks reach into these
   * packages.
   */
  static final List<String> JAVA_17_OPTIONS =
      List.of(
          "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
          "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
          "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
          "--add-opens=java.base/java.lang=ALL-UNNAMED",
          "--add-opens=java.base/java.net=ALL-UNNAMED",
          "--add-opens=java.base/java.io=ALL-UNNAMED",
          "--add-opens=java.base/java.nio=ALL-UNNAMED",
          "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
          "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
          "--add-opens=java.base/java.text=ALL-UNNAMED",
          "--add-opens=java.base/java.time=ALL-UNNAMED",
          "--add-opens=java.base/java.util=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
          "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED");

  private final String name;
  private final Process process;
  private final Path log;

  private ClusterJvm(String name, Process process, Path log) {
    this.name = name;
    this.process = process;
    this.log = log;
  }

  /**
   * Starts {@code main} with {@code jvmOptions} (besides {@link #JAVA_17_OPTIONS}) and {@code args}
   * on {@code classpath}, its output appended to {@code log}.
   */
  public static ClusterJvm start(
      String name,
      List<String> classpath,
      List<String> jvmOptions,
      String main,
      List<String> args,
      Path log)
      throws IOException {
    return start(name, classpath, jvmOptions, main, args, log, Map.of());
  }

  /** As {@link #start(String, List, List, String, List, Path)}, with more environment variables. */
  public static ClusterJvm start(
      String name,
      List<String> classpath,
      List<String> jvmOptions,
      String main,
      List<String> args,
      Path log,
      Map<String, String> environment)
      throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(JAVA_17_OPTIONS);
    command.addAll(jvmOptions);
    command.add("-cp");
    command.add(String.join(File.pathSeparator, classpath));
    command.add(main);
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().putAll(environment);
    Process process =
        builder
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    return new ClusterJvm(name, process, log);
  }

  /** Whether the JVM runs, or how it ended: for a message. */
  public String state() {
    return name + (process.isAlive() ? " running" : " exited with " + process.exitValue());
  }

  public Path log() {
    return log;
  }

  /** Waits for it to end on its own; its exit code. */
  public int waitFor(long seconds) throws InterruptedException {
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      kill();
      throw new IllegalStateException(
          name + " did not end within " + seconds + " s; its log: " + log);
    }
    return process.exitValue();
  }

  /**
   * Has the JVM, if it still runs, print its threads' stacks into its log (SIGQUIT), so that the
   * log a failed test keeps shows where each thread stood (a hung JobManager's, say); returns the
   * dump once it is written, or nothing after 5 s without it: a dump only explains, it changes no
   * outcome.
   */
  public String dumpThreads() throws InterruptedException {
    if (!process.isAlive()) {
      return "";
    }
    try {
      long from = Files.size(log);
      new ProcessBuilder("kill", "-QUIT", Long.toString(process.pid())).start().waitFor();
      AtomicReference<String> dump = new AtomicReference<>("");
      await(name + " thread dump")
          .atMost(Duration.ofSeconds(5))
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                dump.set(logAfter(from));
                return dump.get().contains("JNI global refs");
              });
      return dump.get();
    } catch (IOException | ConditionTimeoutException e) {
      return ""; // no dump: the log shows what it shows
    }
  }

  /** What the log holds after its first {@code from} bytes. */
  private String logAfter(long from) throws IOException {
    try (RandomAccessFile file = new RandomAccessFile(log.toFile(), "r")) {
      byte[] bytes = new byte[(int) Math.max(0, file.length() - from)];
      file.seek(from);
      file.readFully(bytes);
      return new String(bytes, StandardCharsets.UTF_8);
    }
  }

  /** SIGKILL, as a machine failure would end it; returns once it is gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException(name + " (pid " + process.pid() + ") did not die");
    }
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
