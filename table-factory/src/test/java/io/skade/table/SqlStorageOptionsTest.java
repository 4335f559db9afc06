package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeRuntime;
import io.skade.testing.S3Bucket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog's storage properties ({@code io-impl}, {@code s3.*}, {@code client.*}, ...) in a
 * skade table's or catalog's options reach the catalog as Iceberg names them: a warehouse on S3
 * works from SQL. A bad value among them fails before any I/O, naming the key; wrong credentials or
 * a missing bucket fail the planning, naming the property to fix, before any job runs, and leave no
 * catalog directory behind.
 */
@Timeout(180)
class SqlStorageOptionsTest {
  private static final String COLUMNS = "id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED";
  private static final String BUCKET = "sql-storage";

  @RegisterExtension static final S3Bucket s3 = new S3Bucket(BUCKET);

  @TempDir Path dir;
  private int warehouses;

  @AfterEach
  void closeStores() {
    SkadeRuntime.reset();
  }

  /** A new warehouse on S3 with its store in a local directory that does not exist yet. */
  private Map<String, String> lake(String bucket) {
    int n = warehouses++;
    return s3.catalogProperties("s3://" + bucket + "/wh" + n, dir.resolve("catalog" + n));
  }

  private static String with(Map<String, String> options) {
    StringBuilder with = new StringBuilder();
    options.forEach(
        (key, value) -> with.append(", '").append(key).append("' = '").append(value).append('\''));
    return with.toString();
  }

  private static void declare(TableEnvironment env, Map<String, String> options) {
    env.executeSql(
        "CREATE TABLE q (" + COLUMNS + ") WITH ('connector' = 'skade'" + with(options) + ")");
  }

  private static String createCatalog(Map<String, String> options) {
    return "CREATE CATALOG c WITH ('type' = 'skade'" + with(options) + ")";
  }

