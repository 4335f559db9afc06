package io.skade.server;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.S3Bucket;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Iceberg's catalog conformance suite through Iceberg's REST client against a skade server whose
 * warehouse is on S3 (a real S3-compatible server, one for the class; Iceberg's {@code S3FileIO}),
 * its RocksDB store in a local directory.
 *
 * <p>The client is given the same file-IO properties as the server ({@link #clientProperties}): it
 * writes manifests and data files itself. Where the server also hands them out in {@code
 * /v1/config}, the client's own are the same values, so the suite passes either way.
 */
class RestCatalogOnS3ConformanceTest extends RestCatalogConformanceTest {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("rest-conformance");

  /** {@code s3://rest-conformance/<class run>/<test>/<name>}: a new prefix per server. */
  @Override
  protected String warehouse(Path root, String name) {
    return s3.warehouse(name);
  }

  /** The server's store in a local directory, its file IO on the S3 server. */
  @Override
  protected Map<String, String> serverProperties(Path root, String name) {
    Map<String, String> props = new HashMap<>(s3.fileIoProperties());
    props.put(SkadeCatalog.CATALOG_PATH, root.resolve(name + "-catalog").toString());
    return props;
  }

  @Override
  protected Map<String, String> clientProperties() {
    return s3.fileIoProperties();
  }

  /** Where the suite's tables with a requested location go: on S3 too, not under file:/tmp. */
  @Override
  protected String baseTableLocation(TableIdentifier identifier) {
    return s3.run() + "/requested/" + identifier.namespace() + "/" + identifier.name();
  }

  /**
   * The suite moves the metadata file away on the local disk; on S3 the object is deleted instead,
   * and loading the table fails naming it.
   */
  @Test
  @Override
  public void testLoadTableWithMissingMetadataFile(@TempDir Path ignored) {
    s3.assertLoadWithoutMetadataFileFailsNamingIt(catalog(), TBL, SCHEMA);
  }
}
