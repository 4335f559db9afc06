package io.skade.server;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How a server takes part in a server group: one leader, which owns the catalog and serves it, and
 * standbys, each with its own copy of the catalog on its own disk, kept by the leader's replication
 * log. Election and fencing go through ZooKeeper.
 *
 * @param name the group's name: members of one group give the same one
 * @param zookeeper ZooKeeper's connect string, e.g. {@code zk1:2181,zk2:2181,zk3:2181}
 * @param memberId this member's id, unique in the group
 * @param sessionTimeout the ZooKeeper session timeout: how long a silent leader keeps leading
 * @param replicationAcks how many standbys must hold a commit durably before it is acknowledged
 *     (fewer while fewer are in sync)
 * @param replicationTimeout how long a leader waits for a standby before it drops it from the
 *     in-sync set
 * @param memberToken the bearer token this member sends to the others (an admin token of their
 *     token files), or null when the group serves without tokens
 */
public record GroupSettings(
    String name,
    String zookeeper,
    String memberId,
    Duration sessionTimeout,
    int replicationAcks,
    Duration replicationTimeout,
    String memberToken) {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  /** Defaults: a 6 s session, one acknowledging standby, a 5 s replication timeout. */
  public static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(6);

  public static final Duration DEFAULT_REPLICATION_TIMEOUT = Duration.ofSeconds(5);

  public GroupSettings {
    Objects.requireNonNull(sessionTimeout, "sessionTimeout");
    Objects.requireNonNull(replicationTimeout, "replicationTimeout");
    check("--group", name);
    check("--member-id", memberId);
    if (zookeeper == null || zookeeper.isBlank()) {
      throw new IllegalArgumentException(
          "--group "
              + name
              + " needs --zookeeper HOST:PORT[,HOST:PORT...]: the group elects its leader there");
    }
    if (replicationAcks < 0) {
      throw new IllegalArgumentException(
          "--replication-acks " + replicationAcks + " is negative; give 0 or more standbys");
    }
    if (sessionTimeout.toMillis() < 1000 || replicationTimeout.toMillis() < 100) {
      throw new IllegalArgumentException(
          "--zookeeper-session-timeout must be at least 1 s and --replication-timeout at least"
              + " 100 ms; given "
              + sessionTimeout
              + " and "
              + replicationTimeout);
    }
  }

  private static void check(String flag, String value) {
    if (value == null || !NAME.matcher(value).matches()) {
      throw new IllegalArgumentException(
          flag
              + " '"
              + value
              + "' is not a valid name; use 1 to 64 letters, digits, '.', '_' or '-'");
    }
  }
}
