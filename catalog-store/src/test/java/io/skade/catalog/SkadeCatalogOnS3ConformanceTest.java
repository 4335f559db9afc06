package io.skade.catalog;

import io.skade.testing.S3Bucket;
import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Iceberg's catalog conformance suite against the embedded catalog with its warehouse on S3 (a real
 * S3-compatible server, through Iceberg's {@code S3FileIO}) and its RocksDB store in a local
 * directory: one server and one bucket for the class, a warehouse prefix of its own per catalog.
 */
class SkadeCatalogOnS3ConformanceTest extends SkadeCatalogConformanceTest {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("conformance");

  /** {@code s3://conformance/<unique>/wh<n>}, its store in {@code root}, S3FileIO at the server. */
  @Override
  protected Map<String, String> warehouse(Path root, int n) {
    return s3.catalogProperties(s3.warehouse("wh" + n), root.resolve("catalog" + n));
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
