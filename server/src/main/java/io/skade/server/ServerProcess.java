package io.skade.server;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A skade server as its own process: a child JVM running {@link ServerMain} on the caller's class
 * path, on a warehouse, with one bearer token ({@link #TOKEN}). What a Flink job reaches with the
 * {@code uri} option, for tests and benchmarks that need the catalog in another JVM (and killed
 * with SIGKILL, see {@link #killAndRestart}).
 */
public final class ServerProcess implements AutoCloseable {
  /** The one bearer token the server accepts. */
  public static final String TOKEN = "remote-token";

  private static final Pattern LISTENING =
      Pattern.compile("skade server listening on (http://[^:]+:(\\d+))");
  private final Path root;
  private final String classpath;
  private final List<String> jvmOptions;
  private final List<String> flags;
  private Process process;

  /** Copies the process's output into the log. */
  private Thread reader;

  private String uri;

  /**
   * Starts a server on {@code root}/warehouse, on a free port.
   *
   * @param flags further flags of {@link ServerMain}, e.g. {@code "-P", "lineage.sink=table"}
   */
  public ServerProcess(Path root, String... flags) throws Exception {
    // Surefire's java.class.path is a manifest-only jar whose Class-Path the child inherits.
    this(root, System.getProperty("java.class.path"), null, List.of(), List.of(flags));
  }

  /**
   * Starts a server on {@code root}/warehouse, on a free port, from the server's shaded jar, as a
   * user runs it.
   */
  public static ServerProcess fromJar(Path root, Path jar, String... flags) throws Exception {
    return new ServerProcess(root, jar.toString(), null, List.of(), List.of(flags));
  }

  /**
   * Starts a server from the server's shaded jar on a warehouse every process reaches ({@code
   * s3://bucket/warehouse}), its catalog on the local disk in {@code root}/catalog, on a free port.
   *
   * @param jvmOptions options of the server's JVM, e.g. {@code -Daws.region=...}
   * @param flags further flags of {@link ServerMain}, e.g. {@code "-P", "io-impl=..."}
   */
  public static ServerProcess fromJar(
      Path root, Path jar, String warehouse, List<String> jvmOptions, List<String> flags)
      throws Exception {
    return new ServerProcess(root, jar.toString(), warehouse, jvmOptions, flags);
  }

  /**
   * Starts a member of server group {@code group} on ZooKeeper {@code zookeeper}, on this JVM's
   * class path: its catalog copy in {@code root}/catalog, the tables in {@code warehouse} (shared
   * by the members), the one token of {@link #TOKEN} also the one it sends the other members.
   */
  public static ServerProcess member(
      Path root, String warehouse, String group, String zookeeper, String memberId, String... flags)
      throws Exception {
    Files.createDirectories(root);
    Files.writeString(root.resolve("member-token"), TOKEN);
    List<String> all =
        new ArrayList<>(
            List.of(
                "--group",
                group,
                "--zookeeper",
                zookeeper,
                "--member-id",
                memberId,
                "--member-token-file",
                root.resolve("member-token").toString()));
    all.addAll(List.of(flags));
    return new ServerProcess(
        root, System.getProperty("java.class.path"), warehouse, List.of(), all);
  }

  private ServerProcess(
      Path root, String classpath, String warehouse, List<String> jvmOptions, List<String> flags)
      throws Exception {
    this.root = root;
    this.classpath = classpath;
    this.jvmOptions = List.copyOf(jvmOptions);
    List<String> all = new ArrayList<>();
    if (warehouse == null) {
      all.addAll(List.of("--warehouse", root.resolve("warehouse").toString()));
    } else {
      all.addAll(
          List.of("--warehouse", warehouse, "--catalog-path", root.resolve("catalog").toString()));
    }
    all.addAll(flags);
    this.flags = List.copyOf(all);
    Files.writeString(root.resolve("tokens"), TOKEN + "\n");
    start(0);
  }

  /** Where the server's output goes (each start appends to it). */
  public Path log() {
    return root.resolve("server.log");
  }

  private void start(int port) throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(jvmOptions);
    command.addAll(
        List.of(
            "-cp",
            classpath,
            ServerMain.class.getName(),
            "--port",
            String.valueOf(port),
            "--token-file",
            root.resolve("tokens").toString()));
    command.addAll(flags);
    process = new ProcessBuilder(command).redirectErrorStream(true).start();
    Process started = process;
    CompletableFuture<String> listening = new CompletableFuture<>();
    reader =
        new Thread(
            () -> {
              try (BufferedReader lines =
                  new BufferedReader(
                      new InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = lines.readLine()) != null; ) {
                  Files.writeString(
                      log(),
                      line + System.lineSeparator(),
                      StandardCharsets.UTF_8,
                      StandardOpenOption.CREATE,
                      StandardOpenOption.APPEND);
                  Matcher matcher = LISTENING.matcher(line);
                  if (matcher.find()) {
                    listening.complete(matcher.group(1));
                  }
                }
              } catch (Exception e) {
                listening.completeExceptionally(e);
              }
              listening.completeExceptionally(
                  new IllegalStateException(
                      "the server process ended;" + " its output is in " + log()));
            },
            "server-output");
    reader.setDaemon(true);
    reader.start();
    uri = listening.get(60, TimeUnit.SECONDS);
  }

  /** Where it listens, e.g. {@code http://127.0.0.1:40123}; the same after a restart. */
  public String uri() {
    return uri;
  }

  /** Kills it with SIGKILL, waits {@code downMillis}, and starts it again on the same port. */
  public void killAndRestart(long downMillis) throws Exception {
    kill();
    Thread.sleep(downMillis);
    restart();
  }

  /** Starts it again, after {@link #kill}, on the same directory and port. */
  public void restart() throws Exception {
    String before = uri;
    start(Integer.parseInt(uri.substring(uri.lastIndexOf(':') + 1)));
    if (!uri.equals(before)) {
      throw new IllegalStateException("restarted on " + uri + ", not " + before);
    }
  }

  /** Kills it (SIGKILL), and waits until its output is in the log. */
  @Override
  public void close() throws Exception {
    kill();
  }

  /** Its process id. */
  public long pid() {
    return process.pid();
  }

  /** Sends it {@code signal} (e.g. {@code STOP}, {@code CONT}) with {@code kill}. */
  public void signal(String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid())).start();
    if (kill.waitFor() != 0) {
      throw new IllegalStateException("kill -" + signal + " " + pid() + " failed");
    }
  }

  /** Kills it with SIGKILL, and waits until it is dead and its output is in the log. */
  public void kill() throws Exception {
    process.destroyForcibly();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("the server process did not die");
    }
    reader.join(TimeUnit.SECONDS.toMillis(10)); // no line is written after this
  }
}
