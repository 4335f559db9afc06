package io.skade.e2e;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.jobmanager.JobManagerProcessSpec;
import org.apache.flink.runtime.jobmanager.JobManagerProcessUtils;
import org.apache.flink.runtime.util.config.memory.ProcessMemoryUtils;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A Flink standalone session cluster of child JVMs, set up as Flink's own scripts set one up, from
 * Maven Central jars (there is no Flink distribution here): a {@code conf/config.yaml}, a
 * JobManager ({@code StandaloneSessionClusterEntrypoint}) and TaskManagers ({@code
 * TaskManagerRunner}), each with the JVM memory options and dynamic properties Flink's {@code
 * BashJavaUtils} derives from the configured process sizes, Java 17's module openings and {@code
 * env.java.opts.all}. Its {@code lib/} is a class path: Flink's jars and whatever the test adds
 * (skade's {@code skade-sql-connector} jar, as a user drops it into {@code lib/}); its {@code
 * plugins/} directory, when given, holds Flink's file system plugins, one directory each ({@code
 * plugins/s3-fs-hadoop/}), found through {@code FLINK_PLUGINS_DIR} as Flink's scripts set it.
 */
public final class FlinkCluster implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration START_TIMEOUT = Duration.ofSeconds(120);

  private final Path dir;
  private final List<String> lib;
  private final Path plugins;
  private final List<String> javaOptions;
  private final Path conf;
  private final int restPort;
  private final List<ClusterJvm> taskManagers = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();
  private ClusterJvm jobManager;

  /**
   * Writes {@code dir}/conf/config.yaml with {@code settings} and the ports, memory sizes and slots
   * of this cluster, and starts a JobManager and {@code taskManagers} TaskManagers.
   */
  public static FlinkCluster start(
      Path dir, List<String> lib, int taskManagers, int slots, Map<String, String> settings)
      throws Exception {
    return start(dir, lib, null, taskManagers, slots, settings);
  }

  /**
   * As {@link #start(Path, List, int, int, Map)}, with {@code plugins} as Flink's plugins directory
   * (a directory per plugin holding its jars), or none when it is null.
   */
  public static FlinkCluster start(
      Path dir,
      List<String> lib,
      Path plugins,
      int taskManagers,
      int slots,
      Map<String, String> settings)
      throws Exception {
    FlinkCluster cluster = new FlinkCluster(dir, lib, plugins, slots, settings);
    try {
      cluster.startJobManager();
      for (int i = 0; i < taskManagers; i++) {
        cluster.startTaskManager();
      }
      cluster.awaitTaskManagers(taskManagers);
      return cluster;
    } catch (Exception | AssertionError e) {
      cluster.close();
      throw e;
    }
  }

  private FlinkCluster(
      Path dir, List<String> lib, Path plugins, int slots, Map<String, String> settings)
      throws IOException {
    this.dir = Files.createDirectories(dir);
    this.lib = List.copyOf(lib);
    this.plugins = plugins;
    this.javaOptions = words(settings.getOrDefault("env.java.opts.all", ""));
    this.conf = Files.createDirectories(dir.resolve("conf"));
    this.restPort = freePort();
    Map<String, String> yaml = new LinkedHashMap<>();
    yaml.put("jobmanager.rpc.address", "localhost");
    yaml.put("jobmanager.rpc.port", String.valueOf(freePort()));
    yaml.put("jobmanager.bind-host", "localhost");
    yaml.put("jobmanager.memory.process.size", "1024m");
    yaml.put("taskmanager.bind-host", "localhost");
    yaml.put("taskmanager.host", "localhost");
    yaml.put("taskmanager.numberOfTaskSlots", String.valueOf(slots));
    yaml.put("taskmanager.memory.process.size", "1280m");
    yaml.put("taskmanager.memory.managed.size", "64m"); // no RocksDB state: heap instead
    yaml.put("rest.address", "localhost");
    yaml.put("rest.bind-address", "localhost");
    yaml.put("rest.port", String.valueOf(restPort));
    // A TaskManager that dies is noticed within seconds, not Flink's default 50.
    yaml.put("heartbeat.interval", "1000");
    yaml.put("heartbeat.timeout", "10000");
    yaml.put("execution.checkpointing.dir", dir.resolve("checkpoints").toUri().toString());
    yaml.put("io.tmp.dirs", Files.createDirectories(dir.resolve("tmp")).toString());
    yaml.putAll(settings);
    Files.writeString(
        conf.resolve("config.yaml"),
        yaml.entrySet().stream()
            .map(e -> e.getKey() + ": " + e.getValue())
            .collect(Collectors.joining("\n", "", "\n")));
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private Configuration configuration() {
    return GlobalConfiguration.loadConfiguration(conf.toString());
  }

  private void startJobManager() throws Exception {
    Configuration config = configuration();
    JobManagerProcessSpec spec = JobManagerProcessUtils.processSpecFromConfig(config);
    List<String> args = new ArrayList<>(List.of("--configDir", conf.toString()));
    args.addAll(words(JobManagerProcessUtils.generateDynamicConfigsStr(spec)));
    List<String> jvm = new ArrayList<>(javaOptions);
    jvm.addAll(words(JobManagerProcessUtils.generateJvmParametersStr(spec, config)));
    jobManager =
        ClusterJvm.start(
            "jobmanager",
            lib,
            jvm,
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
            args,
            dir.resolve("jobmanager.log"),
            environment());
    await("the JobManager's REST endpoint on port " + restPort)
        .atMost(START_TIMEOUT)
        .pollInterval(Duration.ofMillis(500))
        .ignoreExceptions()
        .until(() -> get("/overview").has("taskmanagers"));
  }

  private void startTaskManager() throws Exception {
    TaskExecutorProcessSpec spec = TaskExecutorProcessUtils.processSpecFromConfig(configuration());
    int index = taskManagers.size();
    List<String> args = new ArrayList<>(List.of("--configDir", conf.toString()));
    args.addAll(words(TaskExecutorProcessUtils.generateDynamicConfigsStr(spec)));
    args.addAll(List.of("-D", "taskmanager.resource-id=taskmanager-" + index));
    List<String> jvm = new ArrayList<>(javaOptions);
    jvm.addAll(words(ProcessMemoryUtils.generateJvmParametersStr(spec)));
    taskManagers.add(
        ClusterJvm.start(
            "taskmanager-" + index,
            lib,
            jvm,
            "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            args,
            dir.resolve("taskmanager-" + index + ".log"),
            environment()));
  }

  private Map<String, String> environment() {
    return plugins == null
        ? Map.of()
        : Map.of("FLINK_PLUGINS_DIR", plugins.toAbsolutePath().toString());
  }

  /** The cluster's lib/: the class path of its processes, and of a SQL client of it. */
  public List<String> lib() {
    return lib;
  }

  /** The JVM options of its processes from {@code env.java.opts.all}, for a client of it. */
  public List<String> javaOptions() {
    return javaOptions;
  }

  private static List<String> words(String text) {
    return Arrays.stream(text.trim().split("\\s+")).filter(w -> !w.isEmpty()).toList();
  }

  /** Waits until the JobManager has {@code count} TaskManagers registered. */
  public void awaitTaskManagers(int count) throws InterruptedException {
    // The ResourceManager's list: it answers even while a JobMaster is stalled.
    waitUntil(
        count + " TaskManagers registered",
        START_TIMEOUT,
        () -> get("/taskmanagers").get("taskmanagers").size() == count);
  }

  /**
   * Polls {@code condition} (its exceptions taken as not yet) until it holds, at most {@code
   * atMost}; on a timeout fails naming {@code what} it waited for, how each process of the cluster
   * stands and where the JobManager's busy threads are: what a build's log keeps of a stall is this
   * message.
   */
  public void waitUntil(String what, Duration atMost, Callable<Boolean> condition)
      throws InterruptedException {
    try {
      await(what)
          .atMost(atMost)
          .pollInterval(Duration.ofMillis(500))
          .ignoreExceptions()
          .until(condition);
    } catch (ConditionTimeoutException e) {
      List<String> processes = new ArrayList<>();
      processes.add(jobManager.state());
      taskManagers.forEach(tm -> processes.add(tm.state()));
      throw new AssertionError(
          "waited "
              + atMost.toSeconds()
              + " s in vain for "
              + what
              + "; the processes: "
              + String.join(", ", processes)
              + "; the JobManager's busy threads:\n"
              + busyThreads(jobManager.dumpThreads()),
          e);
    }
  }

  /**
   * The threads of a thread dump that stand in Flink's runtime (its RPC dispatchers, checkpoint
   * timer and I/O pools), not idle in a pool, a network loop or the process's main thread waiting
   * for its end: a line each of its name, top frames and Flink's frames below them, where a stalled
   * JobManager stands, short enough for the end of a build's output.
   */
  private static String busyThreads(String dump) {
    return Arrays.stream(dump.split("\n\\s*\n"))
        .filter(thread -> thread.startsWith("\""))
        .filter(thread -> thread.contains("at org.apache.flink.runtime."))
        .filter(thread -> !thread.contains("at org.apache.flink.shaded."))
        .filter(thread -> !thread.contains("runClusterEntrypoint"))
        .filter(thread -> !thread.contains("BlobServer.run"))
        .map(
            thread -> {
              List<String> lines = thread.lines().map(String::strip).toList();
              List<String> frames = lines.stream().filter(line -> line.startsWith("at ")).toList();
              List<String> shown = new ArrayList<>(frames.subList(0, Math.min(4, frames.size())));
              frames.stream()
                  .skip(shown.size())
                  .filter(frame -> frame.startsWith("at org.apache.flink.runtime."))
                  .limit(8)
                  .forEach(shown::add);
              return lines.get(0).replaceAll(" (prio|os_prio|cpu|elapsed|tid|nid)=\\S+", "")
                  + ": "
                  + String.join(" < ", shown);
            })
        .limit(8)
        .collect(Collectors.joining("\n"));
  }

  /** Kills TaskManager {@code index} with SIGKILL. */
  public void killTaskManager(int index) throws InterruptedException {
    taskManagers.get(index).kill();
  }

  public String restAddress() {
    return "localhost";
  }

  public int restPort() {
    return restPort;
  }

  /** The logs of every process of the cluster. */
  public List<Path> logs() {
    List<Path> logs = new ArrayList<>();
    logs.add(jobManager.log());
    taskManagers.forEach(tm -> logs.add(tm.log()));
    return logs;
  }

  /** A job's state, e.g. RUNNING, FINISHED, FAILED. */
  public String jobState(String jobId) throws Exception {
    return get("/jobs/" + jobId).get("state").asText();
  }

  /** Whether the job runs with every task of it running (or finished). */
  public boolean allTasksRunning(String jobId) throws Exception {
    JsonNode job = get("/jobs/" + jobId);
    return job.get("state").asText().equals("RUNNING")
        && StreamSupport.stream(job.get("vertices").spliterator(), false)
            .allMatch(
                v ->
                    v.get("status").asText().equals("RUNNING")
                        || v.get("status").asText().equals("FINISHED"));
  }

  /** The names of the job's vertices, e.g. {@code DeltaJoin[12]}. */
  public List<String> vertexNames(String jobId) throws Exception {
    return StreamSupport.stream(get("/jobs/" + jobId).get("vertices").spliterator(), false)
        .map(vertex -> vertex.get("name").asText())
        .toList();
  }

  /** The indexes of the TaskManagers running tasks of the job. */
  public Set<Integer> taskManagersOf(String jobId) throws Exception {
    Set<Integer> hosts = new TreeSet<>();
    for (JsonNode vertex : get("/jobs/" + jobId).get("vertices")) {
      for (JsonNode host :
          get("/jobs/" + jobId + "/vertices/" + vertex.get("id").asText() + "/taskmanagers")
              .get("taskmanagers")) {
        String id = host.get("taskmanager-id").asText();
        hosts.add(Integer.parseInt(id.substring(id.lastIndexOf('-') + 1)));
      }
    }
    return hosts;
  }

  /**
   * How often the job's tasks were started again: the sum of their attempt numbers, read from the
   * job's execution graph (Flink's {@code numRestarts} metric reaches the REST API up to {@code
   * metrics.fetcher.update-interval} late).
   */
  public long restarts(String jobId) throws Exception {
    long attempts = 0;
    for (JsonNode vertex : get("/jobs/" + jobId).get("vertices")) {
      for (JsonNode subtask :
          get("/jobs/" + jobId + "/vertices/" + vertex.get("id").asText()).get("subtasks")) {
        attempts += subtask.get("attempt").asLong();
      }
    }
    return attempts;
  }

  /** The causes of the job's failures so far, for a message. */
  public String exceptions(String jobId) throws Exception {
    return get("/jobs/" + jobId + "/exceptions").toPrettyString();
  }

  /** Cancels the job. */
  public void cancel(String jobId) throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://localhost:" + restPort + "/jobs/" + jobId + "?mode=cancel"))
                .method("PATCH", HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (response.statusCode() != 202) {
      throw new IllegalStateException(
          "cancelling " + jobId + ": " + response.statusCode() + " " + response.body());
    }
  }

  private JsonNode get(String path) throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(URI.create("http://localhost:" + restPort + path))
                .timeout(Duration.ofSeconds(10))
                .build(),
            HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (response.statusCode() != 200) {
      throw new IllegalStateException(
          "GET " + path + ": " + response.statusCode() + " " + response.body());
    }
    return JSON.readTree(response.body());
  }

  /**
   * Kills every process of the cluster, each after a dump of its threads into its log ({@link
   * ClusterJvm#dumpThreads}): the logs of a failed test are kept, and show where it stood.
   */
  @Override
  public void close() throws InterruptedException {
    if (jobManager != null) {
      jobManager.dumpThreads();
    }
    for (ClusterJvm tm : taskManagers) {
      tm.dumpThreads();
      tm.kill();
    }
    if (jobManager != null) {
      jobManager.kill();
    }
  }
}
