package io.skade.changelog;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.S3Bucket;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.iceberg.Table;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The changelog law ({@link ChangelogLawTest}) on a warehouse in object storage: a seeded subset of
 * its histories (appends, upserts, key and position deletes, overwrites, schema and partition
 * changes, compactions, expiries) is written to a real S3 server through Iceberg's {@code
 * S3FileIO}, and every window, in every mode and in every slice of a parallel read, is checked
 * against Iceberg's own reader there. The catalog is embedded, its RocksDB store on local disk.
 */
class ChangelogLawOnS3Test {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("law");

  @TempDir Path dir;
  private SkadeCatalog catalog;

  @BeforeEach
  void openCatalog() throws Exception {
    catalog = new SkadeCatalog();
    catalog.initialize("law-s3", s3.catalogProperties(s3.warehouse("wh"), dir.resolve("catalog")));
    catalog.createNamespace(Namespace.of("db"));
  }

  @AfterEach
  void closeCatalog() throws Exception {
    catalog.close();
  }

  /** Two histories of the quick run: one of a primary-key table, one of a log table. */
  static Stream<Arguments> histories() {
    return Stream.of(Arguments.of(20261130L, true), Arguments.of(20261131L, false));
  }

  @ParameterizedTest(name = "seed {0}, primary key {1}")
  @MethodSource("histories")
  void applyingTheChangesOfAWindowOnS3ToItsStartGivesItsEnd(long seed, boolean primaryKey)
      throws Exception {
    ChangelogLawTest.checkWindows(catalog, seed, primaryKey);
    assertOnS3();
  }

  /** The slices of a parallel read, on the log table's history (partitioned by region). */
  @Test
  void eachSliceOfAWindowOnS3ObeysTheLawOnItsOwn() throws Exception {
    ChangelogLawTest.checkSlices(catalog, 20261131L, false);
    assertOnS3();
  }

  /** The history's table lives in the bucket, read through S3FileIO. */
  private void assertOnS3() {
    Table table = catalog.loadTable(TableIdentifier.of("db", "t"));
    assertThat(table.location()).startsWith("s3://law/");
    assertThat(table.io()).isInstanceOf(S3FileIO.class);
    assertThat(table.currentSnapshot().allManifests(table.io())).isNotEmpty();
  }
}
