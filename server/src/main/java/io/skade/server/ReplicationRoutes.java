package io.skade.server;

import io.skade.catalog.CatalogReplication;
import io.skade.catalog.ReplicatedBatch;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the members of a server group ask each other, all with an {@code admin} token:
 *
 * <ul>
 *   <li>{@code GET
 *       /skade/v1/replication/batches?after=N&after-epoch=E&epoch=F&member=ID&wait-ms=W}: the
 *       batches of the member's log after {@code N}, as {@code seq, epoch, length, data} records;
 *       {@code 409} when the fetcher's batch {@code N} has another epoch than this log's (their
 *       logs part), {@code 410} when this log no longer holds batch {@code N}. On the leader, the
 *       fetch of standby {@code ID} says it holds every batch up to {@code N}, and waits up to
 *       {@code W} ms for a new one.
 *   <li>{@code GET /skade/v1/replication/checkpoint}: a zip of a consistent copy of the member's
 *       store, for a standby with no usable log.
 *   <li>{@code POST /skade/v1/replication/fence?epoch=F}: epoch {@code F} leads now; the member
 *       takes no batch of an older leader from then on and answers where its log ends.
 * </ul>
 *
 * Every answer carries the member's epoch in {@value #EPOCH_HEADER}.
 */
final class ReplicationRoutes {
  private static final Logger LOG = LoggerFactory.getLogger(ReplicationRoutes.class);

  static final String BATCHES = "/skade/v1/replication/batches";
  static final String CHECKPOINT = "/skade/v1/replication/checkpoint";
  static final String FENCE = "/skade/v1/replication/fence";
  static final String EPOCH_HEADER = "X-Skade-Epoch";

  /** At most this much batch data per fetch. */
  private static final long FETCH_BYTES = 4 * 1024 * 1024;

  private static final int FETCH_BATCHES = 2000;

  private final ServerGroup group;

  ReplicationRoutes(ServerGroup group) {
    this.group = group;
  }

  /** Handles the replication routes; false for any other path. */
  boolean handle(Exchange exchange) throws Exception {
    if (exchange.pathIs("skade", "v1", "replication", "batches")) {
      exchange.route("GET " + BATCHES);
      CommitFeedRoutes.requireGet(exchange);
      exchange.require(Caller.Role.ADMIN);
      batches(exchange);
    } else if (exchange.pathIs("skade", "v1", "replication", "checkpoint")) {
      exchange.route("GET " + CHECKPOINT);
      CommitFeedRoutes.requireGet(exchange);
      exchange.require(Caller.Role.ADMIN);
      checkpoint(exchange);
    } else if (exchange.pathIs("skade", "v1", "replication", "fence")) {
      exchange.route("POST " + FENCE);
      if (!exchange.method().equals("POST")) {
        throw new UnsupportedOperationException(
            exchange.method() + " is not served on " + FENCE + "; use POST");
      }
      exchange.require(Caller.Role.ADMIN);
      long epoch = CommitFeedRoutes.parameter(exchange, "epoch", -1, 0, Long.MAX_VALUE);
      if (epoch < 0) {
        throw new IllegalArgumentException("query parameter 'epoch' is required");
      }
      MemberClient.Position position = group.fence(epoch);
      exchange.header(EPOCH_HEADER, Long.toString(group.epoch()));
      exchange.json(
          200,
          "{\"last-seq\":" + position.lastSeq() + ",\"last-epoch\":" + position.lastEpoch() + "}");
    } else {
      return false;
    }
    return true;
  }

  private void batches(Exchange exchange) throws Exception {
    long after = CommitFeedRoutes.parameter(exchange, "after", 0, 0, Long.MAX_VALUE);
    long afterEpoch = CommitFeedRoutes.parameter(exchange, "after-epoch", 0, -1, Long.MAX_VALUE);
    long waitMs = CommitFeedRoutes.parameter(exchange, "wait-ms", 0, 0, 60_000);
    String member = exchange.query("member");
    exchange.header(EPOCH_HEADER, Long.toString(group.epoch()));
    CatalogReplication log = group.log();
    if (log == null) {
      exchange.error(503, "NoLogException", "this member holds no copy of the catalog yet");
      return;
    }
    if (after > log.stagedSeq()) {
      diverged(exchange, after, afterEpoch, log);
      return;
    }
    long epochThere = after == 0 ? 0 : log.epochAt(after);
    if (epochThere == -1 || (after == 0 && log.firstSeq() > 1)) {
      gone(exchange, after, log);
      return;
    }
    if (epochThere != afterEpoch && after > 0) {
      diverged(exchange, after, afterEpoch, log);
      return;
    }
    LeaderAcks acks = group.leaderAcks();
    if (acks != null && member != null) {
      if (acks.acked(member, after)) {
        acks.join(member);
      }
      if (waitMs > 0) {
        acks.awaitBatchAfter(after, waitMs);
      }
    }
    List<ReplicatedBatch> batches = log.since(after, FETCH_BATCHES, FETCH_BYTES);
    exchange.stream(
        200,
        "application/octet-stream",
        out -> {
          DataOutputStream data = new DataOutputStream(out);
          for (ReplicatedBatch batch : batches) {
            data.writeLong(batch.seq());
            data.writeLong(batch.epoch());
            data.writeInt(batch.data().length);
            data.write(batch.data());
          }
          data.flush();
        });
  }

  private static void diverged(
      Exchange exchange, long after, long afterEpoch, CatalogReplication log) {
    exchange.error(
        409,
        "DivergedLogException",
        "the fetcher's batch "
            + after
            + " (epoch "
            + afterEpoch
            + ") is not in this member's log (its last batch is "
            + log.lastSeq()
            + "): install a checkpoint");
  }

  private static void gone(Exchange exchange, long after, CatalogReplication log) {
    exchange.error(
        410,
        "TrimmedLogException",
        "this member's log starts at batch "
            + log.firstSeq()
            + ", after the fetcher's "
            + after
            + ": install a checkpoint");
  }

  private void checkpoint(Exchange exchange) throws Exception {
    CatalogReplication log = group.log();
    if (log == null) {
      exchange.error(503, "NoLogException", "this member holds no copy of the catalog yet");
      return;
    }
    Path dir = Files.createTempDirectory("skade-checkpoint-").resolve("store");
    try {
      log.checkpoint(dir);
      List<Path> files;
      try (Stream<Path> listed = Files.list(dir)) {
        files = listed.sorted().toList();
      }
      exchange.stream(
          200,
          "application/zip",
          out -> {
            ZipOutputStream zip = new ZipOutputStream(out);
            for (Path file : files) {
              zip.putNextEntry(new ZipEntry(file.getFileName().toString()));
              Files.copy(file, zip);
              zip.closeEntry();
            }
            zip.finish();
          });
    } finally {
      delete(dir.getParent());
    }
  }

  /** Deletes {@code dir} and everything in it. */
  static void delete(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      LOG.warn("skade server: cannot delete {}", dir, e);
    }
  }
}
