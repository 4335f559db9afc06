package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.testing.S3Server;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.NotFoundException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Iceberg's catalog conformance suite against the embedded catalog with its warehouse on S3 (a real
 * S3-compatible server, through Iceberg's {@code S3FileIO}) and its RocksDB store in a local
 * directory: one server and one bucket for the class, a warehouse prefix of its own per catalog.
 */
class SkadeCatalogOnS3ConformanceTest extends SkadeCatalogConformanceTest {
  private static final String BUCKET = "conformance";

  /** The class's own prefix in the bucket, so that runs never meet. */
  private static final String RUN = "s3://" + BUCKET + "/" + UUID.randomUUID();

  @TempDir static Path s3Dir;
  static S3Server s3;

  @BeforeAll
  static void startS3() throws Exception {
    s3 = S3Server.start(s3Dir.resolve("s3"));
    s3.bucket(BUCKET);
  }

  @AfterAll
  static void stopS3() throws Exception {
    s3.close();
  }

  /** {@code s3://conformance/<unique>/wh<n>}, its store in {@code root}, S3FileIO at the server. */
  @Override
  protected Map<String, String> warehouse(Path root, int n) {
    Map<String, String> props = new HashMap<>(s3.fileIoProperties());
    props.put(CatalogProperties.WAREHOUSE_LOCATION, RUN + "/" + UUID.randomUUID() + "/wh" + n);
    props.put(SkadeCatalog.CATALOG_PATH, root.resolve("catalog" + n).toString());
    return props;
  }

  /** Where the suite's tables with a requested location go: on S3 too, not under file:/tmp. */
  @Override
  protected String baseTableLocation(TableIdentifier identifier) {
    return RUN + "/requested/" + identifier.namespace() + "/" + identifier.name();
  }

  /**
   * The suite moves the metadata file away on the local disk; on S3 the object is deleted instead,
   * and loading the table fails naming it.
   */
  @Test
  @Override
  public void testLoadTableWithMissingMetadataFile(@TempDir Path ignored) {
    SkadeCatalog catalog = catalog();
    catalog.createNamespace(TBL.namespace());
    catalog.buildTable(TBL, SCHEMA).create();
    Table table = catalog.loadTable(TBL);
    String metadata = ((HasTableOperations) table).operations().current().metadataFileLocation();
    assertThat(metadata).startsWith("s3://" + BUCKET + "/");
    table.io().deleteFile(metadata);

    assertThatThrownBy(() -> catalog.loadTable(TBL))
        .isInstanceOf(NotFoundException.class)
        .hasMessageContaining(metadata);
  }
}
