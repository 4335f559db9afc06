package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.lookup.LookupCaches;
import io.skade.lookup.PointLookup;
import io.skade.source.SkadeSource;
import io.skade.source.StartupMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.transforms.Transforms;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@code 'bucket' = 'N'} from SQL: the table is Iceberg's {@code bucket(key, N)}, its sink writes
 * each bucket from one writer, a CDC read at parallelism 4 of 8 buckets gives every reader splits
 * and its changes, applied strictly in the order each reader emitted them, equal the table, and a
 * lookup reads one file; bad bucket options are named.
 */
class SqlBucketTest extends SqlTestBase {
  /** Which source subtask emitted changes, per test run (the MiniCluster is in this JVM). */
  private static final Map<Integer, Integer> READERS = new ConcurrentHashMap<>();

  @Test
  void aBucketedTableIsWrittenReadAndLookedUpByBucket() throws Exception {
    TableEnvironment sql = batch();
    createLake(sql);
    sql.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, amount BIGINT, note STRING,"
            + " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '8')");
    Table orders = catalog.catalog().loadTable(TableIdentifier.of("shop", "orders"));
    assertThat(orders.spec().fields())
        .extracting(PartitionField::transform)
        .map(Object::toString)
        .containsExactly("bucket[8]");
    assertThat(orders.properties())
        .containsEntry(TableProperties.WRITE_DISTRIBUTION_MODE, "hash")
        .doesNotContainKey("bucket");

    sql.getConfig().set("parallelism.default", "4");
    for (int round = 0; round < 4; round++) {
      StringBuilder values = new StringBuilder();
      for (int id = 0; id < 200; id += round + 1) {
        values
            .append(values.length() == 0 ? "" : ", ")
            .append("(")
            .append(id)
            .append(", ")
            .append(round)
            .append(", 'r")
            .append(round)
            .append("')");
      }
      run(sql, "INSERT INTO lake.shop.orders VALUES " + values);
    }
    orders.refresh();
    for (Snapshot snapshot : orders.snapshots()) {
      Map<Object, Integer> filesPerBucket = new HashMap<>();
      for (DataFile file : snapshot.addedDataFiles(orders.io())) {
        filesPerBucket.merge(file.partition().get(0, Integer.class), 1, Integer::sum);
      }
      assertThat(filesPerBucket.values())
          .as("data files per bucket in one commit, with" + " four writers")
          .allMatch(count -> count == 1);
    }

