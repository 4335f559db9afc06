package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The replication log on real RocksDB: a leader's group commits, applied in order to a copy of its
 * store made before them, give a store that opens as the same catalog (log, pointers, snapshot
 * index, consumers, idempotency keys, locks) and continues its {@code commitSeq} gaplessly; the
 * leader acknowledges nothing its gate has not.
 */
class CatalogReplicationTest {
  @TempDir Path root;

  /**
   * A gate that lets every batch through at once and remembers which it saw, and what the log
   * served of each batch when it was offered, before the leader's own write of it.
   */
  private static final class OpenGate implements ReplicationGate {
    final long epoch;
    final List<Long> seen = new CopyOnWriteArrayList<>();
    final List<String> servedWhenOffered = new CopyOnWriteArrayList<>();
    volatile CatalogReplication log;

    OpenGate(long epoch) {
      this.epoch = epoch;
    }

    @Override
    public long epoch() {
      return epoch;
    }

    @Override
    public void offered(long seq) {
      servedWhenOffered.add(
          "batch "
              + seq
              + ": durable up to "
              + log.lastSeq()
              + ", staged "
              + log.stagedSeq()
              + ", served "
              + log.since(seq - 1, 10, Long.MAX_VALUE).stream().map(ReplicatedBatch::seq).toList()
              + " of epoch "
              + log.epochAt(seq));
    }

    @Override
    public void awaitReplicated(long seq) {
      seen.add(seq);
    }
  }

  private SkadeCatalog open(Path catalogPath) {
    return Catalogs.open(
        root.resolve("warehouse"), Map.of(SkadeCatalog.CATALOG_PATH, catalogPath.toString()));
  }

  @Test
  void batchesAppliedToACheckpointGiveTheLeadersCatalogWhichContinuesTheSameCommitSeq()
      throws Exception {
    Path leaderPath = root.resolve("leader");
    Path standbyPath = root.resolve("standby");
    OpenGate gate = new OpenGate(3);
    String before;
    try (SkadeCatalog leader = open(leaderPath)) {
      Table a = Catalogs.createTable(leader, "a"); // before the gate: in the checkpoint
      leader.replication().checkpoint(standbyPath);
      gate.log = leader.replication();
      leader.replicateTo(gate);

      Catalogs.append(a, "a1");
      Table b = Catalogs.createTable(leader, "b");
      Catalogs.append(b, "b1");
      leader.renameTable(
          TableIdentifier.of(Catalogs.DB, "b"), TableIdentifier.of(Catalogs.DB, "b2"));
      leader.storeConsumer(
          "c1", Catalogs.cursorAtCurrent(leader, TableIdentifier.of(Catalogs.DB, "a")));
      leader.withIdempotencyKey(
          "key-1",
          () -> {
            Catalogs.append(leader.loadTable(TableIdentifier.of(Catalogs.DB, "a")), "a2");
            return null;
          });
      assertThat(
              leader.tryLock(
                  TableIdentifier.of(Catalogs.DB, "a"), "compact", "me", Duration.ofMinutes(5)))
          .isTrue();
      leader.createNamespace(Namespace.of("other"), Map.of("k", "v"));

      CatalogReplication log = leader.replication();
      assertThat(log.lastSeq()).isEqualTo(gate.seen.size()).isGreaterThanOrEqualTo(8);
      assertThat(gate.seen).isEqualTo(sequence(1, log.lastSeq()));
      // Each batch is served to standbys before the leader's synced write of it ends.
      assertThat(gate.servedWhenOffered)
          .isEqualTo(
              sequence(1, log.lastSeq()).stream()
                  .map(
                      seq ->
                          "batch "
                              + seq
                              + ": durable up to "
                              + (seq - 1)
                              + ", staged "
                              + seq
                              + ", served ["
                              + seq
                              + "] of epoch 3")
                  .toList());
      assertThat(log.epochAt(1)).isEqualTo(3);
      assertThat(log.epochAt(log.lastSeq() + 1)).isEqualTo(-1);

      try (CatalogReplica replica = CatalogReplica.open(standbyPath)) {
        assertThat(replica.replication().lastSeq()).isZero();
        List<ReplicatedBatch> batches = log.since(0, 3, Long.MAX_VALUE);
        assertThat(batches).extracting(ReplicatedBatch::seq).containsExactly(1L, 2L, 3L);
        ReplicatedBatch third = batches.get(2);
        assertThatThrownBy(() -> replica.apply(third))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("does not follow this replica's last batch 0");
        List<ReplicatedBatch> page;
        while (!(page = log.since(replica.replication().lastSeq(), 1000, 1)).isEmpty()) {
          assertThat(page).hasSize(1); // at most 1 byte a page: one batch
          replica.apply(page.get(0));
        }
        assertThat(replica.replication().lastSeq()).isEqualTo(log.lastSeq());
        assertThat(replica.replication().epochAt(1)).isEqualTo(3);
        // The leader serves its newest batches from memory, the replica its log from disk.
        assertThat(replica.replication().since(0, 1000, Long.MAX_VALUE))
            .usingRecursiveFieldByFieldElementComparator()
            .isEqualTo(log.since(0, 1000, Long.MAX_VALUE));
        assertThat(replica.replication().commitSeq()).isEqualTo(leader.commitSeq());
      }
      before = state(leader);
    }
    try (SkadeCatalog promoted = open(standbyPath)) {
      assertThat(state(promoted)).isEqualTo(before);
      long seq = promoted.commitSeq();
      long batches = promoted.replication().lastSeq();
      OpenGate next = new OpenGate(4);
      next.log = promoted.replication();
      promoted.replicateTo(next);
      Catalogs.append(promoted.loadTable(TableIdentifier.of(Catalogs.DB, "a")), "a3");
      assertThat(promoted.commitSeq()).isEqualTo(seq + 1);
      assertThat(promoted.commitsSince(seq, 10))
          .extracting(CommitEvent::commitSeq)
          .containsExactly(seq + 1);
      assertThat(next.seen).containsExactly(batches + 1);
      assertThat(promoted.replication().epochAt(batches + 1)).isEqualTo(4);
      assertThat(promoted.idempotencyRecord("key-1")).isPresent();
    }
  }

