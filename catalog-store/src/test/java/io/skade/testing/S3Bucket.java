package io.skade.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.SkadeCatalog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One bucket on a real S3 server for a test class: registered as {@code @RegisterExtension static
 * final S3Bucket s3 = new S3Bucket("name")}, it starts an {@link S3Server} in a temporary directory
 * before the class's tests, creates the bucket, and stops the server (and the proxy, if any) and
 * deletes the directory after them. {@link #withProxy()} puts an {@link S3FaultProxy} in front, and
 * the file-IO properties then point at the proxy.
 */
public final class S3Bucket implements BeforeAllCallback, AfterAllCallback {
  private final String name;
  private final boolean proxied;
  private Path dir;
  private S3Server server;
  private S3FaultProxy proxy;
  private String run;

  /** The bucket {@code name} (3 characters or more), reached directly. */
  public S3Bucket(String name) {
    this(name, false);
  }

  private S3Bucket(String name, boolean proxied) {
    this.name = name;
    this.proxied = proxied;
  }

  /** The same bucket, reached through an {@link S3FaultProxy}. */
  public S3Bucket withProxy() {
    return new S3Bucket(name, true);
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    dir = Files.createTempDirectory("skade-s3-" + name + "-");
    server = S3Server.start(dir.resolve("s3"));
    server.bucket(name);
    if (proxied) {
      proxy = new S3FaultProxy(server.endpoint());
    }
    run = "s3://" + name + "/" + UUID.randomUUID();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    try (S3Server closingServer = server) {
      if (proxy != null) {
        proxy.close();
      }
    } finally {
      delete(dir);
    }
  }

  /** The bucket's name. */
  public String name() {
    return name;
  }

  /** The bucket's directory on disk: each object is a file under it. */
  public Path directory() {
    return dir.resolve("s3").resolve(name);
  }

  /** The server. */
  public S3Server server() {
    return server;
  }

  /** The proxy in front of the server; only with {@link #withProxy()}. */
  public S3FaultProxy proxy() {
    if (proxy == null) {
      throw new IllegalStateException(
          "S3Bucket '" + name + "' has no proxy; register it as new S3Bucket(name).withProxy()");
    }
    return proxy;
  }

  /** Where the catalog's file IO reaches the bucket: the proxy if there is one, else the server. */
  public URI endpoint() {
    return proxy != null ? proxy.endpoint() : server.endpoint();
  }

  /** Iceberg's S3FileIO properties for {@link #endpoint()} (a new mutable map). */
  public Map<String, String> fileIoProperties() {
    return S3Server.fileIoProperties(endpoint());
  }

  /** {@code s3://<bucket>/<unique prefix of the class>}: runs and classes never meet. */
  public String run() {
    return run;
  }

  /** A fresh warehouse {@code s3://<bucket>/<class prefix>/<unique>/<name>}. */
  public String warehouse(String name) {
    return run + "/" + UUID.randomUUID() + "/" + name;
  }

  /**
   * The properties of an embedded catalog with its warehouse at {@code warehouse} and its store at
   * {@code catalogPath}: {@link #fileIoProperties()}, {@code warehouse} and {@code catalog.path}.
   */
  public Map<String, String> catalogProperties(String warehouse, Path catalogPath) {
    Map<String, String> props = new HashMap<>(fileIoProperties());
    props.put(CatalogProperties.WAREHOUSE_LOCATION, warehouse);
    props.put(SkadeCatalog.CATALOG_PATH, catalogPath.toString());
    return props;
  }

  /**
   * Iceberg's conformance suite moves a table's metadata file away on the local disk; on S3 the
   * object is deleted instead: a table {@code id} created in {@code catalog} (its warehouse in this
   * bucket) then fails to load with {@link NotFoundException}, naming the file.
   */
  public <C extends Catalog & SupportsNamespaces> void assertLoadWithoutMetadataFileFailsNamingIt(
      C catalog, TableIdentifier id, Schema schema) {
    catalog.createNamespace(id.namespace());
    catalog.buildTable(id, schema).create();
    Table table = catalog.loadTable(id);
    String metadata = ((HasTableOperations) table).operations().current().metadataFileLocation();
    assertThat(metadata).startsWith("s3://" + name + "/");
    table.io().deleteFile(metadata);

    assertThatThrownBy(() -> catalog.loadTable(id))
        .isInstanceOf(NotFoundException.class)
        .hasMessageContaining(metadata);
  }

  private static void delete(Path dir) throws IOException {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths
          .sorted(Comparator.reverseOrder())
          .forEach(
              path -> {
                try {
                  Files.deleteIfExists(path);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              });
    }
  }
}
