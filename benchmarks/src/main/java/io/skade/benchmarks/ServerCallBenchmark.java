package io.skade.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import io.skade.catalog.remote.SkadeProtocol;
import io.skade.catalog.remote.SkadeServerClient;
import io.skade.server.ServerProcess;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Prints what one small call to a skade server costs, asked back to back from one thread as the
 * lookups' freshness checks ask it: the cursor ({@code GET /skade/v1/commits?limit=0}) through
 * {@link SkadeServerClient#commitSeq} (a blocking, kept-alive {@code HttpURLConnection}) beside the
 * same request through the JDK's asynchronous {@code HttpClient}, which the client's other calls
 * use. Per way: calls/s, round trip, and the CPU each call costs this JVM and the server's (a child
 * JVM; its user and system time from {@code /proc}). Three rounds of {@code
 * skade.bench.call.seconds} [5] each way, alternating; the first warms both JVMs. It asserts
 * nothing.
 */
public final class ServerCallBenchmark {
  private ServerCallBenchmark() {}

  public static void main(String[] args) throws Exception {
    int seconds = Integer.getInteger("skade.bench.call.seconds", 5);
    System.out.printf(
        "a server's cursor asked back to back from one thread, %d s per way and round; load"
            + " average %s%n",
        seconds, Harness.loadAverage());
    Path root = Files.createTempDirectory("skade-server-call-bench");
    try (ServerProcess server = new ServerProcess(root)) {
      long serverPid = ProcessHandle.current().children().findFirst().orElseThrow().pid();
      SkadeServerClient client =
          new SkadeServerClient(
              URI.create(server.uri()), ServerProcess.TOKEN, Duration.ofMinutes(1));
      HttpClient async = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest request =
          HttpRequest.newBuilder(
                  URI.create(server.uri() + SkadeProtocol.COMMITS + "?after=0&limit=0&wait-ms=0"))
              .header("Authorization", "Bearer " + ServerProcess.TOKEN)
              .timeout(Duration.ofSeconds(30))
              .build();
      System.out.printf(
          "%-5s %-44s %10s %9s %14s %14s%n",
          "round", "way", "calls/s", "rtt_us", "client_cpu_us", "server_cpu_us");
      for (int round = 1; round <= 3; round++) {
        measure(
            round, "blocking HttpURLConnection (commitSeq)", seconds, serverPid, client::commitSeq);
        measure(
            round,
            "asynchronous java.net.http.HttpClient",
            seconds,
            serverPid,
            () -> async.send(request, HttpResponse.BodyHandlers.ofString()).body());
      }
    } finally {
      Harness.deleteTree(root);
    }
  }

  @FunctionalInterface
  private interface Call {
    Object call() throws Exception;
  }

  private static void measure(int round, String way, int seconds, long serverPid, Call call)
      throws Exception {
    OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long calls = 0;
    long clientCpu = os.getProcessCpuTime();
    long serverTicks = ticks(serverPid);
    long started = System.nanoTime();
    long end = started + Duration.ofSeconds(seconds).toNanos();
    while (System.nanoTime() < end) {
      call.call();
      calls++;
    }
    double elapsed = (System.nanoTime() - started) / 1e9;
    System.out.printf(
        "%-5d %-44s %10.0f %9.0f %14.0f %14.0f%n",
        round,
        way,
        calls / elapsed,
        elapsed * 1e6 / calls,
        (os.getProcessCpuTime() - clientCpu) / 1e3 / calls,
        // Clock ticks of 10 ms.
        (ticks(serverPid) - serverTicks) * 1e4 / calls);
  }

  /** The user and system time of process {@code pid} so far, in clock ticks. */
  private static long ticks(long pid) throws Exception {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }
}
