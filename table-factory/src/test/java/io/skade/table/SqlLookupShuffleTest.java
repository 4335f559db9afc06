package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.connector.source.abilities.SupportsLookupCustomShuffle.InputDataPartitioner;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.Row;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The hint {@code LOOKUP('table'='d', 'shuffle'='true')} on a bucketed skade table: the planner
 * sends the join's input through skade's partitioner, the join returns the rows the join without
 * the hint returns, and the partitioner sends each key to the task of the bucket Iceberg's writer
 * put it in (bucket modulo tasks), at any number of tasks.
 */
class SqlLookupShuffleTest extends SqlTestBase {
  private static final int KEYS = 300;

  @Test
  @Timeout(240)
  void aShuffledLookupJoinSendsEachKeyToItsBucketsTaskAndReturnsTheSameRows() throws Exception {
    TableEnvironment writer = batch();
    createLake(writer);
    writer.executeSql(
        "CREATE TABLE lake.shop.dim (id STRING, n BIGINT, v INT, PRIMARY KEY (id) NOT ENFORCED)"
            + " WITH ('bucket' = '4')");
    StringBuilder rows = new StringBuilder();
    StringBuilder probes = new StringBuilder();
    for (int i = 0; i < KEYS; i++) {
      rows.append(i == 0 ? "" : ", ").append("('k").append(i).append("', ").append(i);
      rows.append(", ").append(i * 10).append(")");
      // Every other probe misses: keys past the table's.
      probes.append(i == 0 ? "" : ", ").append("('k").append(i * 2).append("', ").append(i * 2);
      probes.append(")");
    }
    run(writer, "INSERT INTO lake.shop.dim VALUES " + rows);

    TableEnvironment join = streaming();
    join.getConfig().set("parallelism.default", "2");
    openLake(join);
    join.executeSql(
        "CREATE TEMPORARY VIEW probes AS SELECT CAST(k AS STRING) AS k, CAST(n AS BIGINT) AS n,"
            + " PROCTIME() AS proc_time FROM (VALUES "
            + probes
            + ") AS t(k, n)");
    String query =
        "SELECT %s p.k, d.v FROM probes AS p LEFT JOIN lake.shop.dim FOR SYSTEM_TIME AS OF"
            + " p.proc_time AS d ON p.k = d.id AND p.n = d.n";
    String shuffled = String.format(query, "/*+ LOOKUP('table'='d', 'shuffle'='true') */");
    assertThat(join.explainSql(shuffled)).as("the plan").contains("shuffle=[true]");
    // skade's partitioner between the input and the join: Flink ships rows by it (CUSTOM).
    assertThat(shipStrategies(join, shuffled)).contains("CUSTOM");
    assertThat(shipStrategies(join, String.format(query, ""))).doesNotContain("CUSTOM");

    List<String> expected = sorted(collect(join, String.format(query, "")));
    assertThat(expected).hasSize(KEYS).contains("+I[k2, 20]", "+I[k" + (KEYS + 2) + ", null]");
    assertThat(sorted(collect(join, shuffled))).isEqualTo(expected);

    // The lookup keys in the order Flink passes them to the partitioner: id, n.
    Table table = catalog.catalog().loadTable(TableIdentifier.of("shop", "dim"));
    InputDataPartitioner partitioner =
        BucketShuffle.of(table)
            .flatMap(
                buckets ->
                    buckets.partitioner(
                        List.of("id", "n"),
                        RowType.of(new VarCharType(VarCharType.MAX_LENGTH), new BigIntType())))
            .orElseThrow();
    for (int i = 0; i < KEYS; i += 7) {
      int bucket = writtenBucket(table, "k" + i);
      for (int tasks : new int[] {1, 2, 3}) {
        assertThat(
                partitioner.partition(GenericRowData.of(StringData.fromString("k" + i), 1L), tasks))
            .as("key k%d, in bucket %d, at %d tasks", i, bucket, tasks)
            .isEqualTo(bucket % tasks);
      }
    }
    assertThat(
            BucketShuffle.of(table)
                .flatMap(
                    buckets -> buckets.partitioner(List.of("n"), RowType.of(new BigIntType()))))
        .as("keys without the bucketed column")
        .isEqualTo(Optional.empty());
  }

  /** The bucket of the data file Iceberg's scan finds key {@code id} in. */
  private static int writtenBucket(Table table, String id) throws Exception {
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().filter(Expressions.equal("id", id)).planFiles()) {
      List<Integer> buckets =
          java.util.stream.StreamSupport.stream(tasks.spliterator(), false)
              .map(task -> task.file().partition().get(0, Integer.class))
              .distinct()
              .toList();
      assertThat(buckets).as("the buckets holding %s", id).hasSize(1);
      return buckets.get(0);
    }
  }

  /** The ship strategies of the job's edges, as Flink's execution plan names them. */
  private static List<String> shipStrategies(TableEnvironment env, String query) {
    String plan = env.explainSql(query, ExplainDetail.JSON_EXECUTION_PLAN);
    List<String> strategies = new ArrayList<>();
    Matcher matcher = Pattern.compile("\"ship_strategy\"\\s*:\\s*\"([^\"]+)\"").matcher(plan);
    while (matcher.find()) {
      strategies.add(matcher.group(1));
    }
    assertThat(strategies).as("the ship strategies in %s", plan).isNotEmpty();
    return strategies;
  }

  private static List<String> sorted(List<Row> rows) {
    return rows.stream().map(Row::toString).sorted().toList();
  }
}
