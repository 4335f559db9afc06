package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which joins of two skade tables Flink 2.1's planner makes a delta join: an inner equi-join of
 * tables of a {@code skade} catalog (whose indexes it declares) that are read append-only and
 * looked up asynchronously, on keys holding an index of each, into an upsert sink; any other shape
 * or option leaves the regular join.
 */
class SqlDeltaJoinPlanTest extends SqlTestBase {
  /** What makes a skade table a delta join's input: an insert-only read, asynchronous probes. */
  static final String DELTA_JOIN_OPTIONS = "'scan.append-only' = 'true', 'lookup.async' = 'true'";

  private static final String HINT = "/*+ OPTIONS(" + DELTA_JOIN_OPTIONS + ") */";

  private TableEnvironment env;

  @BeforeEach
  void createTables() {
    env = streaming();
    createLake(env);
    createTables(env, "lake.shop");
  }

  /**
   * {@code orders}, keyed by {@code order_id}, and {@code shipments}, a log table bucketed by
   * {@code order_id}, in {@code database}; {@code enriched}, their join, keyed by both ids.
   */
  static void createTables(TableEnvironment env, String database) {
    env.executeSql(
        "CREATE TABLE "
            + database
            + ".orders (order_id BIGINT, customer STRING,"
            + " amount INT, PRIMARY KEY (order_id) NOT ENFORCED) WITH ('bucket' = '4')");
    env.executeSql(
        "CREATE TABLE "
            + database
            + ".shipments (shipment_id BIGINT,"
            + " order_id BIGINT, carrier STRING) WITH ('bucket' = '4', 'bucket-key' = 'order_id')");
    env.executeSql(
        "CREATE TABLE "
            + database
            + ".enriched (order_id BIGINT,"
            + " shipment_id BIGINT, customer STRING, amount INT, carrier STRING,"
            + " PRIMARY KEY (order_id, shipment_id) NOT ENFORCED)");
  }

  /** The join of orders and shipments as docs/lookups.md shows it. */
  static String join(String database, String hint) {
    return "INSERT INTO "
        + database
        + ".enriched SELECT o.order_id, s.shipment_id, o.customer,"
        + " o.amount, s.carrier FROM "
        + database
        + ".orders "
        + hint
        + " AS o JOIN "
        + database
        + ".shipments "
        + hint
        + " AS s ON o.order_id = s.order_id";
  }

  private String plan(String statement) {
    String explained = env.explainSql(statement);
    // The optimized plans, without the abstract syntax tree (which names LogicalJoin always).
    return explained.substring(explained.indexOf("== Optimized Physical Plan =="));
  }

  private static void assertRegularJoin(String plan) {
    assertThat(plan).doesNotContain("DeltaJoin").contains("Join(joinType=");
  }

  @Test
  void anInnerJoinOfAppendOnlyTablesOnTheirIndexesIsADeltaJoin() {
    String plan = plan(join("lake.shop", HINT));

    assertThat(plan)
        .contains("DeltaJoin(joinType=[InnerJoin], where=[(order_id = order_id0)]")
        .doesNotContain(" Join(");
  }

  @Test
  void theCatalogDeclaresTheKeyAndTheKeyPartitioningAsIndexes() throws Exception {
    env.executeSql(
        "CREATE TABLE lake.shop.lines (order_id BIGINT, line INT, sku STRING,"
            + " PRIMARY KEY (order_id, line) NOT ENFORCED) WITH ('bucket' = '2',"
            + " 'bucket-key' = 'order_id')");
    env.executeSql("CREATE TABLE lake.shop.events (id BIGINT, kind STRING)");

    assertThat(indexes("orders")).isEqualTo("[[order_id]]"); // bucketed by its key: the same
    assertThat(indexes("shipments")).isEqualTo("[[order_id]]");
    assertThat(indexes("lines")).isEqualTo("[[line, order_id], [order_id]]");
    assertThat(indexes("events")).isEqualTo("[]");
  }

  private String indexes(String table) throws Exception {
    return env
        .getCatalog("lake")
        .orElseThrow()
        .getTable(new org.apache.flink.table.catalog.ObjectPath("shop", table))
        .getUnresolvedSchema()
        .getIndexes()
        .stream()
        .map(index -> index.getColumnNames().toString())
        .toList()
        .toString();
  }

  @Test
  void aLeftJoinStaysARegularJoin() {
    assertRegularJoin(plan(join("lake.shop", HINT).replace(" JOIN ", " LEFT JOIN ")));
  }

  @Test
  void aJoinOnColumnsHoldingNoIndexStaysARegularJoin() {
    assertRegularJoin(
        plan(join("lake.shop", HINT).replace("o.order_id = s.order_id", "o.customer = s.carrier")));
  }

  @Test
  void aChangelogReadStaysARegularJoin() {
    assertRegularJoin(plan(join("lake.shop", "/*+ OPTIONS('lookup.async' = 'true') */")));
  }

  @Test
  void synchronousLookupsLeaveARegularJoin() {
    assertRegularJoin(plan(join("lake.shop", "/*+ OPTIONS('scan.append-only' = 'true') */")));
  }

  @Test
  void anAppendOnlySinkStaysARegularJoin() {
    // The delta join may emit a joined row twice; only a sink with a key absorbs that.
    env.executeSql(
        "CREATE TABLE lake.shop.enriched_log (order_id BIGINT, shipment_id BIGINT,"
            + " customer STRING, amount INT, carrier STRING)");
    assertRegularJoin(plan(join("lake.shop", HINT).replace("shop.enriched", "shop.enriched_log")));
  }

  @Test
  void aPushedProjectionOrFilterLeavesARegularJoinInFlink21() {
    // Flink 2.1 plans a delta join only over sources without pushed-down abilities.
    assertRegularJoin(plan(join("lake.shop", HINT).replace("o.amount", "0")));
    assertRegularJoin(plan(join("lake.shop", HINT) + " WHERE s.carrier = 'post'"));
  }
}