  /**
   * The message of skade's own error in the chain: the first that names a skade option or catalog.
   */
  private static String skadeMessage(Throwable thrown) {
    assertThat(thrown).isNotNull();
    return Stream.iterate(thrown, t -> t != null, Throwable::getCause)
        .map(Throwable::getMessage)
        .filter(m -> m != null && (m.startsWith("option '") || m.startsWith("skade catalog '")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no skade error in the chain", thrown));
  }

  @Test
  void storageOptionsReachTheCatalogSoATablesRowsLiveOnS3() throws Exception {
    Map<String, String> options = lake(BUCKET);
    TableEnvironment writer = SqlTestBase.batch();
    declare(writer, options);
    writer.executeSql("INSERT INTO q VALUES (1, 'a'), (2, 'b')").await();

    TableEnvironment reader = SqlTestBase.batch();
    declare(reader, options);
    List<Row> rows = new ArrayList<>();
    reader.executeSql("SELECT id, v FROM q").collect().forEachRemaining(rows::add);
    assertThat(rows).extracting(Row::toString).containsExactlyInAnyOrder("+I[1, a]", "+I[2, b]");

    try (SharedCatalogs.Handle catalog = SharedCatalogs.acquire(options)) {
      Table table = catalog.catalog().loadTable(TableIdentifier.of("default_database", "q"));
      assertThat(table.location()).startsWith("s3://" + BUCKET + "/");
      assertThat(table.currentSnapshot().addedDataFiles(table.io()))
          .allSatisfy(file -> assertThat(file.location()).startsWith("s3://" + BUCKET + "/"));
    }
  }

  @Test
  void aCatalogsStorageOptionsReachItsTables() {
    Map<String, String> options = lake(BUCKET);
    TableEnvironment env = SqlTestBase.batch();
    env.executeSql(createCatalog(options));
    try {
      env.executeSql("CREATE DATABASE c.shop");
      env.executeSql("CREATE TABLE c.shop.t (" + COLUMNS + ")");
      assertThat(env.explainSql("INSERT INTO c.shop.t VALUES (1, 'a')")).contains("Sink");
    } finally {
      env.getCatalog("c").orElseThrow().close();
    }
    try (SharedCatalogs.Handle catalog = SharedCatalogs.acquire(options)) {
      assertThat(catalog.catalog().loadTable(TableIdentifier.of("shop", "t")).location())
          .startsWith(options.get("warehouse") + "/shop/t");
    }
  }

  @Test
  void aLookupJoinOnS3KeepsWhatItReadsInTheDefaultDiskCacheUnlessTurnedOff() throws Exception {
    Map<String, String> options = lake(BUCKET);
    TableEnvironment writer = SqlTestBase.batch();
    declare(writer, options);
    writer.executeSql("INSERT INTO q VALUES (1, 'a'), (2, 'b')").await();
    String query =
        "SELECT p.k, d.v FROM probes AS p LEFT JOIN q%s FOR SYSTEM_TIME AS OF p.proc_time AS d"
            + " ON p.k = d.id";
    String jvmTmp = System.getProperty("java.io.tmpdir");
    try {
      for (boolean enabled : new boolean[] {true, false}) {
        SkadeRuntime.reset(); // the JVM's lookups share one disk cache: each join its own JVM's
        Path tmp = Files.createDirectories(dir.resolve("jvm-tmp-" + enabled));
        System.setProperty("java.io.tmpdir", tmp.toString());
        TableEnvironment join = SqlTestBase.streaming();
        declare(join, options);
        join.executeSql(
            "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS proc_time"
                + " FROM (VALUES (1), (2), (3)) AS t(k)");
        String hint = enabled ? "" : " /*+ OPTIONS('lookup.disk-cache.enabled' = 'false') */";
        assertThat(SqlTestBase.collect(join, String.format(query, hint)))
            .extracting(Row::toString)
            .containsExactlyInAnyOrder("+I[1, a]", "+I[2, b]", "+I[3, null]");

        List<Path> ranges;
        try (Stream<Path> files = Files.walk(tmp)) {
          ranges = files.filter(f -> f.toString().endsWith(".range")).toList();
        }
        if (enabled) {
          assertThat(ranges)
              .as("ranges kept under java.io.tmpdir")
              .isNotEmpty()
              .allSatisfy(
                  f ->
                      assertThat(f.toString())
                          .startsWith(tmp.resolve("skade-lookup-cache-").toString()));
        } else {
          assertThat(ranges).as("ranges kept with the disk cache off").isEmpty();
        }
      }
    } finally {
      System.setProperty("java.io.tmpdir", jvmTmp);
    }
  }

  @Test
  void aDiskCacheDirectoryWithTheDiskCacheOffFailsNamingBothOptions() {
    Map<String, String> options = new java.util.HashMap<>(lake(BUCKET));
    options.put("lookup.disk-cache.enabled", "false");
    options.put("lookup.disk-cache.dir", dir.resolve("cache").toString());
    TableEnvironment env = SqlTestBase.streaming();
    declare(env, options);
    env.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT k, PROCTIME() AS proc_time"
            + " FROM (VALUES (1)) AS t(k)");

    Throwable thrown =
        catchThrowable(
            () ->
                env.explainSql(
                    "SELECT p.k, d.v FROM probes AS p JOIN q FOR SYSTEM_TIME AS OF p.proc_time"
                        + " AS d ON p.k = d.id"));

    assertThat(skadeMessage(thrown))
        .contains("'lookup.disk-cache.dir'", "'lookup.disk-cache.enabled' = 'false'");
    assertThat(dir.resolve("cache")).doesNotExist();
  }

  @Test
  void aStorageValueOfTheWrongTypeFailsBeforeAnyIo() {
    Map<String, String> options = lake(BUCKET);
    options.put("s3.path-style-access", "maybe");

    TableEnvironment env = SqlTestBase.streaming();
    declare(env, options);
    assertThat(skadeMessage(catchThrowable(() -> env.explainSql("SELECT * FROM q"))))
        .contains("'s3.path-style-access'", "'maybe'", "'true' or 'false'");
    assertThat(
            skadeMessage(
                catchThrowable(() -> SqlTestBase.batch().executeSql(createCatalog(options)))))
        .contains("'s3.path-style-access'", "'maybe'");
    assertThat(Path.of(options.get("catalog.path"))).doesNotExist();
  }

  @Test
  void anEndpointThatIsNoAddressAndALoneSecretFailBeforeAnyIo() {
    Map<String, String> endpoint = lake(BUCKET);
    endpoint.put("s3.endpoint", "minio:9000");
    TableEnvironment env = SqlTestBase.streaming();
    declare(env, endpoint);
    assertThat(skadeMessage(catchThrowable(() -> env.explainSql("SELECT * FROM q"))))
        .contains("'s3.endpoint'", "'minio:9000'", "http://");

    Map<String, String> lone = lake(BUCKET);
    lone.remove("s3.access-key-id");
    String secret = lone.get("s3.secret-access-key");
    String message =
        skadeMessage(catchThrowable(() -> SqlTestBase.batch().executeSql(createCatalog(lone))));
    assertThat(message)
        .contains("'s3.secret-access-key' is set without 's3.access-key-id'")
        .doesNotContain(secret);
    assertThat(Path.of(endpoint.get("catalog.path"))).doesNotExist();
    assertThat(Path.of(lone.get("catalog.path"))).doesNotExist();
  }

  @Test
  void wrongCredentialsFailThePlanningNamingTheCredentialProperties() {
    Map<String, String> options = lake(BUCKET);
    options.put("s3.secret-access-key", "wrong-secret");

    TableEnvironment env = SqlTestBase.streaming();
    declare(env, options);
    String select = skadeMessage(catchThrowable(() -> env.explainSql("SELECT * FROM q")));
    String catalog =
        skadeMessage(catchThrowable(() -> SqlTestBase.batch().executeSql(createCatalog(options))));

    for (String message : List.of(select, catalog)) {
      assertThat(message)
          .contains(
              "bucket '" + BUCKET + "'",
              "'s3.access-key-id' and 's3.secret-access-key'",
              "SignatureDoesNotMatch")
          .doesNotContain("wrong-secret");
    }
    assertThat(Path.of(options.get("catalog.path"))).doesNotExist();
  }

  @Test
  void aMissingBucketFailsThePlanningNamingTheBucketAndTheWarehouse() {
    Map<String, String> options = lake("no-such-bucket");

    TableEnvironment env = SqlTestBase.batch();
    declare(env, options);
    String insert =
        skadeMessage(catchThrowable(() -> env.explainSql("INSERT INTO q VALUES (1, 'a')")));
    String catalog =
        skadeMessage(catchThrowable(() -> SqlTestBase.batch().executeSql(createCatalog(options))));

    for (String message : List.of(insert, catalog)) {
      assertThat(message)
          .contains("bucket 'no-such-bucket' does not exist", "fix the property 'warehouse'");
    }
    assertThat(Path.of(options.get("catalog.path"))).doesNotExist();
  }
}
