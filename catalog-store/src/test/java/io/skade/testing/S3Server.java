package io.skade.testing;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;

/**
 * A real S3-compatible server on loopback for tests and benchmarks: s3proxy over jclouds'
 * filesystem blob store in a directory, with signed (V2 or V4) requests, ranged GETs, multipart
 * uploads and listing. Its buckets are directories under {@code dir}.
 *
 * <p>The AWS SDK's default request checksums (CRC32 trailers in {@code aws-chunked} bodies) are
 * newer than s3proxy: {@link #relaxChecksums()} asks the SDK for them only where S3 requires them,
 * as users of other S3-compatible stores do ({@code aws.requestChecksumCalculation}).
 */
public final class S3Server implements AutoCloseable {
  public static final String ACCESS_KEY = "skade-access";
  public static final String SECRET_KEY = "skade-secret-key";
  public static final String REGION = "us-east-1";

  private final S3Proxy proxy;
  private final BlobStoreContext context;
  private final URI endpoint;

  private S3Server(S3Proxy proxy, BlobStoreContext context, URI endpoint) {
    this.proxy = proxy;
    this.context = context;
    this.endpoint = endpoint;
  }

  /** Starts a server whose buckets live under {@code dir}; waits until it accepts requests. */
  public static S3Server start(Path dir) throws Exception {
    relaxChecksums();
    java.nio.file.Files.createDirectories(dir);
    Properties properties = new Properties();
    properties.setProperty("jclouds.filesystem.basedir", dir.toString());
    BlobStoreContext context =
        ContextBuilder.newBuilder("filesystem-nio2")
            .credentials(ACCESS_KEY, SECRET_KEY)
            .overrides(properties)
            .build(BlobStoreContext.class);
    S3Proxy proxy =
        S3Proxy.builder()
            .blobStore(context.getBlobStore())
            .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
            .endpoint(URI.create("http://127.0.0.1:0"))
            // The SDK signs a checksum header into DeleteObjects (bulk deletes) whatever
            // aws.requestChecksumCalculation says; s3proxy refuses headers it does not know.
            .ignoreUnknownHeaders(true)
            .build();
    proxy.start();
    while (!"STARTED".equals(proxy.getState())) {
      Thread.onSpinWait();
    }
    return new S3Server(proxy, context, URI.create("http://127.0.0.1:" + proxy.getPort()));
  }

  /** Asks the AWS SDK for request checksums only where S3 requires them (s3proxy knows no more). */
  public static void relaxChecksums() {
    System.setProperty("aws.requestChecksumCalculation", "when_required");
    System.setProperty("aws.responseChecksumValidation", "when_required");
  }

  /** {@code http://127.0.0.1:<port>}. */
  public URI endpoint() {
    return endpoint;
  }

  /** Creates {@code bucket} (nothing if it exists); returns its name. */
  public String bucket(String bucket) {
    BlobStore store = context.getBlobStore();
    store.createContainerInLocation(null, bucket);
    return bucket;
  }

  /**
   * The catalog properties that point Iceberg's {@code S3FileIO} at {@code endpoint} (this server,
   * or a proxy in front of it) with this server's credentials.
   */
  public static Map<String, String> fileIoProperties(URI endpoint) {
    Map<String, String> props = new TreeMap<>();
    props.put("io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
    props.put("s3.endpoint", endpoint.toString());
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", ACCESS_KEY);
    props.put("s3.secret-access-key", SECRET_KEY);
    props.put("client.region", REGION);
    return props;
  }

  /** {@link #fileIoProperties(URI)} for this server itself. */
  public Map<String, String> fileIoProperties() {
    return fileIoProperties(endpoint);
  }

  @Override
  public void close() throws Exception {
    proxy.stop();
    context.close();
  }
}
