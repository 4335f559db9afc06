package io.skade.benchmarks;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The forked JVMs of {@link LookupJoinBenchmark}, as its parent starts them: one per system to
 * write its tables, one per variant to run it, each with the classpath of its stack, its own
 * temporary directories and log ({@code <work>/<role>.log}), and its result handed back as a
 * properties file ({@code status} ok or failed, with a {@code message}). Every JVM of a run gets
 * the same working directory, rows, probes and files, and as long to answer.
 */
record LookupJoinForks(Path work, long rows, long probes, int files, long timeoutSeconds) {
  /**
   * Jars of skade's stack, kept off the JVMs of Paimon and of the baseline. Hadoop's client jars
   * stay: Paimon's catalog needs {@code org.apache.hadoop.conf.Configuration} even on a local
   * warehouse (a Flink deployment adds a Hadoop jar to lib/ for it).
   */
  private static final List<String> SKADE_STACK =
      List.of(
          "skade-", "iceberg-", "parquet-", "arrow-", "orc-", "avro-", "rocksdbjni-", "zstd-jni-");

  /**
   * Writes a system's tables in a forked JVM (whose further JVM {@code options} say where), or
   * reuses those an earlier run with {@code skade.bench.keep=true} left in the working directory
   * for the same rows, files and storage. {@code stale} are the local directories of an earlier
   * run's tables (a warehouse, a catalog; on S3, the S3 server's directory of the tables' files),
   * deleted before they are written.
   */
  Properties prepare(
      String role, List<Path> stale, LookupJoinVariant.Stack stack, List<String> options)
      throws IOException, InterruptedException {
    Path earlier = work.resolve(role).resolve("result.properties");
    if (Files.exists(earlier)) {
      Properties p = new Properties();
      try (InputStream in = Files.newInputStream(earlier)) {
        p.load(in);
      }
      if (ok(p)
          && Long.toString(rows).equals(p.getProperty("requestedRows"))
          && Integer.toString(files).equals(p.getProperty("requestedFiles"))
          && storage().equals(p.getProperty("requestedStorage"))) {
        p.setProperty("reused", "true");
        return p;
      }
    }
    stale.forEach(LookupJoinForks::delete);
    return fork(role, stack, "", options);
  }

  /** {@code local} or {@code s3}: where the tables are ({@code skade.bench.storage}). */
  static String storage() {
    return ObjectStorage.s3() ? "s3" : "local";
  }

  /** {@link #fork(String, LookupJoinVariant.Stack, String, List)} with no more options. */
  Properties fork(String role, LookupJoinVariant.Stack stack)
      throws IOException, InterruptedException {
    return fork(role, stack, "", List.of());
  }

