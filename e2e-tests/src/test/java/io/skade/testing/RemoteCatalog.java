package io.skade.testing;

import io.skade.server.ServerProcess;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.rest.RESTCatalog;

/**
 * A skade server in a process of its own under a test's directory, and an Iceberg REST client of it
 * that created the namespace {@code db}: what a remote test starts from. Closing it closes the
 * client, then the server.
 */
public final class RemoteCatalog implements AutoCloseable {
  private final ServerProcess server;
  private final RESTCatalog rest = new RESTCatalog();
  private final Map<String, String> properties;

  private RemoteCatalog(ServerProcess server, Map<String, String> properties) {
    this.server = server;
    this.properties = Map.copyOf(properties);
  }

  /**
   * Starts a server under {@code root} and opens a client of it; {@code more} are more client
   * properties, as key, value pairs (e.g. {@code "server.retry-timeout", "1 min"}).
   */
  public static RemoteCatalog start(Path root, String... more) throws Exception {
    ServerProcess server = new ServerProcess(root);
    try {
      Map<String, String> properties = new HashMap<>();
      properties.put("uri", server.uri());
      properties.put("token", ServerProcess.TOKEN);
      for (int i = 0; i < more.length; i += 2) {
        properties.put(more[i], more[i + 1]);
      }
      RemoteCatalog remote = new RemoteCatalog(server, properties);
      remote.rest.initialize("rest", new HashMap<>(properties));
      remote.rest.createNamespace(Namespace.of("db"));
      return remote;
    } catch (Exception | Error e) {
      server.close();
      throw e;
    }
  }

  public ServerProcess server() {
    return server;
  }

  /** The client, on namespace {@code db}. */
  public RESTCatalog rest() {
    return rest;
  }

  /**
   * The client's catalog properties ({@code uri}, {@code token} and the ones given to {@link
   * #start}): what a skade source, sink or lookup of this catalog is opened with.
   */
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public void close() throws Exception {
    try {
      rest.close();
    } finally {
      server.close();
    }
  }
}
