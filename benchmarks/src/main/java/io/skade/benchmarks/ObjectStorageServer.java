package io.skade.benchmarks;

import io.skade.catalog.CatalogConnection;
import io.skade.server.ServerMain;
import io.skade.server.ServerProcess;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A skade server in a child JVM whose warehouse is on S3 ({@code s3://skade-bench/<name>}, its
 * RocksDB catalog in a local directory), as {@link ServerProcess} starts one on a local warehouse:
 * {@link ServerMain} on this JVM's class path, the file IO given as catalog properties ({@code
 * -P}), the AWS SDK's checksum options that s3proxy needs ({@link
 * ObjectStorage#CHILD_JVM_OPTIONS}), the same token. Its output goes to {@code <root>/server.log}.
 */
final class ObjectStorageServer implements AutoCloseable {
  private static final Pattern LISTENING =
      Pattern.compile("skade server listening on (http://[^:]+:(\\d+))");

  private final Process process;
  private final String uri;

  /**
   * Starts a server on the warehouse {@code s3://skade-bench/<name>} reached at {@code endpoint},
   * its catalog in {@code root/catalog}; {@code root} holds its token file and log.
   */
  ObjectStorageServer(Path root, URI endpoint, String name) throws Exception {
    this(root, endpoint, name, root.resolve("catalog"));
  }

  /** {@link #ObjectStorageServer(Path, URI, String)} owning the catalog in {@code catalogDir}. */
  ObjectStorageServer(Path root, URI endpoint, String name, Path catalogDir) throws Exception {
    Files.createDirectories(root);
    Path tokens = root.resolve("tokens");
    Files.writeString(tokens, ServerProcess.TOKEN + "\n");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(ObjectStorage.CHILD_JVM_OPTIONS);
    command.addAll(
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            ServerMain.class.getName(),
            "--warehouse",
            ObjectStorage.warehouse(name),
            "--catalog-path",
            catalogDir.toString(),
            "--port",
            "0",
            "--token-file",
            tokens.toString()));
    for (Map.Entry<String, String> p : ObjectStorage.fileIoProperties(endpoint).entrySet()) {
      command.add("-P");
      command.add(p.getKey() + "=" + p.getValue());
    }
    Path log = root.resolve("server.log");
    process = new ProcessBuilder(command).redirectErrorStream(true).start();
    CompletableFuture<String> listening = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader lines =
                      new BufferedReader(
                          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                  var out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
                for (String line; (line = lines.readLine()) != null; ) {
                  out.write(line);
                  out.newLine();
                  out.flush();
                  Matcher matcher = LISTENING.matcher(line);
                  if (matcher.find()) {
                    listening.complete(matcher.group(1));
                  }
                }
              } catch (Exception e) {
                listening.completeExceptionally(e);
              }
              listening.completeExceptionally(
                  new IllegalStateException("the server process ended; its output is in " + log));
            },
            "s3-server-output");
    reader.setDaemon(true);
    reader.start();
    uri = listening.get(60, TimeUnit.SECONDS);
  }

  String uri() {
    return uri;
  }

  /** The catalog properties of a client: {@code uri} and token. */
  Map<String, String> clientProperties() {
    return Map.of(CatalogConnection.URI, uri, CatalogConnection.TOKEN, ServerProcess.TOKEN);
  }

  @Override
  public void close() throws Exception {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }
}
