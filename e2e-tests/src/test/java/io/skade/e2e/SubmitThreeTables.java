package io.skade.e2e;

import io.skade.sink.ThreeTables;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * What a DataStream client does, in a JVM of its own: submits {@link ThreeTables}' job writing
 * through the skade server {@code args[0]} (token {@code args[1]}), {@code args[2]} transactions at
 * {@code args[3]} per second, to the cluster the options of the other arguments name ({@code
 * key=value}), without waiting; prints {@code JOB <id>}.
 */
public final class SubmitThreeTables {
  private SubmitThreeTables() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new HashMap<>();
    for (int i = 4; i < args.length; i++) {
      int equals = args[i].indexOf('=');
      options.put(args[i].substring(0, equals), args[i].substring(equals + 1));
    }
    // Executed where execution.target says (a remote cluster), not in a local one.
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(Configuration.fromMap(options));
    ThreeTables.job(
        env,
        Map.of("uri", args[0], "token", args[1], "server.retry-timeout", "2 min"),
        Long.parseLong(args[2]),
        Double.parseDouble(args[3]),
        2);
    JobClient job = env.executeAsync("three tables in one transaction per checkpoint");
    System.out.println("JOB " + job.getJobID());
    System.exit(0); // the client's threads would keep the JVM up
  }
}
