package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.remote.SkadeServerClient;
import io.skade.lineage.JobRunEvent;
import io.skade.lineage.JobRunJson;
import io.skade.lineage.LineageDataset;
import io.skade.testing.ParquetFiles;
import io.skade.testing.S3Server;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runnable jar as a user runs it ({@code java -jar server/target/skade-server-<version>.jar}):
 * it prints the line it listens on, serves with tokens, refuses bad flags with a message and exit
 * code 2, and on SIGTERM shuts down gracefully, releasing the catalog for the next start.
 */
class ServerJarIT {
  private static final Pattern LISTENING = Pattern.compile("skade server listening on (\\S+)");
  @TempDir Path root;
  private final List<Process> started = new ArrayList<>();

  @AfterEach
  void kill() {
    started.forEach(Process::destroyForcibly);
  }

  private Process jar(String... args) throws Exception {
    return jar(List.of(), args);
  }

  private Process jar(List<String> jvmOptions, String... args) throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(jvmOptions);
    command.addAll(List.of("-jar", System.getProperty("skade.server.jar")));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    started.add(process);
    return process;
  }

  private static CompletableFuture<String> listening(Process process, StringBuilder output) {
    CompletableFuture<String> uri = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader lines =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = lines.readLine()) != null; ) {
                  synchronized (output) {
                    output.append(line).append('\n');
                  }
                  Matcher matcher = LISTENING.matcher(line);
                  if (matcher.find()) {
                    uri.complete(matcher.group(1));
                  }
                }
              } catch (Exception e) {
                uri.completeExceptionally(e);
              }
              uri.completeExceptionally(new IllegalStateException("the jar ended:\n" + output));
            });
    reader.setDaemon(true);
    reader.start();
    return uri;
  }

  /**
   * The actor and inputs of each lineage event of an append to {@code shop.orders}; every event
   * read goes into {@code all}, anew.
   */
  private static List<String> appends(Table lineage, List<String> all) throws Exception {
    List<String> appends = new ArrayList<>();
    all.clear();
    try (CloseableIterable<Record> events = IcebergGenerics.read(lineage).build()) {
      for (Record event : events) {
        all.add(event.toString());
        if (event.getField("output_table").toString().contains("shop.orders")
            && event.getField("operation").equals("APPEND")) {
          appends.add(event.getField("actor") + " " + event.getField("inputs"));
        }
      }
    }
    return appends;
  }

  private static int get(String uri, String token) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(uri + "/healthz"));
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return HttpClient.newHttpClient()
        .send(request.build(), HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  @Test
  @Timeout(120)
  void theJarServesWithTokensAndShutsDownGracefullyOnSigterm() throws Exception {
    Path tokens = Files.writeString(root.resolve("tokens"), "jar-token\n");
    String[] args = {
      "--warehouse",
      root.resolve("warehouse").toString(),
      "--port",
      "0",
      "--token-file",
      tokens.toString()
    };
    Process server = jar(args);
    StringBuilder output = new StringBuilder();
    String uri = listening(server, output).get(60, TimeUnit.SECONDS);
    assertThat(uri).startsWith("http://127.0.0.1:");
    assertThat(get(uri, "jar-token")).isEqualTo(200);
    assertThat(get(uri, null)).isEqualTo(401);

    server.destroy(); // SIGTERM
    assertThat(server.waitFor(30, TimeUnit.SECONDS)).as("exited on SIGTERM:\n%s", output).isTrue();
    // Closed gracefully: the catalog's lock is released, so a new server opens it.
    Process again = jar(args);
    String uriAgain = listening(again, new StringBuilder()).get(60, TimeUnit.SECONDS);
    assertThat(get(uriAgain, "jar-token")).isEqualTo(200);
  }

  /**
   * {@code java -jar} alone serves a warehouse on S3: the AWS SDK (iceberg-aws-bundle, copied next
   * to the jar by the build) is found through the jar's manifest, {@code io-impl} names Iceberg's
   * S3FileIO by its own name, and a client given only {@code uri} and {@code token} reads what the
   * server wrote.
   */
  @Test
  @Timeout(120)
  void theJarAloneServesAWarehouseOnS3WithTheAwsBundleBesideIt() throws Exception {
    Path jarFile = Path.of(System.getProperty("skade.server.jar"));
    assertThat(jarFile.resolveSibling("iceberg-aws-bundle-1.11.0.jar")).isRegularFile();
    try (S3Server s3 = S3Server.start(root.resolve("s3"))) {
      s3.bucket("jar-lake");
      Path tokens = Files.writeString(root.resolve("tokens"), "jar-token\n");
      List<String> args =
          new ArrayList<>(
              List.of(
                  "--warehouse",
                  "s3://jar-lake/warehouse",
                  "--catalog-path",
                  root.resolve("catalog").toString(),
                  "--port",
                  "0",
                  "--token-file",
                  tokens.toString()));
      s3.fileIoProperties().forEach((key, value) -> args.addAll(List.of("-P", key + "=" + value)));
      Process server =
          jar(
              List.of(
                  "-Daws.requestChecksumCalculation=when_required",
                  "-Daws.responseChecksumValidation=when_required"),
              args.toArray(String[]::new));
      StringBuilder output = new StringBuilder();
      String uri = listening(server, output).get(60, TimeUnit.SECONDS);
      try (RESTCatalog rest = new RESTCatalog()) {
        rest.initialize("jar", Map.of("uri", uri, "token", "jar-token"));
        rest.createNamespace(Namespace.of("shop"));
        Table orders =
            rest.createTable(
                TableIdentifier.of("shop", "orders"),
                new Schema(Types.NestedField.required(1, "id", Types.LongType.get())));
        assertThat(orders.location()).startsWith("s3://jar-lake/warehouse/");
        GenericRecord row = GenericRecord.create(orders.schema());
        row.setField("id", 42L);
        orders.newAppend().appendFile(ParquetFiles.write(orders, List.of(row))).commit();
        List<Record> read = new ArrayList<>();
        try (CloseableIterable<Record> rows =
            IcebergGenerics.read(rest.loadTable(TableIdentifier.of("shop", "orders"))).build()) {
          rows.forEach(read::add);
        }
        assertThat(read).as("the server said:%n%s", output).containsExactly(row);
      }
      assertThat(root.resolve("s3").resolve("jar-lake").resolve("warehouse")).isDirectory();
    }
  }

  @Test
  @Timeout(60)
  void badFlagsAreRefusedBeforeTheCatalogIsOpened() throws Exception {
    Path warehouse = root.resolve("never");
    Process neither = jar("--warehouse", warehouse.toString(), "--port", "0");
    String said = new String(neither.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(neither.waitFor()).isEqualTo(2);
    assertThat(said).contains("--token-file").contains("--insecure-no-auth");
    assertThat(warehouse).doesNotExist();

    Process missing = jar("--port", "0");
    assertThat(new String(missing.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
        .contains("--warehouse");
    assertThat(missing.waitFor()).isEqualTo(2);
  }

  /**
   * With {@code -P lineage.sink=table} the jar runs skade's commit lineage beside its catalog: a
   * commit made over REST by a Flink sink (its snapshot names the job's id) is recorded naming the
   * job and its inputs, which a job listener in another process reported to the server.
   */
  @Test
  @Timeout(120)
  void theJarRecordsTheLineageOfCommitsNamingTheJobsReportedToIt() throws Exception {
    Path tokens = Files.writeString(root.resolve("tokens"), "jar-token\n");
    Process server =
        jar(
            "--warehouse",
            root.resolve("warehouse").toString(),
            "--port",
            "0",
            "--token-file",
            tokens.toString(),
            "-P",
            "lineage.sink=table");
    StringBuilder output = new StringBuilder();
    String uri = listening(server, output).get(60, TimeUnit.SECONDS);
    new SkadeServerClient(URI.create(uri), "jar-token", Duration.ofSeconds(30))
        .reportJobRun(
            JobRunJson.write(
                new JobRunEvent(
                    "job-7",
                    "nightly-load",
                    JobRunEvent.State.START,
                    List.of(
                        LineageDataset.external("kafka", "kafka://broker:9092", "orders-topic")),
                    List.of(),
                    1L,
                    null)));
    try (RESTCatalog rest = new RESTCatalog()) {
      rest.initialize("jar", Map.of("uri", uri, "token", "jar-token"));
      rest.createNamespace(Namespace.of("shop"));
      Table orders =
          rest.createTable(
              TableIdentifier.of("shop", "orders"),
              new Schema(Types.NestedField.required(1, "id", Types.LongType.get())));
      GenericRecord row = GenericRecord.create(orders.schema());
      row.setField("id", 1L);
      orders
          .newAppend()
          .appendFile(ParquetFiles.write(orders, List.of(row)))
          .set("flink.job-id", "job-7")
          .commit();

      TableIdentifier lineage = TableIdentifier.of("skade_system", "lineage_events");
      List<String> all = new ArrayList<>();
      try {
        await()
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(200))
            .ignoreExceptions()
            .until(() -> !appends(rest.loadTable(lineage), all).isEmpty());
      } catch (ConditionTimeoutException e) {
        // the assertion says what was recorded, and what the server said
      }
      assertThat(appends(rest.loadTable(lineage), all))
          .as("the append's lineage among %s; the server said:%n%s", all, output)
          .singleElement()
          .asString()
          .startsWith("nightly-load (job-7)")
          .contains("orders-topic");
    }
  }
}
