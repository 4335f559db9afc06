package io.skade.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code java -jar skade-server-<version>.jar --warehouse DIR ...}: runs a {@link SkadeServer}
 * until the process is stopped (SIGTERM or Ctrl-C shut it down gracefully). Prints {@code skade
 * server listening on <uri>} once it serves.
 */
@Command(
    name = "skade-server",
    mixinStandardHelpOptions = true,
    version = "skade server 0.1",
    description =
        "Owns one skade catalog and serves it over the Iceberg REST protocol, with"
            + " its commit feed and consumer cursors, to every other process.")
public final class ServerMain implements Callable<Integer> {
  @Option(
      names = "--warehouse",
      required = true,
      paramLabel = "DIR",
      description =
          "Root of table data: a local directory, or a URI every process reaches"
              + " (then give --catalog-path).")
  String warehouse;

  @Option(
      names = "--catalog-path",
      paramLabel = "DIR",
      description = "The catalog's RocksDB directory (default: <warehouse>/_catalog).")
  Path catalogPath;

  @Option(
      names = "--bind",
      defaultValue = "127.0.0.1",
      paramLabel = "ADDRESS",
      description =
          "Address to listen on (default: ${DEFAULT-VALUE}; 0.0.0.0 for every" + " interface).")
  String bind;

  @Option(
      names = "--port",
      defaultValue = "8181",
      description = "Port to listen on (default: ${DEFAULT-VALUE}; 0 for any free one).")
  int port;

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      description =
          "Bearer tokens clients must send, one per line, each optionally with role=read|write|admin,"
              + " namespaces=NS,... and name=NAME (a bare token is an admin).")
  Path tokenFile;

  @Option(
      names = "--insecure-no-auth",
      description = "Serve anyone without a token (only on a trusted network).")
  boolean insecureNoAuth;

  @Option(
      names = "--tls-keystore",
      paramLabel = "FILE",
      description = "Serve HTTPS with this PKCS12 or JKS keystore.")
  Path tlsKeystore;

  @Option(
      names = "--tls-keystore-password",
      paramLabel = "PASSWORD",
      defaultValue = "${env:SKADE_TLS_KEYSTORE_PASSWORD}",
      description = "The keystore's password (default: $SKADE_TLS_KEYSTORE_PASSWORD).")
  String tlsKeystorePassword;

  @Option(
      names = "--group",
      paramLabel = "NAME",
      description =
          "Run as a member of server group NAME (with --zookeeper and --member-id): one member"
              + " leads and serves the catalog, the others keep copies and take over.")
  String group;

  @Option(
      names = "--zookeeper",
      paramLabel = "HOST:PORT[,...]",
      description = "ZooKeeper's connect string, where the group elects its leader.")
  String zookeeper;

  @Option(
      names = "--member-id",
      paramLabel = "ID",
      description = "This member's id, unique in its group.")
  String memberId;

  @Option(
      names = "--member-token-file",
      paramLabel = "FILE",
      description =
          "A file holding the bearer token this member sends to the others: an admin token of"
              + " their --token-file (not needed with --insecure-no-auth).")
  Path memberTokenFile;

  @Option(
      names = "--replication-acks",
      defaultValue = "1",
      paramLabel = "N",
      description =
          "Standbys that must hold a commit durably before it is acknowledged (default:"
              + " ${DEFAULT-VALUE}; fewer while fewer are in sync).")
  int replicationAcks;

  @Option(
      names = "--replication-timeout",
      defaultValue = "PT5S",
      paramLabel = "DURATION",
      description =
          "How long the leader waits for a lagging standby before it leaves the in-sync set"
              + " (ISO-8601, default: ${DEFAULT-VALUE}).")
  Duration replicationTimeout;

  @Option(
      names = "--zookeeper-session-timeout",
      defaultValue = "PT6S",
      paramLabel = "DURATION",
      description =
          "ZooKeeper session timeout: how long a silent leader keeps the lead (ISO-8601,"
              + " default: ${DEFAULT-VALUE}).")
  Duration sessionTimeout;

  @Option(
      names = {"-P", "--catalog-property"},
      paramLabel = "KEY=VALUE",
      description = "A further catalog property, e.g. consumer.expiry-timeout=1h; repeatable.")
  Map<String, String> catalogProperties = new LinkedHashMap<>();

  @Override
  public Integer call() throws Exception {
    SkadeServer.Settings settings =
        new SkadeServer.Settings(
            warehouse,
            catalogPath,
            bind,
            port,
            tokenFile,
            insecureNoAuth,
            tlsKeystore,
            tlsKeystorePassword,
            catalogProperties);
    if (group != null) {
      settings = settings.inGroup(groupSettings());
    } else if (zookeeper != null || memberId != null) {
      throw new IllegalArgumentException(
          "--zookeeper and --member-id belong to a group member; add --group NAME");
    }
    SkadeServer server = SkadeServer.start(settings);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.close();
                  stopped.countDown();
                },
                "skade-server-shutdown"));
    System.out.println("skade server listening on " + server.uri());
    System.out.flush();
    stopped.await();
    return 0;
  }

  private GroupSettings groupSettings() throws IOException {
    String token = null;
    if (memberTokenFile != null) {
      token = Files.readString(memberTokenFile, StandardCharsets.UTF_8).strip();
    } else if (!insecureNoAuth) {
      throw new IllegalArgumentException(
          "--group "
              + group
              + " with --token-file needs --member-token-file FILE: the admin token this member"
              + " sends to the others");
    }
    return new GroupSettings(
        group, zookeeper, memberId, sessionTimeout, replicationAcks, replicationTimeout, token);
  }

  public static void main(String[] args) {
    CommandLine command = new CommandLine(new ServerMain());
    command.setExecutionExceptionHandler(
        (e, line, parsed) -> {
          line.getErr()
              .println(
                  "skade server: "
                      + (e instanceof IllegalArgumentException
                              || e instanceof io.skade.catalog.CatalogLockedException
                          ? e.getMessage()
                          : e));
          return 2;
        });
    System.exit(command.execute(args));
  }
}
