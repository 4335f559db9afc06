package io.skade.server;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A server group as child JVMs ({@link ServerProcess#member}) on one ZooKeeper, sharing a
 * warehouse, each member's catalog copy under {@code root}/m0, m1, …: what tests and benchmarks
 * reach with every member's address, and whose leader they kill.
 */
public final class ServerGroupProcess implements AutoCloseable {
  private static final Duration ELECTION = Duration.ofMinutes(2);

  private final List<ServerProcess> members = new ArrayList<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

  /**
   * Starts {@code size} members of group {@code group} on {@code zookeeper}, tables in {@code
   * root}/warehouse.
   *
   * @param flags further flags of every member, e.g. {@code "--zookeeper-session-timeout", "PT3S"}
   */
  public ServerGroupProcess(Path root, String group, String zookeeper, int size, String... flags)
      throws Exception {
    Path warehouse = Files.createDirectories(root.resolve("warehouse"));
    try {
      for (int i = 0; i < size; i++) {
        members.add(
            ServerProcess.member(
                root.resolve("m" + i), warehouse.toString(), group, zookeeper, "m" + i, flags));
      }
    } catch (Exception | Error e) {
      close();
      throw e;
    }
  }

  /** Every member's address, comma-separated: the {@code uri} of a client of the group. */
  public String uri() {
    return members.stream().map(ServerProcess::uri).collect(Collectors.joining(","));
  }

  public List<ServerProcess> members() {
    return List.copyOf(members);
  }

  /** The member that leads, waiting up to two minutes for one. */
  public ServerProcess leader() throws InterruptedException {
    long deadline = System.nanoTime() + ELECTION.toNanos();
    while (System.nanoTime() < deadline) {
      for (ServerProcess member : members) {
        if (leads(member)) {
          return member;
        }
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("no member of the group leads after " + ELECTION);
  }

  /** Whether {@code member} answers {@code /healthz?role=leader} with 200. */
  private boolean leads(ServerProcess member) throws InterruptedException {
    try {
      HttpResponse<Void> answer =
          http.send(
              HttpRequest.newBuilder(URI.create(member.uri() + "/healthz?role=leader"))
                  .timeout(Duration.ofSeconds(2))
                  .header("Authorization", "Bearer " + ServerProcess.TOKEN)
                  .build(),
              HttpResponse.BodyHandlers.discarding());
      return answer.statusCode() == 200;
    } catch (IOException e) {
      return false; // down, stopped or starting
    }
  }

  /**
   * Kills the leader with SIGKILL, waits until another member leads, and starts the killed one
   * again (it rejoins as a standby); returns the new leader.
   */
  public ServerProcess killLeaderAndRestart() throws Exception {
    ServerProcess leader = leader();
    leader.kill();
    ServerProcess next = leader(); // never the killed one: it answers nothing
    leader.restart();
    return next;
  }

  @Override
  public void close() throws Exception {
    for (ServerProcess member : members) {
      member.close();
    }
  }
}
