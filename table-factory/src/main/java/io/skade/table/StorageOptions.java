package io.skade.table;

import static java.util.Map.entry;

import io.skade.catalog.CatalogConnection;
import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.table.api.ValidationException;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.aws.s3.S3FileIOProperties;

/**
 * The catalog's storage properties in a skade table's or catalog's options: Iceberg's own keys for
 * the catalog's file IO ({@code io-impl} and every key under {@code s3.}, {@code client.}, {@code
 * gcs.}, {@code adls.} and {@code hadoop.}), handed to the catalog as they are written. They are
 * not Flink options of skade's (Iceberg defines them, and new ones come with each Iceberg release),
 * so the unknown-key check lets them through; the values of the S3 keys whose type Iceberg fixes
 * (booleans, numbers, the endpoint, the encryption type) are still checked here, before any I/O,
 * with errors that name the key, the value and what is accepted. No error shows a secret's value.
 */
final class StorageOptions {
  private StorageOptions() {}

  /** Iceberg's {@code io-impl}: the catalog's {@code FileIO} class. */
  static final String IO_IMPL = CatalogProperties.FILE_IO_IMPL;

  /** What the unknown-key check skips: the prefixes and {@code io-impl}. */
  static final Set<String> SKIPPED =
      Stream.concat(CatalogConnection.FILE_IO_PREFIXES.stream(), Stream.of(IO_IMPL))
          .collect(Collectors.toUnmodifiableSet());

  private static final String BOOLEAN = "'true' or 'false'";
  private static final String POSITIVE = "a positive integer";
  private static final String NOT_NEGATIVE = "0 or a positive integer";

  /** The S3 keys Iceberg reads as booleans or numbers, and what each accepts. */
  private static final Map<String, String> TYPED =
      Map.ofEntries(
          entry(S3FileIOProperties.PATH_STYLE_ACCESS, BOOLEAN),
          entry(S3FileIOProperties.CHECKSUM_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.USE_ARN_REGION_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.REMOTE_SIGNING_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.CHUNKED_ENCODING_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.DELETE_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.ACCELERATION_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.DUALSTACK_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.CROSS_REGION_ACCESS_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.PRELOAD_CLIENT_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.WRITE_TABLE_TAG_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.WRITE_NAMESPACE_TAG_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.S3_CRT_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.S3_ACCESS_GRANTS_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.S3_ACCESS_GRANTS_FALLBACK_TO_IAM_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.S3_ANALYTICS_ACCELERATOR_ENABLED, BOOLEAN),
          entry(S3FileIOProperties.S3_DIRECTORY_BUCKET_LIST_PREFIX_AS_DIRECTORY, BOOLEAN),
          entry(S3FileIOProperties.MULTIPART_UPLOAD_THREADS, POSITIVE),
          entry(S3FileIOProperties.MULTIPART_SIZE, POSITIVE),
          entry(S3FileIOProperties.DELETE_BATCH_SIZE, POSITIVE),
          entry(S3FileIOProperties.DELETE_THREADS, POSITIVE),
          entry(S3FileIOProperties.S3_CRT_MAX_CONCURRENCY, POSITIVE),
          entry(S3FileIOProperties.S3_RETRY_NUM_RETRIES, NOT_NEGATIVE),
          entry(S3FileIOProperties.S3_RETRY_MIN_WAIT_MS, NOT_NEGATIVE),
          entry(S3FileIOProperties.S3_RETRY_MAX_WAIT_MS, NOT_NEGATIVE));

  private static final List<String> SSE_TYPES =
      List.of(
          S3FileIOProperties.SSE_TYPE_NONE,
          S3FileIOProperties.SSE_TYPE_S3,
          S3FileIOProperties.SSE_TYPE_KMS,
          S3FileIOProperties.DSSE_TYPE_KMS,
          S3FileIOProperties.SSE_TYPE_CUSTOM);

  /**
   * The storage keys of {@code options}, checked, as the catalog is given them.
   *
   * @throws ValidationException for the first bad value, naming its key
   */
  static Map<String, String> of(Map<String, String> options) {
    Map<String, String> storage = new TreeMap<>();
    options.forEach(
        (key, value) -> {
          if (CatalogConnection.isFileIoProperty(key)) {
            storage.put(key, value);
          } else if (key.startsWith(IO_IMPL)) {
            throw new ValidationException(
                "option '" + key + "' is unknown; did you mean '" + IO_IMPL + "'?");
          }
        });
    storage.forEach(StorageOptions::check);
    boolean accessKey = storage.containsKey(S3FileIOProperties.ACCESS_KEY_ID);
    boolean secretKey = storage.containsKey(S3FileIOProperties.SECRET_ACCESS_KEY);
    if (accessKey != secretKey) {
      throw new ValidationException(
          "option '"
              + (accessKey
                  ? S3FileIOProperties.ACCESS_KEY_ID
                  : S3FileIOProperties.SECRET_ACCESS_KEY)
              + "' is set without '"
              + (accessKey
                  ? S3FileIOProperties.SECRET_ACCESS_KEY
                  : S3FileIOProperties.ACCESS_KEY_ID)
              + "': set both, or neither to use the AWS default credential chain"
              + " (environment, profile, instance role)");
    }
    return storage;
  }

  private static void check(String key, String value) {
    String accepted = TYPED.get(key);
    String trimmed = value.trim();
    if (BOOLEAN.equals(accepted)) {
      if (!trimmed.equalsIgnoreCase("true") && !trimmed.equalsIgnoreCase("false")) {
        throw invalid(key, value, "not a boolean", accepted);
      }
    } else if (accepted != null) {
      long number;
      try {
        number = Long.parseLong(trimmed);
      } catch (NumberFormatException e) {
        throw invalid(key, value, "not a whole number", accepted);
      }
      if (number < 0 || (number == 0 && POSITIVE.equals(accepted))) {
        throw invalid(key, value, number < 0 ? "is negative" : "is not positive", accepted);
      }
    } else if (key.equals(S3FileIOProperties.ENDPOINT)) {
      URI uri;
      try {
        uri = URI.create(trimmed);
      } catch (IllegalArgumentException e) {
        uri = null;
      }
      if (uri == null
          || uri.getHost() == null
          || !("http".equalsIgnoreCase(uri.getScheme())
              || "https".equalsIgnoreCase(uri.getScheme()))) {
        throw invalid(
            key,
            value,
            "not an http:// or https:// address",
            "the S3 service's address, e.g. 'https://s3.eu-west-1.amazonaws.com' or"
                + " 'http://minio:9000'");
      }
    } else if (key.equals(S3FileIOProperties.SSE_TYPE)
        && !SSE_TYPES.contains(trimmed.toLowerCase(Locale.ROOT))) {
      throw invalid(key, value, "unknown", "'" + String.join("', '", SSE_TYPES) + "'");
    } else if (key.equals(IO_IMPL) && trimmed.isEmpty()) {
      throw invalid(
          key, value, "is empty", "a FileIO class, e.g. 'org.apache.iceberg.aws.s3.S3FileIO'");
    }
  }

  private static ValidationException invalid(
      String key, String value, String problem, String accepted) {
    return new ValidationException(
        "option '"
            + key
            + "' has an invalid value '"
            + value
            + "' ("
            + problem
            + "); accepted: "
            + accepted);
  }
}
