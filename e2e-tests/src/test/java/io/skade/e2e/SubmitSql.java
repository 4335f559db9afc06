package io.skade.e2e;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

/**
 * What a SQL client does with a script, in a JVM of its own on Flink's lib/ and the connector jar
 * (this class uses Flink's API only): runs the statements of {@code args[0]} (separated by a {@code
 * ;} at the end of a line; lines starting with {@code --} are comments) against the cluster named
 * by the options of the other arguments ({@code key=value}, e.g. {@code execution.target=remote},
 * {@code rest.port=...}). {@code SET 'key' = 'value'} sets an option for the statements after it;
 * an {@code INSERT} is submitted without waiting and prints {@code JOB <id>} (with {@code
 * -Dskade.submit.await=true} it is then awaited and prints {@code DONE <id> <net runtime ms>}: a
 * job of an embedded MiniCluster, without {@code execution.target}, lives only as long as this
 * JVM); a {@code SELECT} prints {@code ROW <row>} per row and then {@code END}.
 */
public final class SubmitSql {
  private static final Pattern SET =
      Pattern.compile("SET\\s+'([^']+)'\\s*=\\s*'([^']*)'", Pattern.CASE_INSENSITIVE);

  private SubmitSql() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      int equals = args[i].indexOf('=');
      options.put(args[i].substring(0, equals), args[i].substring(equals + 1));
    }
    TableEnvironment env =
        TableEnvironment.create(
            EnvironmentSettings.newInstance()
                .inStreamingMode()
                .withConfiguration(Configuration.fromMap(options))
                .build());
    String script = Files.readString(Path.of(args[0]), StandardCharsets.UTF_8);
    for (String statement : script.split(";\\s*\\n")) {
      String sql =
          statement
              .lines()
              .filter(line -> !line.strip().startsWith("--"))
              .collect(Collectors.joining("\n"))
              .strip(); // comment lines dropped
      if (sql.isEmpty()) {
        continue;
      }
      Matcher set = SET.matcher(sql);
      String verb = sql.split("\\s+", 2)[0].toUpperCase(Locale.ROOT);
      if (set.matches()) {
        env.getConfig().getConfiguration().setString(set.group(1), set.group(2));
      } else if (verb.equals("INSERT")) {
        TableResult result = env.executeSql(sql);
        JobClient job = result.getJobClient().orElseThrow();
        System.out.println("JOB " + job.getJobID());
        System.out.flush();
        if (Boolean.getBoolean("skade.submit.await")) {
          long runtime = job.getJobExecutionResult().get().getNetRuntime();
          System.out.println("DONE " + job.getJobID() + " " + runtime);
        }
      } else if (verb.equals("SELECT")) {
        try (CloseableIterator<Row> rows = env.executeSql(sql).collect()) {
          rows.forEachRemaining(row -> System.out.println("ROW " + row));
        }
        System.out.println("END");
      } else {
        env.executeSql(sql).await();
      }
      System.out.flush();
    }
    System.exit(0); // the REST client's threads would keep the JVM alive
  }
}
