package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.skade.testing.S3Bucket;
import io.skade.testing.S3Server;
import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A catalog whose warehouse is on S3 checks its access once when it opens: wrong credentials and a
 * missing bucket fail the open with a message naming the catalog, the bucket and the property to
 * fix, before the store's directory is made; right ones open it and serve tables on S3.
 */
class WarehouseAccessTest {
  private static final String BUCKET = "access-check";
  private static final String WRONG_SECRET = "not-the-secret-key";

  @RegisterExtension static final S3Bucket s3 = new S3Bucket(BUCKET);

  @TempDir Path local;

  private Map<String, String> props(String warehouse) {
    return s3.catalogProperties(warehouse, local.resolve("catalog"));
  }

  /** Creates table {@code id} and commits one data file to it (a path only: nothing reads it). */
  static Table createTableOfOneFile(SkadeCatalog catalog, TableIdentifier id, Schema schema) {
    Table table = catalog.createTable(id, schema, PartitionSpec.unpartitioned());
    table
        .newAppend()
        .appendFile(
            DataFiles.builder(PartitionSpec.unpartitioned())
                .withPath(table.location() + "/data/a.parquet")
                .withFileSizeInBytes(10)
                .withRecordCount(1)
                .build())
        .commit();
    return table;
  }

  private static Throwable open(String name, Map<String, String> props) {
    return catchThrowable(
        () -> {
          try (SkadeCatalog catalog = new SkadeCatalog()) {
            catalog.initialize(name, props);
          }
        });
  }

  @Test
  void aWrongSecretFailsTheOpenNamingTheCredentialPropertiesAndNoSecret() {
    Map<String, String> props = props("s3://" + BUCKET + "/wh");
    props.put("s3.secret-access-key", WRONG_SECRET);

    Throwable failure = open("lake", props);

    assertThat(failure)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("skade catalog 'lake'")
        .hasMessageContaining("bucket '" + BUCKET + "'")
        .hasMessageContaining("'s3.access-key-id' and 's3.secret-access-key'")
        .hasMessageContaining("SignatureDoesNotMatch")
        .hasMessageNotContaining(WRONG_SECRET)
        .hasMessageNotContaining(S3Server.SECRET_KEY);
    assertThat(local.resolve("catalog")).doesNotExist();
  }

  @Test
  void anUnknownAccessKeyFailsTheOpenNamingTheCredentialProperties() {
    Map<String, String> props = props("s3://" + BUCKET + "/wh");
    props.put("s3.access-key-id", "nobody");

    assertThat(open("lake", props))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'s3.access-key-id' and 's3.secret-access-key'")
        .hasMessageContaining("InvalidAccessKeyId");
    assertThat(local.resolve("catalog")).doesNotExist();
  }

  @Test
  void aMissingBucketFailsTheOpenNamingTheBucketAndTheWarehouseProperty() {
    Throwable failure = open("lake", props("s3://no-such-bucket/wh"));

    assertThat(failure)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("skade catalog 'lake'")
        .hasMessageContaining("bucket 'no-such-bucket' does not exist")
        .hasMessageContaining(s3.endpoint().toString())
        .hasMessageContaining("fix the property 'warehouse'");
    assertThat(local.resolve("catalog")).doesNotExist();
  }

  @Test
  void rightCredentialsOpenTheCatalogAndItsTablesLiveOnS3() throws Exception {
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableIdentifier id = TableIdentifier.of("shop", "orders");
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("lake", props("s3://" + BUCKET + "/right"));
      catalog.createNamespace(Namespace.of("shop"));
      Table table = createTableOfOneFile(catalog, id, schema);
      assertThat(table.location()).isEqualTo("s3://" + BUCKET + "/right/shop/orders");
    }
    try (SkadeCatalog again = new SkadeCatalog()) {
      again.initialize("lake", props("s3://" + BUCKET + "/right"));
      Table table = again.loadTable(id);
      assertThat(table.currentSnapshot().addedDataFiles(table.io())).hasSize(1);
      assertThat(table.io().newInputFile(table.currentSnapshot().manifestListLocation()).exists())
          .isTrue();
    }
  }
}
