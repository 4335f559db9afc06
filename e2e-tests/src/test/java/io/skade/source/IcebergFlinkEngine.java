package io.skade.source;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.FlinkCatalog;

/**
 * Child process of {@link SecondEngineOverRestTest}: a second engine, Iceberg's own Flink
 * connector, in a JVM of its own, on the skade server {@code args[0]} with the bearer token {@code
 * args[1]}. It uses only Flink SQL and Iceberg's {@code 'catalog-type' = 'rest'}; nothing of skade
 * is on its code path.
 *
 * <p>Protocol, one line each. It creates the format-v2 table {@code db.orders (id BIGINT, name
 * STRING, PRIMARY KEY (id))} with upserts on and prints {@code CREATED}. Then, on stdin, a commit
 * is change lines ({@code +I 1 a}, {@code -U 2 b}, {@code +U 2 b2}, {@code -D 3 c}) ended by {@code
 * COMMIT}: it writes them into {@code db.orders} with one Flink job (one Iceberg commit) and prints
 * {@code COMMITTED <snapshot id>}. On {@code END} it prints the rows of {@code db.orders} as {@code
 * ORDERS <id> <name>} and those of {@code db.skade_written} as {@code SKADE_WRITTEN <id> <name>},
 * then {@code DONE}, and exits 0.
 */
public final class IcebergFlinkEngine {
  private static final TableIdentifier ORDERS = TableIdentifier.of("db", "orders");
  private static final TypeInformation<Row> CHANGE_TYPE =
      Types.ROW_NAMED(new String[] {"id", "name"}, Types.LONG, Types.STRING);

  private IcebergFlinkEngine() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.set(RestOptions.BIND_PORT, "0");
    // One cluster for all of its jobs: a local environment would start one per job.
    try (MiniCluster cluster =
        new MiniCluster(
            new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(1)
                .build())) {
      cluster.start();
      URI rest = cluster.getRestAddress().get();
      StreamExecutionEnvironment env =
          StreamExecutionEnvironment.createRemoteEnvironment(rest.getHost(), rest.getPort());
      env.setParallelism(1); // a key written twice in one job meets itself in one writer
      run(StreamTableEnvironment.create(env), env, args[0], args[1]);
    }
  }

  private static void run(
      StreamTableEnvironment sql, StreamExecutionEnvironment env, String uri, String token)
      throws Exception {
    sql.executeSql(
        "CREATE CATALOG other WITH ('type' = 'iceberg', 'catalog-type' = 'rest',"
            + " 'uri' = '"
            + uri
            + "', 'token' = '"
            + token
            + "')");
    sql.executeSql(
        "CREATE TABLE other.db.orders (id BIGINT, name STRING,"
            + " PRIMARY KEY (id) NOT ENFORCED)"
            + " WITH ('format-version' = '2', 'write.upsert.enabled' = 'true')");
    say("CREATED");

    BufferedReader stdin =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    List<Row> commit = new ArrayList<>();
    for (String line = stdin.readLine(); !"END".equals(line); line = stdin.readLine()) {
      if (line == null) {
        throw new IllegalStateException("stdin ended before END");
      }
      if (line.equals("COMMIT")) {
        // The changes keep their kinds: the planner hands the sink -U, +U and -D as they are.
        Table changes =
            sql.fromChangelogStream(
                env.fromData(commit, CHANGE_TYPE),
                Schema.newBuilder()
                    .column("id", DataTypes.BIGINT().notNull())
                    .column("name", DataTypes.STRING())
                    .primaryKey("id")
                    .build(),
                ChangelogMode.all());
        changes.executeInsert("other.db.orders").await();
        FlinkCatalog catalog = (FlinkCatalog) sql.getCatalog("other").orElseThrow();
        org.apache.iceberg.Table orders = catalog.catalog().loadTable(ORDERS);
        orders.refresh(); // the Flink catalog caches the table it loaded when planning the job
        say("COMMITTED " + orders.currentSnapshot().snapshotId());
        commit = new ArrayList<>();
      } else {
        commit.add(change(line));
      }
    }
    // Both tables in one job, each row labelled with its table.
    try (CloseableIterator<Row> rows =
        sql.executeSql(
                "SELECT CAST('ORDERS' AS STRING), id, name FROM other.db.orders UNION ALL"
                    + " SELECT CAST('SKADE_WRITTEN' AS STRING), id, name FROM other.db.skade_written")
            .collect()) {
      while (rows.hasNext()) {
        Row row = rows.next();
        say(row.getField(0) + " " + row.getField(1) + " " + row.getField(2));
      }
    }
    say("DONE");
  }

  /** A change line, e.g. {@code -U 2 b}, as a Flink row of that kind. */
  private static Row change(String line) {
    String[] parts = line.split(" ", 3);
    for (RowKind kind : RowKind.values()) {
      if (kind.shortString().equals(parts[0])) {
        return Row.ofKind(kind, Long.parseLong(parts[1]), parts[2]);
      }
    }
    throw new IllegalArgumentException("not a change line: " + line);
  }

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
