package io.skade.benchmarks;

import io.skade.testing.S3FaultProxy;
import io.skade.testing.S3Server;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.RangeReadable;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Where a benchmark's warehouse lives, chosen by {@code skade.bench.storage}: {@code local} (a
 * directory, the default) or {@code s3}: an S3-compatible server on loopback ({@link S3Server},
 * s3proxy over a directory) reached through an {@link S3FaultProxy} that holds each request {@code
 * delay} ms before it reaches the server (time to first byte) and caps each connection's answers to
 * {@code skade.bench.s3.bandwidth} bytes/s, so that figures show what object storage costs: the
 * round trips a read or a commit makes. The proxy also counts the requests, so a figure can be
 * given in GETs per commit or per probe.
 *
 * <p>System properties (defaults in brackets): {@code skade.bench.storage} [local], {@code
 * skade.bench.s3.delays} the per-request delays in ms each figure is printed at [0,10], {@code
 * skade.bench.s3.bandwidth} bytes/s per connection [100000000, 100 MB/s; 0 for no cap].
 */
final class ObjectStorage implements AutoCloseable {
  /** The bucket every benchmark warehouse on S3 lives in. */
  static final String BUCKET = "skade-bench";

  /**
   * The bucket of Paimon's warehouse, at its root: the S3 server's file-system backend answers a
   * HEAD of a directory's key as an object, which Hadoop's S3A (Paimon's S3 file system) then takes
   * for a file when it makes the directory again; a bucket's root is a directory to it.
   */
  static final String PAIMON_BUCKET = "skade-bench-paimon";

  /**
   * JVM options a child JVM needs to reach the S3 server with the AWS SDK: s3proxy predates the
   * SDK's default request checksums.
   */
  static final List<String> CHILD_JVM_OPTIONS =
      List.of(
          "-Daws.requestChecksumCalculation=when_required",
          "-Daws.responseChecksumValidation=when_required");

  private final S3Server server;
  private final S3FaultProxy proxy;
  private long delayMillis;

  private ObjectStorage(S3Server server, S3FaultProxy proxy) {
    this.server = server;
    this.proxy = proxy;
  }

  /** Whether {@code skade.bench.storage} asks for object storage. */
  static boolean s3() {
    String storage = System.getProperty("skade.bench.storage", "local").trim();
    if (!storage.equals("local") && !storage.equals("s3")) {
      throw new IllegalArgumentException(
          "skade.bench.storage = '" + storage + "' is not a storage; use local or s3");
    }
    return storage.equals("s3");
  }

  /** The per-request delays each S3 figure is printed at ({@code skade.bench.s3.delays}). */
  static List<Long> delays() {
    return Arrays.stream(System.getProperty("skade.bench.s3.delays", "0,10").split(","))
        .map(String::trim)
        .filter(s -> !s.isEmpty())
        .map(Long::parseLong)
        .toList();
  }

  /** The bandwidth cap per connection, bytes/s ({@code skade.bench.s3.bandwidth}; 0: none). */
  static long bandwidth() {
    return Long.getLong("skade.bench.s3.bandwidth", 100_000_000L);
  }

  /**
   * Starts an S3 server whose buckets live under {@code dir}, the bucket {@link #BUCKET}, and the
   * proxy in front of it (no delay yet, {@link #bandwidth()} capped).
   */
  static ObjectStorage start(Path dir) throws Exception {
    S3Server server = S3Server.start(dir);
    server.bucket(BUCKET);
    server.bucket(PAIMON_BUCKET);
    S3FaultProxy proxy = new S3FaultProxy(server.endpoint()).bandwidth(bandwidth());
    return new ObjectStorage(server, proxy);
  }

  /**
   * A proxy with the settings a child JVM was given ({@code skade.bench.s3.endpoint}, the S3
   * server's, and {@code skade.bench.s3.delay}) in front of the parent's S3 server: each child
   * counts its own requests.
   */
  static S3FaultProxy childProxy() throws Exception {
    String endpoint = System.getProperty("skade.bench.s3.endpoint");
    if (endpoint == null) {
      throw new IllegalStateException(
          "no skade.bench.s3.endpoint: this JVM was not started by a benchmark on S3");
    }
    S3Server.relaxChecksums();
    return new S3FaultProxy(URI.create(endpoint))
        .delay(Long.getLong("skade.bench.s3.delay", 0))
        .bandwidth(bandwidth());
  }

  /** The S3 server itself, without the proxy (no delay, not counted): for writing tables. */
  URI serverEndpoint() {
    return server.endpoint();
  }

  /** Holds every later request {@code millis} before it reaches the server. */
  ObjectStorage delay(long millis) {
    this.delayMillis = millis;
    proxy.delay(millis);
    return this;
  }

  long delay() {
    return delayMillis;
  }

  /**
   * The catalog properties of an embedded skade catalog whose warehouse is {@code
   * s3://skade-bench/<name>}, its RocksDB store in {@code catalogDir}, its files read and written
   * through the proxy.
   */
  Map<String, String> catalogProperties(String name, Path catalogDir) {
    return catalogProperties(proxy.endpoint(), name, catalogDir);
  }

  /** {@link #catalogProperties(String, Path)} through {@code endpoint}. */
  static Map<String, String> catalogProperties(URI endpoint, String name, Path catalogDir) {
    Map<String, String> properties = new HashMap<>(fileIoProperties(endpoint));
    properties.put("warehouse", warehouse(name));
    properties.put("catalog.path", catalogDir.toString());
    return properties;
  }

  /** Iceberg's {@code S3FileIO} pointed at {@code endpoint} with the server's credentials. */
  static Map<String, String> fileIoProperties(URI endpoint) {
    return S3Server.fileIoProperties(endpoint);
  }