    Map<Long, String> mirror = readChanges();
    Map<Long, String> expected = new HashMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(orders).build()) {
      rows.forEach(
          r ->
              expected.put(
                  r.get(0, Long.class), r.get(1, Long.class) + " " + r.get(2, String.class)));
    }
    assertThat(mirror).isEqualTo(expected);
    assertThat(READERS.keySet())
        .as("readers that emitted changes")
        .containsExactlyInAnyOrder(0, 1, 2, 3);

    try (LookupCaches.Handle caches = LookupCaches.acquire()) {
      PointLookup.Counters counters = new PointLookup.Counters();
      PointLookup lookup = new PointLookup(orders, List.of("id"), caches.caches(), counters);
      assertThat(lookup.lookup(null, List.of(12L))).hasSize(1);
      int bucket = Transforms.bucket(8).bind(Types.LongType.get()).apply(12L);
      int inItsBucket = 0;
      int all = 0;
      try (CloseableIterable<FileScanTask> tasks = orders.newScan().planFiles()) {
        for (FileScanTask task : tasks) {
          all++;
          inItsBucket += task.file().partition().get(0, Integer.class) == bucket ? 1 : 0;
        }
      }
      assertThat(inItsBucket).isLessThan(all);
      assertThat(counters.stats().fileOpens())
          .as("files one lookup opens: only its bucket's")
          .isPositive()
          .isLessThanOrEqualTo(inItsBucket);
    }
  }

  @Test
  void scanParallelismSetsTheReaders() {
    TableEnvironment sql = streaming();
    createLake(sql);
    sql.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, v STRING,"
            + " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '8')");
    String plan =
        sql.explainSql(
            "SELECT * FROM lake.shop.orders /*+ OPTIONS(" + "'scan.parallelism' = '3') */",
            ExplainDetail.JSON_EXECUTION_PLAN);
    Matcher source =
        Pattern.compile("\"type\" : \"Source: orders.*?\"parallelism\" : (\\d+)", Pattern.DOTALL)
            .matcher(plan);
    assertThat(source.find()).as("the source in %s", plan).isTrue();
    assertThat(source.group(1)).isEqualTo("3");
  }

  @Test
  void badBucketOptionsAreNamed() {
    TableEnvironment sql = batch();
    createLake(sql);
    assertThatThrownBy(
            () ->
                sql.executeSql(
                    "CREATE TABLE lake.shop.a (id BIGINT, PRIMARY KEY"
                        + " (id) NOT ENFORCED) WITH ('bucket' = '0')"))
        .rootCause()
        .isInstanceOf(ValidationException.class)
        .hasMessageContaining("'bucket' = '0'");
    assertThatThrownBy(
            () ->
                sql.executeSql(
                    "CREATE TABLE lake.shop.b (id BIGINT, v STRING,"
                        + " PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4', 'bucket-key' = 'v')"))
        .rootCause()
        .hasMessageContaining("'bucket-key' = 'v'")
        .hasMessageContaining("not a primary key column");
    assertThatThrownBy(
            () ->
                sql.executeSql(
                    "CREATE TABLE lake.shop.c (a BIGINT, b BIGINT,"
                        + " PRIMARY KEY (a, b) NOT ENFORCED) WITH ('bucket' = '4')"))
        .rootCause()
        .hasMessageContaining("composite primary key [a, b]")
        .hasMessageContaining("bucket-key");
    assertThatThrownBy(
            () -> sql.executeSql("CREATE TABLE lake.shop.d (a BIGINT) WITH" + " ('bucket' = '4')"))
        .rootCause()
        .hasMessageContaining("without a primary key");
    assertThat(catalog.catalog().listTables(Namespace.of("shop")))
        .as("no table was created by a bad declaration")
        .isEmpty();
  }

  /**
   * Reads every change since the first snapshot at parallelism 4, applying the changes strictly in
   * the order they came (each key's from the one reader of its bucket).
   */
  private Map<Long, String> readChanges() throws Exception {
    READERS.clear();
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(4);
    SkadeSource<RowData> source =
        SkadeSource.builder()
            .catalogProperties(Map.of("warehouse", warehouse))
            .table("shop.orders")
            .startupMode(StartupMode.EARLIEST)
            .bounded()
            .build();
    Map<Long, String> rows = new HashMap<>();
    List<String> failures = new ArrayList<>();
    try (CloseableIterator<String> changes =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "orders")
            .map(new Tagged())
            .executeAndCollect()) {
      while (changes.hasNext()) {
        String[] parts = changes.next().split(" ", 3);
        long id = Long.parseLong(parts[1]);
        boolean inserts = parts[0].equals("+I") || parts[0].equals("+U");
        if (inserts == rows.containsKey(id)) {
          failures.add(String.join(" ", parts));
        }
        if (inserts) {
          rows.put(id, parts[2]);
        } else {
          rows.remove(id);
        }
      }
    }
    assertThat(failures).as("changes that met the wrong row").isEmpty();
    return rows;
  }

  /** A change as {@code kind id amount note}; records which reader emitted it. */
  private static final class Tagged extends RichMapFunction<RowData, String> {
    @Override
    public String map(RowData change) {
      READERS.merge(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), 1, Integer::sum);
      return change.getRowKind().shortString()
          + " "
          + change.getLong(0)
          + " "
          + change.getLong(1)
          + " "
          + change.getString(2);
    }
  }
}
