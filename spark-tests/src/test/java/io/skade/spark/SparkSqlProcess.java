package io.skade.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Spark SQL session in its own JVM: Spark in local mode, running spark-session's {@code
 * SqlSession} on Spark's own class path (the file {@code skade.spark.classpath} names, which
 * spark-session's build writes), with the JVM options Spark's own launcher passes on Java 17 (read
 * from that class path's {@code JavaModuleOptions}). {@link #sql} runs one statement and returns
 * its rows; the child's log goes to this JVM's standard error.
 */
final class SparkSqlProcess implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Process process;
  private final PrintStream statements;
  private final BufferedReader answers;

  /** Starts a session with {@code conf} ({@code spark.*} keys) and waits until it is up. */
  SparkSqlProcess(Map<String, String> conf) throws Exception {
    String classPath =
        Files.readString(Path.of(System.getProperty("skade.spark.classpath"))).trim()
            + File.pathSeparator
            + System.getProperty("skade.spark.session.classes");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx1g");
    command.addAll(Arrays.asList(sparkModuleOptions(classPath)));
    conf.forEach((key, value) -> command.add("-D" + key + "=" + value));
    command.addAll(List.of("-cp", classPath, "io.skade.spark.SqlSession"));
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1"); // local mode, on loopback only
    process = builder.start();
    Thread log =
        new Thread(
            () -> {
              try (BufferedReader lines =
                  new BufferedReader(
                      new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = lines.readLine()) != null; ) {
                  System.err.println("[spark] " + line);
                }
              } catch (IOException e) {
                System.err.println("[spark] log ended: " + e);
              }
            },
            "spark-log");
    log.setDaemon(true);
    log.start();
    statements = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
    answers =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    JsonNode ready = next();
    if (!ready.isTextual() || !ready.asText().equals("ready")) {
      throw new IllegalStateException("the Spark session did not start: " + ready);
    }
  }

  /**
   * Runs {@code statement} and returns its rows, each value as Spark's Java value renders it
   * ({@code String.valueOf}) or null; fails with Spark's error.
   */
  List<List<String>> sql(String statement) throws IOException {
    statements.println(JSON.writeValueAsString(statement));
    JsonNode answer = next();
    if (answer.has("error")) {
      throw new IllegalStateException(
          "Spark failed on " + statement + ": " + answer.get("error").asText());
    }
    List<List<String>> rows = new ArrayList<>();
    for (JsonNode row : answer.get("rows")) {
      List<String> values = new ArrayList<>();
      row.forEach(value -> values.add(value.isNull() ? null : value.asText()));
      rows.add(values);
    }
    return rows;
  }

  private JsonNode next() throws IOException {
    String line = answers.readLine();
    if (line == null) {
      throw new IllegalStateException("the Spark session ended (its log is above)");
    }
    return JSON.readTree(line);
  }

  /** Spark's {@code JavaModuleOptions.defaultModuleOptionArray()}, from {@code classPath}. */
  private static String[] sparkModuleOptions(String classPath) throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String entry : classPath.split(File.pathSeparator)) {
      urls.add(Path.of(entry).toUri().toURL());
    }
    try (URLClassLoader spark = new URLClassLoader(urls.toArray(URL[]::new), null)) {
      return (String[])
          spark
              .loadClass("org.apache.spark.launcher.JavaModuleOptions")
              .getMethod("defaultModuleOptionArray")
              .invoke(null);
    }
  }

  /** Ends the session: its input closes, and it is killed if it has not ended in 60 s. */
  @Override
  public void close() throws InterruptedException {
    statements.close();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
  }
}
