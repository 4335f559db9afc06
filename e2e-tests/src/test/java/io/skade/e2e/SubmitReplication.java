package io.skade.e2e;

import io.skade.sink.SkadeMultiTableSink;
import io.skade.sink.TableRow;
import io.skade.source.database.Consistency;
import io.skade.source.database.SkadeDatabaseSource;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * What a DataStream client does, in a JVM of its own: submits a job replicating tables {@code
 * shop.orders}, {@code shop.customers} and {@code shop.audit} of the skade server {@code args[0]}
 * into the same tables of the server {@code args[1]} (token {@code args[2]} for both) — the
 * database source in consistent mode feeding the multi-table sink — to the cluster the options of
 * the other arguments name ({@code key=value}), without waiting; prints {@code JOB <id>}.
 */
public final class SubmitReplication {
  private SubmitReplication() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new HashMap<>();
    for (int i = 3; i < args.length; i++) {
      int equals = args[i].indexOf('=');
      options.put(args[i].substring(0, equals), args[i].substring(equals + 1));
    }
    StreamExecutionEnvironment env = new StreamExecutionEnvironment(Configuration.fromMap(options));
    env.setParallelism(2);
    SkadeDatabaseSource<TableRow> changes =
        SkadeDatabaseSource.builder()
            .catalogProperties(catalog(args[0], args[2]))
            .tables("shop.orders", "shop.customers", "shop.audit")
            .consistency(Consistency.COMMIT)
            .startFromEarliest()
            .build();
    env.fromSource(changes, WatermarkStrategy.noWatermarks(), "shop changes")
        .sinkTo(
            SkadeMultiTableSink.builder()
                .catalogProperties(catalog(args[1], args[2]))
                .table("shop.orders")
                .table("shop.customers")
                .table("shop.audit", List.of())
                .build());
    JobClient job = env.executeAsync("replicate shop");
    System.out.println("JOB " + job.getJobID());
    System.exit(0); // the client's threads would keep the JVM up
  }

  private static Map<String, String> catalog(String uri, String token) {
    return Map.of("uri", uri, "token", token, "server.retry-timeout", "2 min");
  }
}
