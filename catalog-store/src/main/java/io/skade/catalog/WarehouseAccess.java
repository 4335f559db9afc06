package io.skade.catalog;

import java.io.FileNotFoundException;
import java.lang.reflect.Method;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.SupportsPrefixOperations;

/**
 * The one cheap check of a warehouse on object storage (or any non-local file system) made when a
 * catalog opens, before its store is: the catalog's file IO lists the prefix {@code
 * <warehouse>/_catalog/}, where no table lives (the namespace is reserved), so the answer is empty
 * and small whatever the warehouse holds. Wrong credentials and a missing bucket then fail the open
 * with an {@link IllegalArgumentException} naming the catalog, the bucket and the property to fix,
 * instead of failing the first job that writes.
 *
 * <p>S3's answers are told apart by the AWS SDK's error codes, read reflectively: the SDK is on the
 * path only where {@code S3FileIO} is used, and the catalog needs it nowhere else.
 */
final class WarehouseAccess {
  private static final Set<String> BAD_CREDENTIALS =
      Set.of(
          "InvalidAccessKeyId",
          "SignatureDoesNotMatch",
          "InvalidToken",
          "ExpiredToken",
          "InvalidSecurity",
          "AuthorizationHeaderMalformed");
  private static final Set<String> MISSING_BUCKET = Set.of("NoSuchBucket");
  private static final Set<String> DENIED = Set.of("AccessDenied", "AllAccessDisabled");

  private WarehouseAccess() {}

  /**
   * Lists the reserved prefix of {@code warehouse} through {@code io} once.
   *
   * @throws IllegalArgumentException when the storage refuses the credentials, denies the listing
   *     or has no such bucket; the message names the property to fix and never a secret
   * @throws IllegalStateException when the storage cannot be reached (the cause says why)
   */
  static void check(String catalog, String warehouse, FileIO io, Map<String, String> props) {
    String prefix = warehouse + "/" + TableKeys.RESERVED_NAMESPACE + "/";
    try {
      if (io instanceof SupportsPrefixOperations prefixes) {
        prefixes.listPrefix(prefix).iterator().hasNext();
      } else {
        io.newInputFile(prefix + ".access-check").exists();
      }
    } catch (RuntimeException e) {
      if (hasCause(e, FileNotFoundException.class)) {
        return; // a file system that lists only what exists: the warehouse is still empty
      }
      throw refused(catalog, warehouse, props, e);
    }
  }

  private static RuntimeException refused(
      String catalog, String warehouse, Map<String, String> props, RuntimeException e) {
    String bucket = bucket(warehouse);
    String where = "skade catalog '" + catalog + "': warehouse " + warehouse;
    String code = errorCode(e);
    int status = statusCode(e);
    if (code != null && MISSING_BUCKET.contains(code)) {
      return new IllegalArgumentException(
          where
              + ": bucket '"
              + bucket
              + "' does not exist"
              + endpoint(props)
              + " (NoSuchBucket); create the bucket, or fix the property 'warehouse'"
              + " (s3://<bucket>/<path>)",
          e);
    }
    if (code != null && BAD_CREDENTIALS.contains(code)) {
      return new IllegalArgumentException(
          where
              + ": the storage refused the credentials for bucket '"
              + bucket
              + "' ("
              + code
              + "); fix the properties 's3.access-key-id' and 's3.secret-access-key'"
              + credentialSource(props),
          e);
    }
    if ((code != null && DENIED.contains(code)) || status == 403) {
      return new IllegalArgumentException(
          where
              + ": access to bucket '"
              + bucket
              + "' was denied ("
              + (code == null ? "403" : code)
              + "); the credentials"
              + credentialSource(props)
              + " must allow listing, reading, writing and deleting objects under the"
              + " warehouse (s3:ListBucket on the bucket, s3:GetObject, s3:PutObject and"
              + " s3:DeleteObject on its keys): grant them, or set 's3.access-key-id' and"
              + " 's3.secret-access-key' to credentials that have them",
          e);
    }
    return new IllegalStateException(
        where
            + ": listing it through "
            + e.getClass().getSimpleName()
            + " failed ("
            + rootMessage(e)
            + "); check that the storage is reachable"
            + endpoint(props)
            + " and the catalog's storage properties (s3.*, client.*, hadoop.*)",
        e);
  }

  /** Where the credentials came from, for a message: never the values themselves. */
  private static String credentialSource(Map<String, String> props) {
    return props.containsKey("s3.access-key-id")
        ? " (set by the catalog's 's3.access-key-id')"
        : " (none set: the AWS default credential chain's, from the environment, a profile or"
            + " an instance role)";
  }

  private static String endpoint(Map<String, String> props) {
    String endpoint = props.get("s3.endpoint");
    return endpoint == null ? "" : " at 's3.endpoint' " + endpoint;
  }

  /** The bucket (or host) of a warehouse URI, or the warehouse itself if it has none. */
  static String bucket(String warehouse) {
    try {
      String authority = URI.create(warehouse).getAuthority();
      return authority == null ? warehouse : authority;
    } catch (IllegalArgumentException e) {
      return warehouse;
    }
  }

  private static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getClass().getSimpleName() + ": " + root.getMessage();
  }

  /** The AWS error code ({@code NoSuchBucket}) of the first S3 service error in the chain. */
  private static String errorCode(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      Object details = invoke(t, "awsErrorDetails");
      Object code = details == null ? null : invoke(details, "errorCode");
      if (code instanceof String text && !text.isBlank()) {
        return text;
      }
      if (t.getClass().getSimpleName().equals("NoSuchBucketException")) {
        return "NoSuchBucket";
      }
    }
    return null;
  }

  /** The HTTP status of the first service error in the chain, or -1. */
  private static int statusCode(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (invoke(t, "statusCode") instanceof Integer status) {
        return status;
      }
      String message = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
      if (message.contains("status code: 403")) {
        return 403;
      }
    }
    return -1;
  }

  private static Object invoke(Object target, String method) {
    try {
      Method m = target.getClass().getMethod(method);
      return m.invoke(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
