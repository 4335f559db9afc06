package io.skade.server;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * A server group as ZooKeeper holds it, under {@code /skade/groups/<name>}: {@code members/<id>}
 * (ephemeral, each member's address), {@code latch} (Curator's {@link LeaderLatch}), {@code epoch}
 * (the leader's epoch, taken by compare-and-set), {@code isr} (the in-sync standbys, written only
 * under a check of the epoch's version) and {@code catalog} (claimed by the member that creates the
 * group's catalog, so that no second one is ever created).
 */
final class GroupNodes implements AutoCloseable {
  /** An epoch taken: its number, and the version of the epoch node that holds it. */
  record Epoch(long number, int version) {}

  private final CuratorFramework zk;
  private final GroupSettings group;
  private final String base;

  /** The epoch node, kept current by a watch: what a standby checks on every fetch. */
  private final CuratorCache epochCache;

  private GroupNodes(CuratorFramework zk, GroupSettings group) {
    this.zk = zk;
    this.group = group;
    this.base = "/skade/groups/" + group.name();
    this.epochCache =
        CuratorCache.build(zk, base + "/epoch", CuratorCache.Options.SINGLE_NODE_CACHE);
    epochCache.start();
  }

  /**
   * Connects to {@code group}'s ZooKeeper.
   *
   * @throws IllegalArgumentException when it cannot be reached
   */
  static GroupNodes connect(GroupSettings group) throws InterruptedException {
    CuratorFramework zk =
        CuratorFrameworkFactory.builder()
            .connectString(group.zookeeper())
            .sessionTimeoutMs((int) group.sessionTimeout().toMillis())
            .connectionTimeoutMs((int) Math.min(group.sessionTimeout().toMillis(), 15_000))
            .retryPolicy(new ExponentialBackoffRetry(100, 10, 2000))
            .build();
    zk.start();
    if (!zk.blockUntilConnected((int) group.sessionTimeout().toSeconds() + 10, TimeUnit.SECONDS)) {
      zk.close();
      throw new IllegalArgumentException(
          "--zookeeper "
              + group.zookeeper()
              + " cannot be reached; start ZooKeeper or fix the connect string");
    }
    return new GroupNodes(zk, group);
  }

  /**
   * Registers this member at {@code self}. A node of the same id and address is this member's
   * previous run, whose session ends within the session timeout: it is waited for. One of another
   * address is another server using the id.
   *
   * @throws IllegalArgumentException when another server uses the id
   */
  void register(URI self) throws Exception {
    String path = base + "/members/" + group.memberId();
    long deadline = System.nanoTime() + 2 * group.sessionTimeout().toNanos();
    while (true) {
      try {
        zk.create()
            .creatingParentsIfNeeded()
            .withMode(CreateMode.EPHEMERAL)
            .forPath(path, bytes(self.toString()));
        return;
      } catch (KeeperException.NodeExistsException e) {
        Optional<String> holder = read(path);
        if (holder.isEmpty()) {
          continue; // gone meanwhile
        }
        if (!holder.get().equals(self.toString()) || System.nanoTime() > deadline) {
          throw new IllegalArgumentException(
              "--member-id "
                  + group.memberId()
                  + " is in use in group "
                  + group.name()
                  + " by the server at "
                  + holder.get()
                  + "; give each member its own id",
              e);
        }
        Thread.sleep(100);
      }
    }
  }

  /**
   * Whether this member may create the group's catalog: the first to claim a group that has none
   * (or this member again, when it claimed it before and did not get to create it).
   */
  boolean claimCatalog() throws Exception {
    try {
      zk.create().creatingParentsIfNeeded().forPath(base + "/catalog", bytes(group.memberId()));
      return true;
    } catch (KeeperException.NodeExistsException e) {
      return read(base + "/catalog").map(group.memberId()::equals).orElse(false);
    }
  }

  /** A latch for this member's candidacy. */
  LeaderLatch latch() {
    return new LeaderLatch(
        zk, base + "/latch", group.memberId(), LeaderLatch.CloseMode.NOTIFY_LEADER);
  }

  /**
   * The id of the member that holds the latch (the lowest of its nodes, as {@link LeaderLatch}
   * decides), whether or not this member stands.
   */
  Optional<String> leaderId() throws Exception {
    List<String> nodes;
    try {
      nodes = new ArrayList<>(zk.getChildren().forPath(base + "/latch"));
    } catch (KeeperException.NoNodeException e) {
      return Optional.empty();
    }
    nodes.sort(Comparator.comparing(node -> node.substring(node.lastIndexOf('-') + 1)));
    for (String node : nodes) {
      Optional<String> id = read(base + "/latch/" + node);
      if (id.isPresent()) {
        return id; // else its member left meanwhile: the next one holds the latch
      }
    }
    return Optional.empty();
  }

  /** The address of member {@code id}, if it is live. */
  Optional<URI> memberUri(String id) throws Exception {
    return read(base + "/members/" + id).map(URI::create);
  }

  /** Every live member's address, by id. */
  Map<String, URI> liveMembers() throws Exception {
    Map<String, URI> live = new HashMap<>();
    for (String id : zk.getChildren().forPath(base + "/members")) {
      memberUri(id).ifPresent(uri -> live.put(id, uri));
    }
    return live;
  }

  /** The group's next epoch, taken by compare-and-set. */
  Epoch takeEpoch() throws Exception {
    String path = base + "/epoch";
    while (true) {
      Stat stat = new Stat();
      long current;
      try {
        current =
            Long.parseLong(
                new String(zk.getData().storingStatIn(stat).forPath(path), StandardCharsets.UTF_8));
      } catch (KeeperException.NoNodeException e) {
        try {
          zk.create().creatingParentsIfNeeded().forPath(path, bytes("0"));
          zk.create().creatingParentsIfNeeded().forPath(base + "/isr", new byte[0]);
        } catch (KeeperException.NodeExistsException raced) {
          // another member made them first
        }
        continue;
      }
      try {
        Stat written =
            zk.setData()
                .withVersion(stat.getVersion())
                .forPath(path, bytes(Long.toString(current + 1)));
        return new Epoch(current + 1, written.getVersion());
      } catch (KeeperException.BadVersionException e) {
        // another candidate took one: take the next
      }
    }
  }

  /** The group's epoch now, read from ZooKeeper (0 before the first leader). */
  long epoch() throws Exception {
    return read(base + "/epoch").map(Long::parseLong).orElse(0L);
  }

  /**
   * The group's epoch as this member's watch on it last saw it: without a round trip, and behind
   * ZooKeeper only by the watch's notification.
   */
  long watchedEpoch() {
    return epochCache
        .get(base + "/epoch")
        .map(node -> Long.parseLong(new String(node.getData(), StandardCharsets.UTF_8)))
        .orElse(0L);
  }

  /** Writes the in-sync set, only while {@code epoch} is the group's; false when it is not. */
  boolean writeIsr(Epoch epoch, Set<String> isr) throws Exception {
    try {
      zk.transaction()
          .forOperations(
              zk.transactionOp().check().withVersion(epoch.version()).forPath(base + "/epoch"),
              zk.transactionOp().setData().forPath(base + "/isr", bytes(String.join(",", isr))));
      return true;
    } catch (KeeperException.BadVersionException | KeeperException.NoNodeException e) {
      return false;
    }
  }

  private Optional<String> read(String path) throws Exception {
    try {
      return Optional.of(new String(zk.getData().forPath(path), StandardCharsets.UTF_8));
    } catch (KeeperException.NoNodeException e) {
      return Optional.empty();
    }
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** Ends the session: this member's node goes, and with it its candidacy. */
  @Override
  public void close() {
    epochCache.close();
    zk.close();
  }
}