  @Test
  void aCommitNoStandbyAcknowledgedIsOfUnknownOutcomeAndTheCatalogTakesNoMore() throws Exception {
    try (SkadeCatalog leader = open(root.resolve("leader"))) {
      Table a = Catalogs.createTable(leader, "a");
      leader.replicateTo(
          new ReplicationGate() {
            @Override
            public long epoch() {
              return 1;
            }

            @Override
            public void offered(long seq) {}

            @Override
            public void awaitReplicated(long seq) {
              throw new IllegalStateException("deposed: epoch 2 leads the group");
            }
          });
      assertThatThrownBy(() -> Catalogs.append(a, "a1"))
          .isInstanceOf(CommitStateUnknownException.class)
          .hasMessageContaining("no standby acknowledged it")
          .hasMessageContaining("deposed");
      assertThatThrownBy(() -> leader.createNamespace(Namespace.of("x")))
          .isInstanceOf(RuntimeException.class);
    }
  }

  private static List<Long> sequence(long from, long to) {
    List<Long> seqs = new ArrayList<>();
    for (long s = from; s <= to; s++) {
      seqs.add(s);
    }
    return seqs;
  }

  /** Everything a catalog holds, as text. */
  private static String state(SkadeCatalog catalog) {
    StringBuilder state = new StringBuilder("commit_seq " + catalog.commitSeq());
    state.append("\nlog ").append(catalog.commitsSince(0, 10_000));
    for (Namespace namespace : catalog.listNamespaces()) {
      state.append("\n").append(namespace).append(catalog.loadNamespaceMetadata(namespace));
      for (TableIdentifier id : catalog.listTables(namespace)) {
        Table table = catalog.loadTable(id);
        state
            .append("\n ")
            .append(id)
            .append(" @ ")
            .append(((HasTableOperations) table).operations().current().metadataFileLocation());
        for (var snapshot : table.snapshots()) {
          state
              .append(" ")
              .append(snapshot.snapshotId())
              .append("→")
              .append(
                  catalog
                      .commitOf(id, snapshot.snapshotId())
                      .map(CommitEvent::commitSeq)
                      .orElse(-1L));
        }
      }
    }
    state.append("\nconsumers ").append(catalog.consumers());
    state.append("\nkey ").append(catalog.idempotencyRecord("key-1"));
    state.append("\nlock ").append(catalog.lock(TableIdentifier.of(Catalogs.DB, "a"), "compact"));
    return state.toString();
  }
}
