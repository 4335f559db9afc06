package io.skade.benchmarks;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeLocalFileSystem;
import io.skade.server.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.rest.RESTCatalog;

/** How the benchmarks reach a skade server in a child JVM: its properties, its REST clients. */
final class ServerClients {
  private ServerClients() {}

  /** The catalog properties of a client of {@code server}: its {@code uri} and token. */
  static Map<String, String> properties(ServerProcess server) {
    return Map.of(
        CatalogConnection.URI, server.uri(), CatalogConnection.TOKEN, ServerProcess.TOKEN);
  }

  /**
   * The server's shaded jar ({@code skade.bench.serverJar}, which the benchmarks module's {@code
   * exec:exec} sets), with the AWS SDK beside it.
   */
  static Path serverJar() {
    String jar = System.getProperty("skade.bench.serverJar");
    if (jar == null || !Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(
          "no skade server jar (-Dskade.bench.serverJar="
              + jar
              + "): run this benchmark through the benchmarks module's exec:exec, whose package"
              + " phase builds it");
    }
    return Path.of(jar);
  }

  /** {@code properties} as the server's {@code -P key=value} flags. */
  static List<String> propertyFlags(Map<String, String> properties) {
    List<String> flags = new ArrayList<>();
    properties.forEach((key, value) -> flags.addAll(List.of("-P", key + "=" + value)));
    return flags;
  }

  /**
   * An Iceberg {@link RESTCatalog} of {@code server} for a committer. Its data and manifest files
   * go through {@link SkadeLocalFileSystem}, as an embedded catalog's do (Hadoop's own local file
   * system starts a {@code chmod} process per file), so that figures beside the embedded catalog's
   * compare the commit paths, not two local file systems. Its commits are counted by {@link
   * CommitAttemptsReporter} (in place of Iceberg's default reporter, which only logs), so that
   * contended cells can tell how many attempts a commit took.
   */
  static RESTCatalog committer(String name, ServerProcess server) {
    return committer(name, properties(server));
  }

  /**
   * {@link #committer(String, ServerProcess)} of the server the client {@code properties} name
   * ({@code uri}, token, and for a warehouse on object storage its file IO).
   */
  static RESTCatalog committer(String name, Map<String, String> clientProperties) {
    Configuration conf = new Configuration();
    conf.setClass("fs.file.impl", SkadeLocalFileSystem.class, FileSystem.class);
    conf.setBoolean("fs.file.impl.disable.cache", true);
    RESTCatalog catalog = new RESTCatalog();
    catalog.setConf(conf);
    Map<String, String> properties = new HashMap<>(clientProperties);
    properties.put(CatalogProperties.METRICS_REPORTER_IMPL, CommitAttemptsReporter.class.getName());
    catalog.initialize(name, properties);
    return catalog;
  }
}
