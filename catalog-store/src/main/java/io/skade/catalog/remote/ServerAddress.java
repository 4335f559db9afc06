package io.skade.catalog.remote;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Where a client finds its skade server: the catalog property {@code uri}, one address or the
 * comma-separated addresses of a server group's members. With a group, the client sends every
 * request to the member it takes for the leader; when that member does not answer, or answers as a
 * standby ({@code 421}) or with no leader ({@code 503}), the client asks each member's {@code
 * /healthz} which one leads and sends the retried request there.
 */
final class ServerAddress {
  /**
   * How long a client waits for a group to elect a leader before it backs off: longer than
   * ZooKeeper's session timeout (default 6 s), after which the dead leader's latch goes.
   */
  static final Duration ELECTION_WAIT = Duration.ofSeconds(15);

  private final List<URI> members;
  private final Predicate<URI> leads;
  private volatile URI current;

  private ServerAddress(List<URI> members, Predicate<URI> leads) {
    this.members = List.copyOf(members);
    this.leads = leads;
    this.current = members.get(0);
  }

  /** One server. */
  static ServerAddress of(URI server) {
    return new ServerAddress(List.of(trimmed(server)), member -> true);
  }

  /**
   * The address(es) of catalog property {@code uri}.
   *
   * @param leads whether a member leads its group (asked when the one taken for the leader fails)
   * @throws IllegalArgumentException when an address is not an http or https URI
   */
  static ServerAddress parse(String uri, Predicate<URI> leads) {
    List<URI> members = new ArrayList<>();
    for (String one : String.valueOf(uri).split(",")) {
      members.add(trimmed(member(one.trim(), uri)));
    }
    return new ServerAddress(members, leads);
  }

  private static URI trimmed(URI uri) {
    return URI.create(uri.toString().replaceAll("/+$", ""));
  }

  private static URI member(String one, String uri) {
    URI server;
    try {
      server = URI.create(one);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "catalog property 'uri' = '"
              + uri
              + "': '"
              + one
              + "' is not a URI; give the skade server's address, e.g. uri=http://catalog-host:8181"
              + " (or a server group's members, separated by commas)",
          e);
    }
    if (!"http".equals(server.getScheme()) && !"https".equals(server.getScheme())) {
      throw new IllegalArgumentException(
          "catalog property 'uri' = '"
              + uri
              + "': '"
              + one
              + "' must be an http:// or https:// address of a skade server, e.g."
              + " http://catalog-host:8181");
    }
    return server;
  }

  /** The member requests go to now: the leader, as far as this client knows. */
  URI current() {
    return current;
  }

  boolean isGroup() {
    return members.size() > 1;
  }

  /**
   * A request to {@code tried} reached no leader: finds the member that leads now, asking each
   * one's {@code /healthz} every 100 ms while the group elects one (up to {@link #ELECTION_WAIT}),
   * so that the request is retried there at once rather than after a backoff grown through the
   * election. Returns whether the requests go to another member now (the caller retries at once);
   * false for a single server, when {@code tried} still leads (a failure of its own), or when no
   * member led in time (the requests then go to the next member, after the caller's backoff).
   */
  boolean lost(URI tried) {
    if (!isGroup()) {
      return false;
    }
    synchronized (this) {
      if (!tried.equals(current)) {
        return true; // another request found the leader meanwhile
      }
      int start = members.indexOf(tried);
      long deadline = System.nanoTime() + ELECTION_WAIT.toNanos();
      do {
        for (int i = 1; i <= members.size(); i++) {
          URI member = members.get((start + i) % members.size());
          if (leads.test(member)) {
            current = member;
            return !member.equals(tried);
          }
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      } while (System.nanoTime() < deadline);
      current = members.get((start + 1) % members.size());
      return false;
    }
  }

  @Override
  public String toString() {
    return members.stream().map(URI::toString).collect(Collectors.joining(","));
  }
}
