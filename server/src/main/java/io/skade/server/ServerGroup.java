package io.skade.server;

import io.skade.catalog.CatalogReplica;
import io.skade.catalog.CatalogReplication;
import io.skade.catalog.ReplicatedBatch;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server's membership of a server group, through ZooKeeper (Curator):
 *
 * <ul>
 *   <li>each member registers itself (an ephemeral node holding its URI) and holds a copy of the
 *       catalog on its own disk; one member, elected with Curator's {@link LeaderLatch}, leads: it
 *       owns its copy as the catalog and serves it, the others are standbys;
 *   <li>a new leader takes the next epoch (a compare-and-set of the group's epoch node), fences
 *       every live member with it (from then on they take no batch of an older leader, and answer
 *       where their logs end), catches up from the most up-to-date log (newest last epoch, then
 *       longest), and only then opens the catalog, which continues the same {@code commitSeq};
 *   <li>the leader writes each group commit into its replication log and acknowledges it once the
 *       in-sync standbys hold it ({@link LeaderAcks}); the in-sync set is written to ZooKeeper only
 *       while the leader's epoch is the group's, so a deposed leader acknowledges nothing;
 *   <li>a standby fetches the leader's batches (a long-poll, whose next request acknowledges them)
 *       and applies them in order; when its log parts from the leader's (a deposed leader's
 *       unacknowledged tail) or is too far behind, it installs a checkpoint of the leader's store.
 * </ul>
 */
