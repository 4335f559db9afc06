package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import org.apache.flink.table.api.TableEnvironment;
import org.assertj.core.api.AbstractStringAssert;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Declarations that fit the table only once it is known fail at planning with an error naming the
 * option or column. Bad option values, which fail before any I/O, are {@link
 * SqlOptionsBeforeIoTest}'s.
 */
@Timeout(120)
class SqlOptionsTest extends SqlTestBase {
  private static final String COLUMNS = "id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED";

  @BeforeEach
  void existingTable() throws Exception {
    TableEnvironment env = batch();
    declare(env, "t", COLUMNS);
    run(env, "INSERT INTO t VALUES (1, 'a')");
  }

  private AbstractStringAssert<?> selecting(String columns, String... options) {
    TableEnvironment env = streaming();
    declare(env, "q", columns, withTable(options));
    return failure(() -> env.executeSql("SELECT * FROM q"));
  }

  /** The messages of the error {@code statement} fails with and of all its causes. */
  private static AbstractStringAssert<?> failure(ThrowingCallable statement) {
    Throwable thrown = catchThrowable(statement);
    assertThat(thrown).as("an error").isNotNull();
    StringBuilder messages = new StringBuilder();
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      messages.append(t.getMessage()).append('\n');
    }
    return assertThat(messages.toString());
  }

  private static String[] withTable(String... options) {
    String[] all = new String[options.length + 2];
    all[0] = "table";
    all[1] = "t";
    System.arraycopy(options, 0, all, 2, options.length);
    return all;
  }

  @Test
  void aSnapshotThatDoesNotExist() {
    selecting(COLUMNS, "scan.startup.mode", "from-snapshot", "scan.startup.snapshot-id", "42")
        .contains("42");
  }

  @Test
  void incompatibleDdl() {
    selecting("id BIGINT, v STRING, extra INT, PRIMARY KEY (id) NOT ENFORCED")
        .contains("column 'id': DDL type BIGINT, table type int")
        .contains("column 'extra': not in the table");
    selecting("id INT, v STRING, PRIMARY KEY (v) NOT ENFORCED")
        .contains("primary key: declared [v]");

    TableEnvironment env = batch();
    declare(env, "w", "v STRING, id INT NOT NULL", withTable());
    failure(() -> env.executeSql("INSERT INTO w VALUES ('x', 2)"))
        .contains("declared in the order [v, id]")
        .contains("primary key: declared []");
  }

  @Test
  void missingTableForASource() throws Exception {
    TableEnvironment env = batch();
    declare(env, "other", COLUMNS); // a second table in the namespace
    run(env, "INSERT INTO other VALUES (1, 'a')");
    selecting(COLUMNS, "table", "nope")
        .contains("skade table default_database.nope does not exist")
        .contains("other, t");
  }

  @Test
  void validDeclarationsStillPlan() {
    TableEnvironment env = streaming();
    declare(
        env,
        "q",
        COLUMNS,
        withTable(
            "scan.startup.mode",
            "from-commit-seq",
            "scan.startup.commit-seq",
            "0",
            "changelog.mode",
            "collapsed",
            "changelog.before-image",
            "key-only",
            "scan.poll-interval",
            "200 ms",
            "scan.consumer-id",
            "test"));
    assertThat(env.explainSql("SELECT * FROM q")).contains("TableSourceScan");
  }
}
