package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.skade.catalog.SharedCatalogs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every bad option of a skade table or catalog fails before anything is opened: the declaration
 * points at a warehouse that does not exist, and after the failed {@code SELECT}, {@code INSERT} or
 * {@code CREATE CATALOG} it still does not. The error skade raises (below Flink's "Unable to create
 * ..." wrapper, which lists all options and so proves nothing) names the option, the bad value and
 * what is accepted.
 */
@Timeout(120)
class SqlOptionsBeforeIoTest {
  private static final String COLUMNS = "id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED";

  @TempDir Path dir;

  /** The warehouse every declaration points at; no test may create it but the controls. */
  Path warehouse;

  @BeforeEach
  void absentWarehouse() {
    warehouse = dir.resolve("warehouse");
  }

  /** A declaration's bad options and the fragments its error must contain. */
  record Bad(String says, List<String> options, List<String> fragments) {
    @Override
    public String toString() {
      return says;
    }
  }

  private static Bad bad(String says, String[] options, String... fragments) {
    return new Bad(says, List.of(options), List.of(fragments));
  }

  private static String[] with(String... options) {
    return options;
  }

  /** Options of a catalog reached through a server, which tables and catalogs share. */
  static Stream<Bad> badServerOptions() {
    return Stream.of(
        bad(
            "a server's uri must be an http address",
            with("uri", "ftp://catalog:21"),
            "'uri'",
            "'ftp://catalog:21'",
            "http://catalog-host:8181"),
        bad(
            "a server's uri excludes a local warehouse",
            with("uri", "http://catalog:8181"),
            "'warehouse'",
            "'uri' = 'http://catalog:8181'",
            "remove 'warehouse'"),
        bad("a token needs a server", with("token", "secret"), "'token'", "skade server ('uri')"),
        bad(
            "a retry timeout needs a server",
            with("server.retry-timeout", "1 min"),
            "'server.retry-timeout'",
            "skade server ('uri')"));
  }

  static Stream<Bad> badTableOptions() {
    return Stream.of(
            badServerOptions(),
            badLineageSinks(),
            Stream.of(
                bad(
                    "an unknown key names the closest known key",
                    with("scan.startup.mood", "latest"),
                    "'scan.startup.mood'",
                    "did you mean 'scan.startup.mode'?",
                    "Supported options"),
                bad(
                    "a known key without its prefix is recognised",
                    with("startup.mode", "latest"),
                    "'startup.mode'",
                    "did you mean 'scan.startup.mode'?"),
                bad(
                    "an unknown startup mode lists the modes",
                    with("scan.startup.mode", "yesterday"),
                    "'scan.startup.mode'",
                    "'yesterday'",
                    "'full', 'latest', 'earliest', 'from-snapshot', 'from-timestamp',"
                        + " 'from-commit-seq' or 'from-consumer'"),
                bad(
                    "an unknown changelog mode lists the modes",
                    with("changelog.mode", "net"),
                    "'changelog.mode'",
                    "'net'",
                    "'per-snapshot' or 'collapsed'"),
                bad(
                    "an unknown before-image lists the kinds",
                    with("changelog.before-image", "none"),
                    "'changelog.before-image'",
                    "'none'",
                    "'full' or 'key-only'"),
                bad(
                    "an unknown lookup cache lists the caches",
                    with("lookup.cache", "BIG"),
                    "'lookup.cache'",
                    "'BIG'",
                    "'NONE', 'PARTIAL' or 'FULL'"),
                bad(
                    "an OpenLineage URL must be a destination",
                    with(
                        "lineage.sink",
                        "openlineage",
                        "lineage.openlineage.url",
                        "ftp://collector"),
                    "'lineage.openlineage.url'",
                    "'ftp://collector'",
                    "file:<path> or console"),
                bad(
                    "an OpenLineage URL without the OpenLineage sink",
                    with("lineage.openlineage.url", "console"),
                    "'lineage.openlineage.url'",
                    "'console'",
                    "'lineage.sink' = 'openlineage'",
                    "'none'"),
                bad(
                    "a zero poll interval",
                    with("scan.poll-interval", "0 s"),
                    "'scan.poll-interval'",
                    "'0 s'",
                    "a positive duration"),
                bad(
                    "a poll interval that is no duration",
                    with("scan.poll-interval", "soon"),
                    "'scan.poll-interval'",
                    "'soon'",
                    "a positive duration such as '500 ms'"),
                bad(
                    "a lookup poll interval that is no duration",
                    with("lookup.poll-interval", "fast"),
                    "'lookup.poll-interval'",
                    "'fast'",
                    "a positive duration"),
                bad(
                    "no async lookup threads",
                    with("lookup.async.threads", "0"),
                    "'lookup.async.threads'",
                    "'0'",
                    "a positive integer"),
                bad(
                    "async lookup threads that are no number",
                    with("lookup.async.threads", "many"),
                    "'lookup.async.threads'",
                    "'many'",
                    "a positive integer"),
                bad(
                    "negative lookup retries",
                    with("lookup.max-retries", "-1"),
                    "'lookup.max-retries'",
                    "'-1'",
                    "0 or a positive integer"),
                bad(
                    "a negative row cache",
                    with("lookup.row-cache.max-rows", "-5"),
                    "'lookup.row-cache.max-rows'",
                    "'-5'",
                    "0 (off) or a positive number of rows"),
                bad(
                    "a zero sink parallelism",
                    with("sink.parallelism", "0"),
                    "'sink.parallelism'",
                    "'0'",
                    "a positive integer"),
                bad(
                    "a sink parallelism that is no number",
                    with("sink.parallelism", "two"),
                    "'sink.parallelism'",
                    "'two'",
                    "a positive integer"),
                bad(
                    "a boolean that is no boolean",
                    with("lookup.async", "yes"),
                    "'lookup.async'",
                    "'yes'",
                    "'true' or 'false'"),
                bad(
                    "a snapshot id that is no number",
                    with("scan.end.snapshot-id", "last"),
                    "'scan.end.snapshot-id'",
                    "'last'",
                    "a snapshot id, an integer"),
                bad(
                    "a negative commit_seq",
                    with("scan.startup.mode", "from-commit-seq", "scan.startup.commit-seq", "-1"),
                    "'scan.startup.commit-seq'",
                    "'-1'",
                    "0 or more"),
                bad(
                    "a negative timestamp",
                    with(
                        "scan.startup.mode",
                        "from-timestamp",
                        "scan.startup.timestamp-millis",
                        "-1"),
                    "'scan.startup.timestamp-millis'",
                    "'-1'",
                    "epoch milliseconds, 0 or more"),
                bad(
                    "a zero PARTIAL cache size",
                    with("lookup.cache", "PARTIAL", "lookup.partial-cache.max-rows", "0"),
                    "'lookup.partial-cache.max-rows'",
                    "'0'",
                    "a positive number of rows"),
                bad(
                    "a PARTIAL cache expiry that is no duration",
                    with(
                        "lookup.cache",
                        "PARTIAL",
                        "lookup.partial-cache.expire-after-write",
                        "later"),
                    "'lookup.partial-cache.expire-after-write'",
                    "'later'",
                    "a positive duration")))
        .flatMap(cases -> cases);
  }

  /** Combinations that only a read rejects: a write ignores startup and lookup settings. */
  static Stream<Bad> badSourceOptions() {
    return Stream.of(
        bad(
            "from-snapshot needs a snapshot id",
            with("scan.startup.mode", "from-snapshot"),
            "'scan.startup.mode' = 'from-snapshot'",
            "needs option 'scan.startup.snapshot-id'",
            "a snapshot id, an integer"),
        bad(
            "from-timestamp needs a timestamp",
            with("scan.startup.mode", "from-timestamp"),
            "'scan.startup.mode' = 'from-timestamp'",
            "needs option 'scan.startup.timestamp-millis'",
            "epoch milliseconds"),
        bad(
            "from-commit-seq needs a commit_seq",
            with("scan.startup.mode", "from-commit-seq"),
            "'scan.startup.mode' = 'from-commit-seq'",
            "needs option 'scan.startup.commit-seq'",
            "a catalog commit_seq"),
        bad(
            "a snapshot id with another mode",
            with("scan.startup.mode", "latest", "scan.startup.snapshot-id", "5"),
            "'scan.startup.snapshot-id' applies only to 'scan.startup.mode' = 'from-snapshot'",
            "the mode is 'latest'",
            "'5'"),
        bad(
            "a commit_seq with the default mode",
            with("scan.startup.commit-seq", "5"),
            "'scan.startup.commit-seq' applies only to 'scan.startup.mode' = 'from-commit-seq'",
            "the mode is 'full'",
            "'5'"),
        bad(
            "a PARTIAL cache needs a bound",
            with("lookup.cache", "PARTIAL"),
            "'lookup.cache' = 'PARTIAL' needs a bound",
            "'lookup.partial-cache.max-rows'",
            "'lookup.partial-cache.expire-after-write'",
            "'lookup.partial-cache.expire-after-access'"),
        bad(
            "a PARTIAL cache option with another cache",
            with("lookup.cache", "FULL", "lookup.partial-cache.max-rows", "100"),
            "'lookup.partial-cache.max-rows' applies only to 'lookup.cache' = 'PARTIAL'",
            "the cache is 'FULL'",
            "'100'"),
        bad(
            "skade's row cache with Flink's cache",
            with(
                "lookup.cache",
                "PARTIAL",
                "lookup.partial-cache.max-rows",
                "100",
                "lookup.row-cache.max-rows",
                "10"),
            "'lookup.row-cache.max-rows' applies only to 'lookup.cache' = 'NONE'",
            "the cache is 'PARTIAL'",
            "'10'"),
        bad(
            "a tag's rows with a startup mode of changes",
            with("scan.tag", "t1", "scan.startup.mode", "latest"),
            "option 'scan.tag' reads the rows of one snapshot ('full')",
            "option 'scan.startup.mode' cannot be set with it"),
        bad(
            "a tag and a branch",
            with("scan.tag", "t1", "scan.branch", "audit"),
            "option 'scan.tag' reads the rows of one snapshot",
            "option 'scan.branch' cannot be set with it"),
        bad(
            "a start tag with a startup mode",
            with("scan.start-tag", "t1", "scan.startup.mode", "earliest"),
            "option 'scan.start-tag' sets where the read starts",
            "option 'scan.startup.mode' cannot be set with it"),
        bad(
            "an end tag with an end snapshot",
            with("scan.end-tag", "t2", "scan.end.snapshot-id", "5"),
            "option 'scan.end-tag' sets where the read ends",
            "option 'scan.end.snapshot-id' cannot be set with it"),
        bad(
            "a blank tag",
            with("scan.tag", " "),
            "option 'scan.tag' is blank",
            "name a tag or branch"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"badTableOptions", "badSourceOptions"})
  void aBadOptionFailsASelectBeforeTheWarehouseIsCreated(Bad bad) {
    TableEnvironment env = SqlTestBase.streaming();
    declare(env, "q", COLUMNS, bad.options());
    assertSkadeError(() -> env.executeSql("SELECT * FROM q"), bad);
  }

  /** Options of a table written, checked when the sink is planned. */
  static Stream<Bad> badSinkOptions() {
    return Stream.of(
        bad(
            "an orphan age below an hour could take a commit in flight",
            with("maintenance.enabled", "true", "maintenance.orphan.min-age", "10 min"),
            "maintenance.orphan.min-age",
            "at least 60 min",
            "in flight"),
        bad(
            "a compaction threshold is positive",
            with("maintenance.compact.data-files", "0"),
            "maintenance.compact.data-files",
            "positive, got 0"),
        bad(
            "a bucket count is a number",
            with("bucket", "many"),
            "'bucket'",
            "'many'",
            "a whole number of buckets, 1 or more"),
        bad("a bucket count is positive", with("bucket", "0"), "'bucket'", "'0'"),
        bad(
            "the bucket key is a key column",
            with("bucket", "4", "bucket-key", "v"),
            "'bucket-key' = 'v'",
            "not a primary key column",
            "[id]"),
        bad(
            "a branch written is named",
            with("sink.branch", " "),
            "option 'sink.branch' is blank",
            "remove the option to write to main"),
        bad(
            "maintenance works on main, not a branch written",
            with("sink.branch", "staging", "maintenance.enabled", "true"),
            "option 'sink.branch' = 'staging' writes to a branch",
            "'maintenance.enabled' = 'true' maintains the table's main branch"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource({"badTableOptions", "badSinkOptions"})
  void aBadOptionFailsAnInsertBeforeTheWarehouseIsCreated(Bad bad) {
    TableEnvironment env = SqlTestBase.batch();
    declare(env, "q", COLUMNS, bad.options());
    assertSkadeError(() -> env.executeSql("INSERT INTO q VALUES (1, 'a')"), bad);
  }

  @Test
  void keyOnlyBeforeImagesWithoutAPrimaryKeyFailBeforeTheWarehouseIsCreated() {
    TableEnvironment env = SqlTestBase.streaming();
    declare(env, "q", "id INT, v STRING", List.of("changelog.before-image", "key-only"));
    assertSkadeError(
        () -> env.executeSql("SELECT * FROM q"),
        bad(
            "key-only without a key",
            with(),
            "'changelog.before-image' = 'key-only'",
            "PRIMARY KEY",
            "'full'"));
  }

  @Test
  void aBatchReadOfChangesFailsBeforeTheWarehouseIsCreated() {
    TableEnvironment env = SqlTestBase.batch();
    declare(env, "q", COLUMNS, List.of("scan.startup.mode", "latest"));
    assertSkadeError(
        () -> env.executeSql("SELECT * FROM q"),
        bad("changes in batch", with(), "'scan.startup.mode' = 'latest'", "batch mode", "'full'"));
  }

  @Test
  void aMissingOrMisspeltWarehouseIsNamed() {
    TableEnvironment missing = SqlTestBase.streaming();
    missing.executeSql("CREATE TABLE q (" + COLUMNS + ") WITH ('connector' = 'skade')");
    assertThat(skadeMessage(catchThrowable(() -> missing.executeSql("SELECT * FROM q"))))
        .contains("needs option 'warehouse'", "or option 'uri'");

    TableEnvironment env = SqlTestBase.streaming();
    env.executeSql(
        "CREATE TABLE q ("
            + COLUMNS
            + ") WITH ('connector' = 'skade',"
            + " 'warehose' = '"
            + warehouse
            + "')");
    assertSkadeError(
        () -> env.executeSql("SELECT * FROM q"),
        bad("a misspelt warehouse", with(), "'warehose'", "did you mean 'warehouse'?"));
  }

  /** Lineage settings a table and a catalog both refuse alike. */
  static Stream<Bad> badLineageSinks() {
    return Stream.of(
        bad(
            "an unknown lineage sink lists the sinks",
            with("lineage.sink", "kafka"),
            "'lineage.sink'",
            "'kafka'",
            "'none', 'table' or 'openlineage'"),
        bad(
            "an OpenLineage sink needs its URL",
            with("lineage.sink", "openlineage"),
            "'lineage.sink' = 'openlineage'",
            "'lineage.openlineage.url'",
            "https://"));
  }

  static Stream<Bad> badCatalogOptions() {
    return Stream.of(
            badServerOptions(),
            badLineageSinks(),
            Stream.of(
                bad(
                    "an unknown key names the closest known key",
                    with("default-databse", "shop"),
                    "'default-databse'",
                    "did you mean 'default-database'?",
                    "Supported options"),
                bad(
                    "an OpenLineage URL must be a destination",
                    with(
                        "lineage.sink", "openlineage", "lineage.openlineage.url", "collector:5000"),
                    "'lineage.openlineage.url'",
                    "'collector:5000'",
                    "file:<path> or console"),
                bad(
                    "an OpenLineage URL without the OpenLineage sink",
                    with("lineage.sink", "table", "lineage.openlineage.url", "console"),
                    "'lineage.openlineage.url'",
                    "'console'",
                    "the sink is 'table'"),
                bad(
                    "a table option is not a catalog option",
                    with("scan.startup.mode", "latest"),
                    "'scan.startup.mode'",
                    "Supported options")))
        .flatMap(cases -> cases);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCatalogOptions")
  void aBadOptionFailsCreateCatalogBeforeTheWarehouseIsCreated(Bad bad) {
    TableEnvironment env = SqlTestBase.batch();
    assertSkadeError(
        () ->
            env.executeSql(
                "CREATE CATALOG c WITH ('type' = 'skade',"
                    + " 'warehouse' = '"
                    + warehouse
                    + "'"
                    + with(bad.options())
                    + ")"),
        bad);
  }

  /**
   * The control: the same declaration with good options does open the warehouse (so its absence
   * above means something): planning the {@code INSERT} creates the table, whose schema Iceberg's
   * own catalog then shows, and a {@code SELECT} of it plans. (Running jobs on good options is what
   * the other SQL tests do.)
   */
  @Test
  void goodOptionsOpenTheWarehouseAndPlan() {
    TableEnvironment env = SqlTestBase.streaming();
    declare(
        env,
        "q",
        COLUMNS,
        List.of(
            "sink.parallelism",
            "1",
            "lookup.cache",
            "PARTIAL",
            "lookup.partial-cache.max-rows",
            "100",
            "changelog.mode",
            "collapsed",
            "scan.startup.mode",
            "from-commit-seq",
            "scan.startup.commit-seq",
            "0",
            "scan.poll-interval",
            "200 ms",
            "lookup.async",
            "true",
            "lookup.async.threads",
            "2"));
    assertThat(env.explainSql("INSERT INTO q VALUES (1, 'a')")).contains("Sink");
    assertThat(warehouse).isDirectory();
    try (SharedCatalogs.Handle catalog =
        SharedCatalogs.acquire(Map.of("warehouse", warehouse.toString()))) {
      Table table = catalog.catalog().loadTable(TableIdentifier.of("default_database", "q"));
      assertThat(table.schema().identifierFieldNames()).containsExactly("id");
      assertThat(table.schema().columns())
          .extracting(Types.NestedField::name)
          .containsExactly("id", "v");
    }
    assertThat(env.explainSql("SELECT * FROM q")).contains("TableSourceScan");
  }

  @Test
  void goodOptionsOpenTheCatalogsWarehouse() {
    TableEnvironment env = SqlTestBase.batch();
    env.executeSql(
        "CREATE CATALOG c WITH ('type' = 'skade', 'warehouse' = '"
            + warehouse
            + "', 'lineage.sink' = 'none', 'default-database' = 'shop')");
    assertThat(warehouse).isDirectory();
    assertThat(env.getCatalog("c").orElseThrow().listDatabases()).contains("shop");
    env.getCatalog("c").orElseThrow().close();
  }

  /**
   * A catalog's table takes table options as hints; a bad one is named the same way (an unknown key
   * only once the table is loaded, as the table's Iceberg properties are options too).
   */
  @Test
  void aCatalogTablesBadOptionsAreNamedToo() {
    TableEnvironment env = SqlTestBase.streaming();
    env.executeSql("CREATE CATALOG c WITH ('type' = 'skade', 'warehouse' = '" + warehouse + "')");
    env.executeSql("CREATE TABLE c.`default`.t (" + COLUMNS + ")");
    try {
      assertThat(
              skadeMessage(
                  catchThrowable(
                      () ->
                          env.executeSql(
                              "SELECT * FROM c.`default`.t"
                                  + " /*+ OPTIONS('scan.startup.mood' = 'latest') */"))))
          .contains("'scan.startup.mood'", "did you mean 'scan.startup.mode'?");
      assertThat(
              skadeMessage(
                  catchThrowable(
                      () ->
                          env.executeSql(
                              "SELECT * FROM c.`default`.t"
                                  + " /*+ OPTIONS('scan.startup.mode' = 'from-timestamp') */"))))
          .contains(
              "'scan.startup.mode' = 'from-timestamp'",
              "needs option 'scan.startup.timestamp-millis'");
      assertThat(
              skadeMessage(
                  catchThrowable(
                      () ->
                          env.executeSql(
                              "SELECT * FROM c.`default`.t"
                                  + " /*+ OPTIONS('lookup.async.threads' = '-2') */"))))
          .contains("'lookup.async.threads'", "'-2'", "a positive integer");
    } finally {
      env.getCatalog("c").orElseThrow().close();
    }
  }

  @Test
  void theClosestKeyIsNearByEditsOrTheKeyWithoutItsPrefix() {
    List<String> known =
        List.of("scan.startup.mode", "scan.startup.snapshot-id", "lookup.cache", "lookup.async");
    assertThat(UnknownKeys.closest("scan.startup.mood", known)).isEqualTo("scan.startup.mode");
    assertThat(UnknownKeys.closest("SCAN.STARTUP.MODE", known)).isEqualTo("scan.startup.mode");
    assertThat(UnknownKeys.closest("scan.startup.snapshot_id", known))
        .isEqualTo("scan.startup.snapshot-id");
    assertThat(UnknownKeys.closest("startup.mode", known)).isEqualTo("scan.startup.mode");
    assertThat(UnknownKeys.closest("parallelism", known)).isNull();
  }

  private void declare(TableEnvironment env, String name, String columns, List<String> options) {
    env.executeSql(
        "CREATE TABLE "
            + name
            + " ("
            + columns
            + ") WITH ('connector' = 'skade',"
            + " 'warehouse' = '"
            + warehouse
            + "'"
            + with(options)
            + ")");
  }

  /** {@code , 'k1' = 'v1', 'k2' = 'v2'}. */
  private static String with(List<String> options) {
    StringBuilder with = new StringBuilder();
    for (int i = 0; i < options.size(); i += 2) {
      with.append(", '")
          .append(options.get(i))
          .append("' = '")
          .append(options.get(i + 1))
          .append('\'');
    }
    return with.toString();
  }

  /**
   * {@code statement} fails with skade's own error containing every fragment of {@code bad}, and
   * the warehouse was not created.
   */
  private void assertSkadeError(ThrowingCallable statement, Bad bad) {
    Throwable thrown = catchThrowable(statement);
    assertThat(thrown).as("the error of: %s", bad.says()).isNotNull();
    String message = skadeMessage(thrown);
    for (String fragment : bad.fragments()) {
      assertThat(message).as("%s; fragment %s", bad.says(), fragment).contains(fragment);
    }
    assertThat(Files.exists(warehouse))
        .as("%s: the warehouse %s was created", bad.says(), warehouse)
        .isFalse();
  }

  /**
   * The message of the error below Flink's "Unable to create a source / sink / catalog" wrapper:
   * skade's own (the wrapper lists every option, so would match anything).
   */
  private static String skadeMessage(Throwable thrown) {
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      if (t.getMessage() != null && t.getMessage().startsWith("Unable to create")) {
        assertThat(t.getCause()).as("the cause of: %s", t.getMessage()).isNotNull();
        return t.getCause().getMessage();
      }
    }
    throw new AssertionError(
        "no 'Unable to create ...' error in "
            + Arrays.toString(
                Stream.iterate(thrown, t -> t != null, Throwable::getCause)
                    .map(Throwable::getMessage)
                    .toArray()));
  }
}
