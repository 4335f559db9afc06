package io.skade.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.ReplicatedBatch;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/** One group member's calls on the others: fences, replication fetches and checkpoints. */
final class MemberClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Where a member's log ends: its last batch and that batch's epoch. */
  record Position(long lastSeq, long lastEpoch) implements Comparable<Position> {
    /** The more up to date of two logs: the newer last epoch, then the longer log. */
    @Override
    public int compareTo(Position other) {
      int byEpoch = Long.compare(lastEpoch, other.lastEpoch);
      return byEpoch != 0 ? byEpoch : Long.compare(lastSeq, other.lastSeq);
    }
  }

  /**
   * A fetch's answer.
   *
   * @param status 200 with batches; 409 when the fetcher's log parts from the member's; 410 when
   *     the member no longer holds the batches the fetcher needs; other statuses as answered
   * @param epoch the answering member's epoch
   * @param batches the batches, oldest first
   */
  record Fetch(int status, long epoch, List<ReplicatedBatch> batches) {}

  /** HTTP/1.1: the JDK client's HTTP/2 default would offer every plain request an upgrade. */
  private final HttpClient http =
      HttpClient.newBuilder()
          .connectTimeout(Duration.ofSeconds(2))
          .version(HttpClient.Version.HTTP_1_1)
          .build();

  private final String token;

  MemberClient(String token) {
    this.token = token;
  }

  /** Tells {@code member} that epoch {@code epoch} leads now; answers where its log ends. */
  Position fence(URI member, long epoch) throws IOException, InterruptedException {
    HttpResponse<String> answer =
        http.send(
            request(member, ReplicationRoutes.FENCE + "?epoch=" + epoch, Duration.ofSeconds(5))
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            HttpResponse.BodyHandlers.ofString());
    if (answer.statusCode() != 200) {
      throw new IOException(
          "member " + member + " answered the fence " + answer.statusCode() + ": " + answer.body());
    }
    JsonNode json = JSON.readTree(answer.body());
    return new Position(json.get("last-seq").asLong(), json.get("last-epoch").asLong());
  }

  /**
   * The batches {@code member} holds after {@code after}, whose epoch at {@code after} the fetcher
   * has as {@code afterEpoch}; {@code member} and {@code fetcherEpoch} name the fetching standby
   * and the epoch it follows (a candidate catching up gives null and 0), waiting up to {@code
   * waitMs} for one.
   */
  Fetch fetch(URI from, long after, long afterEpoch, String member, long fetcherEpoch, long waitMs)
      throws IOException, InterruptedException {
    String path =
        ReplicationRoutes.BATCHES
            + "?after="
            + after
            + "&after-epoch="
            + afterEpoch
            + "&epoch="
            + fetcherEpoch
            + "&wait-ms="
            + waitMs
            + (member == null ? "" : "&member=" + member);
    HttpResponse<InputStream> answer =
        http.send(
            request(from, path, Duration.ofMillis(waitMs + 10_000)).GET().build(),
            HttpResponse.BodyHandlers.ofInputStream());
    long epoch = answer.headers().firstValueAsLong(ReplicationRoutes.EPOCH_HEADER).orElse(-1);
    try (InputStream body = answer.body()) {
      if (answer.statusCode() != 200) {
        body.readAllBytes();
        return new Fetch(answer.statusCode(), epoch, List.of());
      }
      List<ReplicatedBatch> batches = new ArrayList<>();
      DataInputStream in = new DataInputStream(body);
      while (true) {
        long seq;
        try {
          seq = in.readLong();
        } catch (EOFException end) {
          break;
        }
        long batchEpoch = in.readLong();
        byte[] data = new byte[in.readInt()];
        in.readFully(data);
        batches.add(new ReplicatedBatch(seq, batchEpoch, data));
      }
      return new Fetch(200, epoch, batches);
    }
  }

  /** Downloads a checkpoint of {@code from}'s store and unpacks it into {@code dir} (new). */
  void checkpoint(URI from, Path dir) throws IOException, InterruptedException {
    HttpResponse<InputStream> answer =
        http.send(
            request(from, ReplicationRoutes.CHECKPOINT, Duration.ofMinutes(30)).GET().build(),
            HttpResponse.BodyHandlers.ofInputStream());
    try (InputStream body = answer.body()) {
      if (answer.statusCode() != 200) {
        throw new IOException(
            "member "
                + from
                + " answered a checkpoint request "
                + answer.statusCode()
                + ": "
                + new String(body.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
      }
      Files.createDirectories(dir);
      try (ZipInputStream zip = new ZipInputStream(body)) {
        for (ZipEntry entry; (entry = zip.getNextEntry()) != null; ) {
          Path file = dir.resolve(entry.getName()).normalize();
          if (!file.getParent().equals(dir.normalize())) {
            throw new IOException("checkpoint entry " + entry.getName() + " leaves " + dir);
          }
          Files.copy(zip, file);
        }
      }
    }
  }

  private HttpRequest.Builder request(URI member, String path, Duration timeout) {
    HttpRequest.Builder request = HttpRequest.newBuilder(member.resolve(path)).timeout(timeout);
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return request;
  }
}
