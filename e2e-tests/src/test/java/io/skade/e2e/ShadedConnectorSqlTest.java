package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar alone, with Flink's jars and none of skade's modules on the classpath, runs SQL
 * jobs that write and read: a child JVM as Flink's lib/ would set it up, running a program through
 * Java's source launcher, so no class skade compiled is on its classpath.
 */
class ShadedConnectorSqlTest {
  private static final long TIMEOUT_SECONDS = 180;

  /** The child: one JVM owns both warehouses' RocksDB catalogs (the embedded model). */
  private static final String PROGRAM =
      String.join(
          "\n",
          "import java.util.ArrayList;",
          "import java.util.List;",
          "import org.apache.flink.table.api.EnvironmentSettings;",
          "import org.apache.flink.table.api.TableEnvironment;",
          "import org.apache.flink.types.Row;",
          "import org.apache.flink.util.CloseableIterator;",
          "",
          "public class SqlJob {",
          "  public static void main(String[] args) throws Exception {",
          "    TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inBatchMode());",
          "",
          "    env.executeSql(\"CREATE TABLE t (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED)\"",
          "        + \" WITH ('connector' = 'skade', 'warehouse' = '\" + args[0] + \"')\");",
          "    env.executeSql(\"INSERT INTO t VALUES (1, 'a'), (2, 'b')\").await();",
          "    env.executeSql(\"INSERT INTO t VALUES (2, 'bb'), (3, 'c')\").await();",
          "    print(env, \"t\", \"SELECT * FROM t\");",
          "",
          "    env.executeSql(\"CREATE CATALOG c WITH ('type' = 'skade', 'warehouse' = '\" + args[1] + \"')\");",
          "    env.executeSql(\"CREATE TABLE c.`default`.u (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED)\");",
          "    env.executeSql(\"INSERT INTO c.`default`.u VALUES (10, 'x'), (20, 'y')\").await();",
          "    env.executeSql(\"INSERT INTO c.`default`.u VALUES (20, 'yy'), (30, 'z')\").await();",
          "    print(env, \"u\", \"SELECT * FROM c.`default`.u\");",
          "",
          "    System.out.println(\"FROM skade \" + origin(\"io.skade.table.SkadeDynamicTableFactory\"));",
          "    System.out.println(\"FROM rocksdb \" + origin(\"org.rocksdb.RocksDB\"));",
          "    System.out.flush();",
          "    System.exit(0);",
          "  }",
          "",
          "  static void print(TableEnvironment env, String label, String query) throws Exception {",
          "    List<String> rows = new ArrayList<>();",
          "    try (CloseableIterator<Row> it = env.executeSql(query).collect()) {",
          "      it.forEachRemaining(r -> rows.add(r.getKind().shortString() + \" \" + r.getField(0)",
          "          + \",\" + r.getField(1)));",
          "    }",
          "    rows.sort(null);",
          "    for (String row : rows) {",
          "      System.out.println(\"ROW \" + label + \" \" + row);",
          "    }",
          "  }",
          "",
          "  static String origin(String className) throws Exception {",
          "    return Class.forName(className).getProtectionDomain().getCodeSource().getLocation()",
          "        .toString();",
          "  }",
          "}",
          "");

  @TempDir Path dir;

  @Test
  void theShadedJarAloneWritesAndReadsThroughSql() throws Exception {
    Path connector = ShadedConnectorJarTest.sqlConnectorJar();
    List<String> flinkLib = flinkLib();

    Path program = Files.writeString(dir.resolve("SqlJob.java"), PROGRAM);
    List<String> classpath = new ArrayList<>();
    classpath.add(connector.toString());
    classpath.addAll(flinkLib);

    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/java.util=ALL-UNNAMED",
                "--add-opens=java.base/java.lang=ALL-UNNAMED",
                "-Xmx1g",
                "-Djava.io.tmpdir=" + Files.createDirectories(dir.resolve("tmp")),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                String.join(File.pathSeparator, classpath),
                program.toString(),
                dir.resolve("warehouse-t").toString(),
                dir.resolve("warehouse-c").toString()));

    Path log = dir.resolve("child.log");
    Process child =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    boolean exited = child.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS);
    if (!exited) {
      child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    String output = Files.readString(log, StandardCharsets.UTF_8);
    String context = "child JVM output:\n" + output;

    assertThat(exited).as("child exited within %d s; %s", TIMEOUT_SECONDS, context).isTrue();
    assertThat(child.exitValue()).as(context).isZero();
    assertThat(rows(output, "t")).as(context).containsExactly("+I 1,a", "+I 2,bb", "+I 3,c");
    assertThat(rows(output, "u")).as(context).containsExactly("+I 10,x", "+I 20,yy", "+I 30,z");
    // skade from the shaded jar, RocksDB from Flink's frocksdbjni.
    assertThat(output)
        .as(context)
        .containsPattern("FROM skade \\S*/skade-sql-connector-[^/]*\\.jar")
        .containsPattern("FROM rocksdb \\S*/frocksdbjni-[^/]*\\.jar");
  }

  /** Flink's lib/ as built by the dependency plugin, checked to hold nothing of skade's own. */
  static List<String> flinkLib() throws Exception {
    String property = System.getProperty("skade.flinkLibClasspath");
    assertThat(property)
        .as("system property skade.flinkLibClasspath (set by surefire)")
        .isNotNull();
    String content = Files.readString(Path.of(property), StandardCharsets.UTF_8).trim();
    List<String> entries =
        Arrays.stream(content.split(File.pathSeparator))
            .filter(e -> !e.isBlank())
            .collect(Collectors.toList());
    List<String> names =
        entries.stream().map(e -> Path.of(e).getFileName().toString()).collect(Collectors.toList());

    assertThat(names)
        .as(content)
        .anyMatch(n -> n.startsWith("flink-table-planner-loader-"))
        .anyMatch(n -> n.startsWith("flink-table-runtime-"))
        .anyMatch(n -> n.startsWith("flink-runtime-"))
        .anyMatch(n -> n.startsWith("frocksdbjni-"));
    assertThat(entries)
        .as(content)
        .allSatisfy(
            e -> {
              assertThat(Path.of(e)).isRegularFile();
              assertThat(e).doesNotContain("/target/classes").doesNotContain("io/skade");
            });
    // What the connector needs beyond Flink must come from the shaded jar.
    assertThat(names)
        .as(content)
        .noneMatch(
            n ->
                n.startsWith("skade-")
                    || n.startsWith("iceberg-")
                    || n.startsWith("hadoop-")
                    || n.startsWith("parquet-")
                    || n.startsWith("arrow-")
                    || n.startsWith("avro-")
                    || n.startsWith("orc-")
                    || n.startsWith("rocksdbjni-")
                    || n.startsWith("caffeine-")
                    || n.startsWith("jackson-")
                    || n.startsWith("flink-connector-base-"));
    return entries;
  }

  private static List<String> rows(String output, String label) {
    String prefix = "ROW " + label + " ";
    return output
        .lines()
        .filter(l -> l.startsWith(prefix))
        .map(l -> l.substring(prefix.length()))
        .collect(Collectors.toList());
  }
}