final class ServerGroup implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServerGroup.class);

  /** A standby's {@code 421} names the leader here. */
  static final String LEADER_HEADER = "X-Skade-Leader";

  private static final long FETCH_WAIT_MS = 1000;
  private static final long RETRY_MS = 100;

  private final SkadeServer.Settings settings;
  private final GroupSettings group;
  private final SkadeServer.Routes routes;
  private final ServerMetrics metrics;
  private final Path catalogPath;
  private final GroupNodes nodes;
  private final MemberClient members;
  private final ReplicationRoutes replicationRoutes = new ReplicationRoutes(this);
  private final ExecutorService transitions =
      Executors.newSingleThreadExecutor(CommitFeedRoutes.daemon("skade-group-transitions"));
  private final Thread follower;

  /** Guards the store: the replica, the fence, and a leader's acks. */
  private final Object lock = new Object();

  private CatalogReplica replica;
  private LeaderAcks acks;
  private long fence;
  private volatile long epoch;
  private volatile boolean promoting;
  private volatile LeaderLatch latch;
  private volatile boolean closed;

  private ServerGroup(
      SkadeServer.Settings settings,
      SkadeServer.Routes routes,
      ServerMetrics metrics,
      GroupNodes nodes) {
    this.settings = settings;
    this.group = settings.group();
    this.routes = routes;
    this.metrics = metrics;
    this.catalogPath = catalogPath(settings);
    this.nodes = nodes;
    this.members = new MemberClient(group.memberToken());
    this.follower = CommitFeedRoutes.daemon("skade-group-follower").newThread(this::follow);
  }

  private static Path catalogPath(SkadeServer.Settings settings) {
    if (settings.catalogPath() != null) {
      return settings.catalogPath().toAbsolutePath();
    }
    if (settings.warehouse().contains("://")) {
      throw new IllegalArgumentException(
          "--warehouse "
              + settings.warehouse()
              + " is not a local directory: a group member needs --catalog-path DIR on its own"
              + " disk for its copy of the catalog");
    }
    return Path.of(settings.warehouse(), "_catalog").toAbsolutePath();
  }

  /**
   * Joins the group: connects to ZooKeeper, registers this member, and — in the background — makes
   * or fetches its copy of the catalog, then takes part in the election.
   *
   * @throws IllegalArgumentException when ZooKeeper cannot be reached or the member id is taken
   */
  static ServerGroup join(
      SkadeServer.Settings settings, URI self, SkadeServer.Routes routes, ServerMetrics metrics)
      throws Exception {
    GroupNodes nodes = GroupNodes.connect(settings.group());
    try {
      nodes.register(self);
      ServerGroup member = new ServerGroup(settings, routes, metrics, nodes);
      member.transitions.execute(member::start);
      return member;
    } catch (Exception | Error e) {
      nodes.close();
      throw e;
    }
  }

  /** Makes or fetches this member's copy of the catalog, then follows and stands for election. */
  private void start() {
    try {
      if (!hasCatalog()) {
        if (nodes.claimCatalog()) {
          LOG.info(
              "skade group {}: {} creates the group's catalog at {}",
              group.name(),
              group.memberId(),
              catalogPath);
          CatalogRoutes.open(settings, metrics, true, null).close();
        } else {
          installFromLeader();
        }
      }
      synchronized (lock) {
        replica = CatalogReplica.open(catalogPath);
      }
      follower.start();
      elect();
    } catch (Exception e) {
      if (!closed) {
        LOG.error(
            "skade group {}: member {} cannot join; it serves nothing",
            group.name(),
            group.memberId(),
            e);
      }
    }
  }

  private boolean hasCatalog() throws IOException {
    if (!Files.isDirectory(catalogPath)) {
      return false;
    }
    try (var entries = Files.list(catalogPath)) {
      return entries.findAny().isPresent();
    }
  }

  private void installFromLeader() throws Exception {
    while (!closed) {
      Optional<URI> leader = leaderUri();
      if (leader.isPresent()) {
        try {
          install(leader.get());
          return;
        } catch (IOException e) {
          LOG.info(
              "skade group {}: no checkpoint from {} yet ({})",
              group.name(),
              leader.get(),
              e.getMessage());
        }
      }
      Thread.sleep(RETRY_MS * 5);
    }
  }

  private void elect() throws Exception {
    LeaderLatch next = nodes.latch();
    next.addListener(
        new LeaderLatchListener() {
          @Override
          public void isLeader() {
            transitions.execute(() -> promote(next));
          }

          @Override
          public void notLeader() {
            transitions.execute(() -> demote("it lost its leadership in ZooKeeper"));
          }
        });
    latch = next;
    next.start();
  }

  // ---- leading ------------------------------------------------------------------------------

  private void promote(LeaderLatch won) {
    if (closed || won != latch || !won.hasLeadership() || routes.serving() != null) {
      return;
    }
    promoting = true;
    try {
      GroupNodes.Epoch taken = nodes.takeEpoch();
      long newEpoch = taken.number();
      synchronized (lock) {
        fence = Math.max(fence, newEpoch);
      }
      Map<String, Fenced> positions = fenceMembers(newEpoch);
      Fenced best = null;
      for (Fenced member : positions.values()) {
        if (member.position().compareTo(best == null ? position() : best.position()) > 0) {
          best = member;
        }
      }
      if (best != null) {
        catchUp(best.uri(), best.position());
      }
      if (!won.hasLeadership() || nodes.epoch() != newEpoch || closed) {
        LOG.info(
            "skade group {}: {} gave up leading epoch {}",
            group.name(),
            group.memberId(),
            newEpoch);
        return;
      }
      Set<String> isr = new TreeSet<>(positions.keySet());
      if (!nodes.writeIsr(taken, isr)) {
        return; // another member took a newer epoch meanwhile
      }
      CatalogRoutes served;
      synchronized (lock) {
        long lastSeq = replica.replication().lastSeq();
        replica.close();
        replica = null;
        LeaderAcks leaderAcks =
            new LeaderAcks(
                newEpoch,
                group.replicationAcks(),
                group.replicationTimeout().toNanos(),
                isr,
                lastSeq,
                changed -> nodes.writeIsr(taken, changed));
        served = CatalogRoutes.open(settings, metrics, false, leaderAcks);
        acks = leaderAcks;
        epoch = newEpoch;
      }
      routes.serve(served);
      LOG.info(
          "skade group {}: {} leads with epoch {} at commit_seq {} (in sync: {})",
          group.name(),
          group.memberId(),
          newEpoch,
          served.catalog().commitSeq(),
          positions.keySet());
    } catch (Exception e) {
      LOG.warn(
          "skade group {}: {} could not take the lead; standing again",
          group.name(),
          group.memberId(),
          e);
      reopenReplica();
      rejoin();
    } finally {
      promoting = false;
    }
  }

  /** A member that answered a fence: where it is, where its log ends. */
  private record Fenced(URI uri, MemberClient.Position position) {}

  /**
   * Fences every other live member with {@code newEpoch}, each answering where its log ends;
   * retries those that do not answer until their member node goes (their session ended) or two
   * session timeouts pass. Returns, per member that answered, its URI and position.
   */
  private Map<String, Fenced> fenceMembers(long newEpoch) throws Exception {
    Map<String, Fenced> answered = new LinkedHashMap<>();
    long deadline = System.nanoTime() + 2 * group.sessionTimeout().toNanos();
    while (!closed) {
      Map<String, URI> live = nodes.liveMembers();
      live.remove(group.memberId());
      live.keySet().removeAll(answered.keySet());
      if (live.isEmpty() || System.nanoTime() > deadline) {
        if (!live.isEmpty()) {
          LOG.warn(
              "skade group {}: members {} did not answer the fence of epoch {}",
              group.name(),
              live.keySet(),
              newEpoch);
        }
        return answered;
      }
      for (Map.Entry<String, URI> member : live.entrySet()) {
        try {
          answered.put(
              member.getKey(),
              new Fenced(member.getValue(), members.fence(member.getValue(), newEpoch)));
        } catch (IOException e) {
          LOG.debug(
              "skade group {}: {} did not answer the fence yet", group.name(), member.getKey(), e);
        }
      }
      if (answered.keySet().containsAll(live.keySet())) {
        continue;
      }
      Thread.sleep(RETRY_MS);
    }
    return answered;
  }

  /** Takes the batches this member lacks from {@code from}, or its checkpoint when logs part. */
  private void catchUp(URI from, MemberClient.Position target) throws Exception {
    while (!closed && position().compareTo(target) < 0) {
      MemberClient.Position mine = position();
      MemberClient.Fetch fetch = members.fetch(from, mine.lastSeq(), mine.lastEpoch(), null, 0, 0);
      if (fetch.status() == 409 || fetch.status() == 410) {
        install(from);
      } else if (fetch.status() != 200 || fetch.batches().isEmpty()) {
        throw new IOException("member " + from + " answered a catch-up fetch " + fetch.status());
      } else {
        synchronized (lock) {
          fetch.batches().forEach(replica::apply);
        }
      }
    }
  }

  // ---- following ----------------------------------------------------------------------------

  private void demote(String why) {
    LeaderAcks deposed;
    synchronized (lock) {
      deposed = acks;
      acks = null;
    }
    if (deposed != null) {
      deposed.depose(why);
    }
    CatalogRoutes served = routes.serve(null);
    if (served == null) {
      return;
    }
    LOG.warn("skade group {}: {} steps down: {}", group.name(), group.memberId(), why);
    served.release();
    try {
      served.close();
    } catch (RuntimeException e) {
      LOG.warn("skade group {}: closing the catalog on stepping down failed", group.name(), e);
    }
    if (!closed) {
      reopenReplica();
    }
  }

  private void reopenReplica() {
    synchronized (lock) {
      if (replica == null && !closed && routes.serving() == null) {
        replica = CatalogReplica.open(catalogPath);
      }
    }
  }

  /** Leaves the election and stands again (after failing to lead). */
  private void rejoin() {
    LeaderLatch old = latch;
    try {
      if (old != null) {
        old.close(LeaderLatch.CloseMode.SILENT);
      }
      if (!closed) {
        elect();
      }
    } catch (Exception e) {
      LOG.warn(
          "skade group {}: {} cannot stand for election again", group.name(), group.memberId(), e);
    }
  }

  /** The standby's loop: fetch the leader's batches, apply them in order. */
  private void follow() {
    URI leader = null; // the leader of epoch leaderEpoch, kept while that epoch holds the group
    long leaderEpoch = -1;
    while (!closed) {
      try {
        if (promoting || routes.serving() != null || replica == null) {
          leader = null;
          Thread.sleep(RETRY_MS);
          continue;
        }
        // The epoch is checked on every round (a watch keeps it), so that a new leader's epoch
        // stops this member's acknowledgements to the old one even before its fence arrives.
        long groupEpoch = nodes.watchedEpoch();
        if (leader == null || groupEpoch != leaderEpoch) {
          leader = leaderUriOtherThanThis().orElse(null);
          leaderEpoch = groupEpoch;
          if (leader == null) {
            Thread.sleep(RETRY_MS);
            continue;
          }
        }
        MemberClient.Position mine = null;
        synchronized (lock) {
          if (leaderEpoch >= fence && replica != null) {
            fence = leaderEpoch;
            epoch = leaderEpoch;
            mine = position();
          }
        }
        if (mine == null) { // ZooKeeper's view is behind this member's fence: ask again soon
          Thread.sleep(RETRY_MS);
          continue;
        }
        MemberClient.Fetch fetch =
            members.fetch(
                leader,
                mine.lastSeq(),
                mine.lastEpoch(),
                group.memberId(),
                leaderEpoch,
                FETCH_WAIT_MS);
        if (fetch.status() == 409 || fetch.status() == 410) {
          LOG.warn(
              "skade group {}: {}'s log parts from leader {} (status {}): installing its checkpoint",
              group.name(),
              group.memberId(),
              leader,
              fetch.status());
          synchronized (lock) {
            if (replica != null) {
              replica.close();
              replica = null;
            }
          }
          install(leader);
          reopenReplica();
          leader = null;
        } else if (fetch.status() == 200) {
          boolean applied = false;
          synchronized (lock) {
            if (fetch.epoch() == fence && replica != null && !promoting) {
              for (ReplicatedBatch batch : fetch.batches()) {
                replica.apply(batch);
              }
              applied = true;
            }
          }
          if (!applied) { // not the leader of this member's epoch (yet): ask again soon
            leader = null;
            Thread.sleep(RETRY_MS);
          }
        } else {
          leader = null;
          Thread.sleep(RETRY_MS);
        }
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        leader = null;
        if (!closed) {
          LOG.debug("skade group {}: following failed; trying again", group.name(), e);
          try {
            Thread.sleep(RETRY_MS * 2);
          } catch (InterruptedException stop) {
            return;
          }
        }
      }
    }
  }

  /** The address of the member that holds the latch, unless it is this one or has none. */
  private Optional<URI> leaderUriOtherThanThis() throws Exception {
    Optional<String> id = nodes.leaderId();
    if (id.isEmpty() || id.get().equals(group.memberId())) {
      return Optional.empty();
    }
    return nodes.memberUri(id.get());
  }

  /** Replaces this member's copy with a checkpoint of {@code from}'s store. */
  private void install(URI from) throws Exception {
    Path incoming = catalogPath.resolveSibling(catalogPath.getFileName() + ".incoming");
    Path old = catalogPath.resolveSibling(catalogPath.getFileName() + ".old");
    ReplicationRoutes.delete(incoming);
    members.checkpoint(from, incoming);
    synchronized (lock) {
      if (replica != null) {
        replica.close();
        replica = null;
      }
      ReplicationRoutes.delete(old);
      if (Files.exists(catalogPath)) {
        Files.move(catalogPath, old, StandardCopyOption.ATOMIC_MOVE);
      }
      Files.createDirectories(catalogPath.getParent());
      Files.move(incoming, catalogPath, StandardCopyOption.ATOMIC_MOVE);
      ReplicationRoutes.delete(old);
    }
    LOG.info(
        "skade group {}: {} installed a checkpoint of {}", group.name(), group.memberId(), from);
  }

  // ---- what the routes ask ------------------------------------------------------------------

  ReplicationRoutes replicationRoutes() {
    return replicationRoutes;
  }

  String name() {
    return group.name();
  }

  /** This member's epoch: the one it leads with, or the newest it follows. */
  long epoch() {
    return epoch;
  }

  /** The leader's acks while this member leads, else null. */
  LeaderAcks leaderAcks() {
    synchronized (lock) {
      return acks;
    }
  }

  /** This member's log: the catalog's while it leads, its replica's otherwise, null for none. */
  CatalogReplication log() {
    synchronized (lock) {
      CatalogRoutes served = routes.serving();
      if (served != null) {
        return served.catalog().replication();
      }
      return replica == null ? null : replica.replication();
    }
  }

  long replicaCommitSeq() {
    CatalogReplication log = log();
    return log == null ? 0 : log.commitSeq();
  }

  /** Where this member's log ends. */
  MemberClient.Position position() {
    CatalogReplication log = log();
    if (log == null) {
      return new MemberClient.Position(0, 0);
    }
    long last = log.lastSeq();
    return new MemberClient.Position(last, last == 0 ? 0 : log.epochAt(last));
  }

  /** Epoch {@code newEpoch} leads now: no batch of an older one is taken from now on. */
  MemberClient.Position fence(long newEpoch) {
    LeaderAcks deposed = null;
    synchronized (lock) {
      fence = Math.max(fence, newEpoch);
      if (acks != null && acks.epoch() < newEpoch) {
        deposed = acks;
      }
    }
    if (deposed != null) {
      deposed.depose("epoch " + newEpoch + " fenced it");
      if (!closed) {
        transitions.execute(() -> demote("epoch " + newEpoch + " fenced it"));
      }
    }
    return position();
  }

  /** The leader's URI, when the group has one. */
  Optional<URI> leaderUri() {
    try {
      Optional<String> id = nodes.leaderId();
      return id.isEmpty() ? Optional.empty() : nodes.memberUri(id.get());
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    closed = true;
    follower.interrupt();
    LeaderLatch current = latch;
    if (current != null) {
      try {
        current.close(LeaderLatch.CloseMode.SILENT);
      } catch (IOException e) {
        LOG.debug("skade group {}: closing the latch failed", group.name(), e);
      }
    }
    transitions.shutdown();
    try {
      transitions.awaitTermination(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    LeaderAcks leading;
    synchronized (lock) {
      leading = acks;
      acks = null;
      if (replica != null) {
        replica.close();
        replica = null;
      }
    }
    if (leading != null) {
      leading.depose("the server is stopping");
    }
    try {
      follower.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    nodes.close();
  }
}