  /** Iceberg's {@code S3FileIO} through the proxy. */
  Map<String, String> fileIoProperties() {
    return fileIoProperties(proxy.endpoint());
  }

  static String warehouse(String name) {
    return "s3://" + BUCKET + "/" + name;
  }

  /**
   * What one small ranged GET costs through the proxy at its current delay, in ms: the median of
   * 40, each a new stream of Iceberg's {@code S3FileIO} reading 4 KB — the delay plus the store's,
   * the proxy's and the AWS SDK's own time, which a request costs even at 0 ms.
   */
  double measuredGetMillis() throws IOException {
    String path = "s3://" + BUCKET + "/request-probe";
    byte[] data = new byte[64 << 10];
    long[] nanos = new long[41];
    try (FileIO io =
        CatalogUtil.loadFileIO("org.apache.iceberg.aws.s3.S3FileIO", fileIoProperties(), null)) {
      try (PositionOutputStream out = io.newOutputFile(path).createOrOverwrite()) {
        out.write(data);
      }
      InputFile file = io.newInputFile(path, data.length);
      byte[] buffer = new byte[4096];
      for (int i = 0; i <= nanos.length; i++) {
        long started = System.nanoTime();
        try (SeekableInputStream in = file.newStream()) {
          ((RangeReadable) in).readFully(i * 1024L, buffer, 0, buffer.length);
        }
        if (i > 0) { // the first opens the connection
          nanos[i - 1] = System.nanoTime() - started;
        }
      }
      io.deleteFile(path);
    }
    Arrays.sort(nanos);
    return nanos[nanos.length / 2] / 1e6;
  }

  /** The requests the proxy has passed so far. */
  Requests requests() {
    return Requests.of(proxy.requests());
  }

  /** What a line of output says the storage is. */
  String describe() {
    return describe(delayMillis);
  }

  /** What a line of output says the storage is at {@code delayMillis}. */
  static String describe(long delayMillis) {
    long cap = bandwidth();
    return String.format(
        Locale.ROOT,
        "S3 (s3proxy on loopback behind a fault proxy: %d ms per request, %s per connection)",
        delayMillis,
        cap <= 0 ? "no bandwidth cap" : String.format(Locale.ROOT, "%.0f MB/s", cap / 1e6));
  }

  /**
   * Counts of the requests a proxy passed, by method and by the kind of file each named ({@link
   * #fileKind}); {@link #minus} gives those of a span.
   */
  record Requests(
      long gets, long rangedGets, long puts, long heads, long others, Map<String, Long> byFile) {
    static Requests of(List<S3FaultProxy.Request> requests) {
      long gets = 0;
      long ranged = 0;
      long puts = 0;
      long heads = 0;
      long others = 0;
      Map<String, Long> byFile = new TreeMap<>();
      for (S3FaultProxy.Request r : requests) {
        switch (r.method()) {
          case "GET" -> {
            gets++;
            if (r.rangedGet()) {
              ranged++;
            }
          }
          case "PUT", "POST" -> puts++;
          case "HEAD" -> heads++;
          default -> others++;
        }
        byFile.merge(r.method() + " " + fileKind(r.path()), 1L, Long::sum);
      }
      return new Requests(gets, ranged, puts, heads, others, byFile);
    }

    /** What an Iceberg table's file at {@code path} is, by its name. */
    static String fileKind(String path) {
      String name = path.substring(path.lastIndexOf('/') + 1);
      int query = name.indexOf('?');
      name = query < 0 ? name : name.substring(0, query);
      if (name.endsWith(".metadata.json")) {
        return "metadata";
      } else if (name.startsWith("snap-") && name.endsWith(".avro")) {
        return "manifest-list";
      } else if (name.endsWith(".avro")) {
        return "manifest";
      } else if (name.endsWith(".parquet")) {
        return path.contains("/data/") ? "data" : "parquet";
      } else {
        return "other";
      }
    }

    Requests minus(Requests earlier) {
      Map<String, Long> span = new TreeMap<>(byFile);
      earlier.byFile.forEach((kind, n) -> span.merge(kind, -n, Long::sum));
      span.values().removeIf(n -> n == 0);
      return new Requests(
          gets - earlier.gets,
          rangedGets - earlier.rangedGets,
          puts - earlier.puts,
          heads - earlier.heads,
          others - earlier.others,
          span);
    }

    long total() {
      return gets + puts + heads + others;
    }

    /**
     * {@code GET 3.00 (ranged 2.00), PUT/POST 4.00, HEAD 1.00} per {@code per}, then by file:
     * {@code GET data 1.00, HEAD metadata 1.00, ...}.
     */
    String per(long per, String what) {
      double n = Math.max(1, per);
      return String.format(
          Locale.ROOT,
          "per %s: GET %.2f (ranged %.2f), PUT/POST %.2f, HEAD %.2f, other %.2f; by file: %s",
          what,
          gets / n,
          rangedGets / n,
          puts / n,
          heads / n,
          others / n,
          byFile(n, "%s %.2f"));
    }

    /** {@code GET 300 (ranged 200), HEAD 100, other 0; by file: GET data 100, ...}. */
    String counts() {
      return String.format(
          Locale.ROOT,
          "GET %d (ranged %d), HEAD %d, other %d; by file: %s",
          gets,
          rangedGets,
          heads,
          puts + others,
          byFile(1, "%s %.0f"));
    }

    private String byFile(double per, String format) {
      StringBuilder files = new StringBuilder();
      byFile.forEach(
          (kind, count) ->
              files
                  .append(files.length() == 0 ? "" : ", ")
                  .append(String.format(Locale.ROOT, format, kind, count / per)));
      return files.toString();
    }
  }

  @Override
  public void close() throws Exception {
    proxy.close();
    server.close();
  }
}
