package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Submits a DataStream job from a client JVM of its own, on Flink's lib/ and the connector jar (as
 * {@code flink run} has them) and the jars given, as the cluster suite's DataStream tests do.
 */
final class DataStreamClient {
  private DataStreamClient() {}

  /**
   * Runs {@code main} with {@code args}, then the options naming {@code cluster}; the id of the job
   * it printed ({@code JOB <id>}) it submitted.
   */
  static String submit(
      FlinkCluster cluster, Path root, Class<?> main, List<String> jars, List<String> args)
      throws Exception {
    List<String> classpath = new ArrayList<>(SkadeOnFlinkClusterTest.libWithConnector());
    classpath.addAll(jars);
    classpath.add(jarOf(main));
    List<String> all = new ArrayList<>(args);
    all.addAll(
        List.of(
            "execution.target=remote",
            "rest.address=" + cluster.restAddress(),
            "rest.port=" + cluster.restPort()));
    Path log = Files.createTempFile(root, "client", ".log");
    List<String> jvm = new ArrayList<>(cluster.javaOptions());
    jvm.addAll(List.of("-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
    ClusterJvm client =
        ClusterJvm.start("datastream-client", classpath, jvm, main.getName(), all, log);
    int exit = client.waitFor(180);
    String output = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(exit).as("the client's exit; its output:\n%s", output).isZero();
    List<String> jobs = SkadeOnFlinkClusterTest.jobIds(output.lines().toList());
    assertThat(jobs).as("the client's output:\n%s", output).hasSize(1);
    return jobs.get(0);
  }

  /** The jar (or classes directory) {@code type} was loaded from. */
  static String jarOf(Class<?> type) throws Exception {
    return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
  }
}