  /**
   * Runs {@code role} in a forked JVM given the further JVM {@code options}, and returns the
   * properties it wrote ({@code status} ok or failed, with a {@code message}). Its directory and
   * log are named by the role and {@code suffix}: {@code <work>/<role><suffix>.log}.
   */
  Properties fork(String role, LookupJoinVariant.Stack stack, String suffix, List<String> options)
      throws IOException, InterruptedException {
    String name = role + suffix;
    delete(work.resolve(name));
    Path dir = Files.createDirectories(work.resolve(name));
    Path jvmTmp = Files.createDirectories(dir.resolve("jvm-tmp"));
    Path flinkTmp = Files.createDirectories(dir.resolve("flink-tmp"));
    Path resultFile = dir.resolve("result.properties");
    Path log = work.resolve(name + ".log");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    childJvmOptions().forEach(option -> command.add(Harness.forChild(option, name)));
    command.addAll(options);
    command.add("-Djava.io.tmpdir=" + jvmTmp);
    command.add("-Dskade.bench.rows=" + rows);
    command.add("-Dskade.bench.probes=" + probes);
    command.add("-Dskade.bench.files=" + files);
    command.add("-Dskade.bench.flinkTmp=" + flinkTmp);
    command.add("-Dskade.bench.skadeWarehouse=" + work.resolve("skade-warehouse"));
    command.add("-Dskade.bench.paimonWarehouse=" + work.resolve("paimon-warehouse"));
    command.add("-Dskade.bench.sampleMillis=" + Long.getLong("skade.bench.sampleMillis", 100));
    command.add("-Dskade.bench.warmup=" + System.getProperty("skade.bench.warmup", "true"));
    command.add("-Dskade.bench.runs=" + LookupJoinBenchmark.runs());
    command.add("-Dskade.bench.storage=" + storage());
    command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    command.add("-Dorg.slf4j.simpleLogger.log.org.apache.flink=error");
    // Paimon logs which lookup table it created (and why not the partial one) at INFO.
    command.add(
        "-Dorg.slf4j.simpleLogger.log.org.apache.paimon.flink.lookup"
            + ".FileStoreLookupFunction=info");
    command.add("-cp");
    command.add(classpath(stack));
    command.add(LookupJoinBenchmark.class.getName());
    command.add(role);
    command.add(resultFile.toString());
    Process process =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    Properties result = new Properties();
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
      result.setProperty("status", "failed");
      result.setProperty("message", "no result within " + timeoutSeconds + " s");
      return withLog(result, log);
    }
    if (Files.exists(resultFile)) {
      try (InputStream in = Files.newInputStream(resultFile)) {
        result.load(in);
      }
    }
    if (result.getProperty("status") == null) {
      result.setProperty("status", "failed");
      result.setProperty(
          "message",
          "the JVM exited with " + process.exitValue() + " and no result: " + lastError(log));
    }
    return withLog(result, log);
  }

  /** Adds what the child logged that the table needs: Paimon's choice of lookup table. */
  private static Properties withLog(Properties result, Path log) throws IOException {
    String text = Files.exists(log) ? Files.readString(log) : "";
    Matcher created = Pattern.compile("Created (\\w+)").matcher(text);
    if (created.find()) {
      result.setProperty("lookupTable", created.group(1));
    }
    Matcher refused =
        Pattern.compile(
                "Cannot create PrimaryKeyPartialLookupTable with LocalQueryExecutor because (.*?)\\."
                    + " Will create")
            .matcher(text);
    if (refused.find()) {
      result.setProperty("partialRefused", refused.group(1));
    }
    return result;
  }

  private static String lastError(Path log) throws IOException {
    if (!Files.exists(log)) {
      return "(no log)";
    }
    List<String> lines = Files.readAllLines(log);
    for (int i = lines.size() - 1; i >= 0; i--) {
      if (lines.get(i).contains("Exception") || lines.get(i).contains("Error")) {
        return lines.get(i).trim() + " (see " + log + ")";
      }
    }
    return "see " + log;
  }

  /** This JVM's options for the forked ones (heap, --add-opens, ...), without agents. */
  static List<String> childJvmOptions() {
    return ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(
            a ->
                !a.startsWith("-agentlib")
                    && !a.startsWith("-javaagent")
                    && !a.startsWith("-Djava.io.tmpdir")
                    && !a.startsWith("-Dskade.bench.paimon"))
        .toList();
  }

  /** The classpath of a forked JVM of {@code stack}. */
  private static String classpath(LookupJoinVariant.Stack stack) throws IOException {
    String own;
    try {
      own =
          Path.of(
                  LookupJoinBenchmark.class
                      .getProtectionDomain()
                      .getCodeSource()
                      .getLocation()
                      .toURI())
              .toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
    List<String> entries =
        new ArrayList<>(
            Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator)));
    if (stack != LookupJoinVariant.Stack.SKADE) {
      entries.removeIf(
          entry -> {
            Path path = Path.of(entry);
            if (entry.equals(own)) {
              return false;
            }
            String name = path.getFileName().toString();
            // The proxy a JVM on object storage reads through (S3FaultProxy, no dependencies).
            if (name.startsWith("skade-catalog-store-") && name.endsWith("-tests.jar")) {
              return false;
            }
            // Other reactor modules' classes directories are skade's.
            if (Files.isDirectory(path)) {
              return true;
            }
            return SKADE_STACK.stream().anyMatch(name::startsWith);
          });
    }
    if (stack == LookupJoinVariant.Stack.PAIMON) {
      String file = System.getProperty("skade.bench.paimon.classpath");
      if (file == null || !Files.exists(Path.of(file))) {
        throw new IllegalStateException(
            "no Paimon classpath file (-Dskade.bench.paimon.classpath"
                + "="
                + file
                + "); run through the benchmarks module's exec:exec, which writes"
                + " target/paimon.classpath");
      }
      String paimon = Files.readString(Path.of(file)).trim();
      entries.addAll(0, Arrays.asList(paimon.split(File.pathSeparator)));
    }
    return String.join(File.pathSeparator, entries);
  }

  /** Whether a forked JVM's result says it succeeded. */
  static boolean ok(Properties p) {
    return p != null && "ok".equals(p.getProperty("status"));
  }

  /** Deletes {@code dir} if it is there; what cannot be deleted is reported, not thrown. */
  static void delete(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try {
      Harness.deleteTree(dir);
    } catch (UncheckedIOException e) {
      System.err.println("could not delete all of " + dir + ": " + e.getMessage());
    }
  }
}
