package io.skade.table;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeRuntime;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * A fresh warehouse per test, whose skade catalog the test holds open, so SQL jobs (each in its own
 * local MiniCluster in this JVM) and the test's own Iceberg reads share it.
 */
abstract class SqlTestBase {
  @TempDir Path dir;
  String warehouse;
  SharedCatalogs.Handle catalog;

  @BeforeEach
  void openWarehouse() {
    warehouse = dir.resolve("warehouse").toString();
    catalog = SharedCatalogs.acquire(Map.of("warehouse", warehouse));
  }

  /**
   * Closes the warehouse's store before JUnit deletes its directory: a cancelled job's tasks may
   * still hold it, and the last holder would close it later, writing into a directory being
   * deleted. Resetting the runtime closes every store it holds, now.
   */
  @AfterEach
  void closeWarehouse() {
    catalog.close();
    SkadeRuntime.reset();
  }

  static TableEnvironment batch() {
    return TableEnvironment.create(EnvironmentSettings.inBatchMode());
  }

  /** Batch mode at {@code parallelism}, its jobs on MiniClusters of {@code config}. */
  static StreamTableEnvironment batch(Configuration config, int parallelism) {
    config.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.BATCH);
    StreamExecutionEnvironment stream = StreamExecutionEnvironment.getExecutionEnvironment(config);
    stream.setParallelism(parallelism);
    return StreamTableEnvironment.create(stream, EnvironmentSettings.inBatchMode());
  }

  /** Streaming, without checkpoints: collected rows arrive as soon as they are produced. */
  static TableEnvironment streaming() {
    return TableEnvironment.create(EnvironmentSettings.inStreamingMode());
  }

  /** Creates the {@code skade} catalog {@code lake} of this warehouse and its database shop. */
  void createLake(TableEnvironment env) {
    openLake(env);
    env.executeSql("CREATE DATABASE lake.shop");
  }

  /** The {@code skade} catalog {@code lake} of this warehouse, whose database exists already. */
  void openLake(TableEnvironment env) {
    env.executeSql(
        "CREATE CATALOG lake WITH ('type' = 'skade', 'warehouse' = '" + warehouse + "')");
  }

  /**
   * Creates {@code lake.shop.orders (id, v, PRIMARY KEY id)} through {@code env} (whose catalog
   * {@code lake} exists) with four snapshots, whose ids it returns: s1 inserts (1,a) (2,b); s2
   * upserts (1,a2); s3 inserts (3,c); s4 deletes 2.
   */
  long[] ordersWithFourSnapshots(TableEnvironment env) {
    env.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)");
    Table orders = catalog.catalog().loadTable(TableIdentifier.of("shop", "orders"));
    TableWriter writer = new TableWriter(orders);
    return new long[] {
      writer.append(List.of(record(orders, 1L, "a"), record(orders, 2L, "b"))).snapshotId(),
      writer.upsert(List.of(record(orders, 1L, "a2"))).snapshotId(),
      writer.append(List.of(record(orders, 3L, "c"))).snapshotId(),
      writer.deleteKeys(List.of(record(orders, 2L, null))).snapshotId()
    };
  }

  /** A row of {@code table}, its columns' values in order. */
  static Record record(Table table, Object... values) {
    GenericRecord row = GenericRecord.create(table.schema());
    for (int i = 0; i < values.length; i++) {
      row.set(i, values[i]);
    }
    return row;
  }

  /** {@code CREATE TABLE name (columns) WITH (connector skade on this warehouse, options)}. */
  String declare(TableEnvironment env, String name, String columns, String... options) {
    StringBuilder with =
        new StringBuilder("'connector' = 'skade', 'warehouse' = '").append(warehouse).append('\'');
    for (int i = 0; i < options.length; i += 2) {
      with.append(", '").append(options[i]).append("' = '").append(options[i + 1]).append('\'');
    }
    String ddl = "CREATE TABLE " + name + " (" + columns + ") WITH (" + with + ")";
    env.executeSql(ddl);
    return ddl;
  }

  static void run(TableEnvironment env, String statement) throws Exception {
    env.executeSql(statement).await();
  }

  static List<Row> collect(TableEnvironment env, String query) throws Exception {
    List<Row> rows = new ArrayList<>();
    try (CloseableIterator<Row> it = env.executeSql(query).collect()) {
      it.forEachRemaining(rows::add);
    }
    return rows;
  }

  /** A thread collecting the rows of a streaming query into {@code rows} until it is cancelled. */
  static Thread collectInBackground(TableResult result, List<Row> rows) {
    Thread collector =
        new Thread(
            () -> {
              try (CloseableIterator<Row> it = result.collect()) {
                it.forEachRemaining(rows::add);
              } catch (Exception e) {
                // the job was cancelled: the test is done collecting
              }
            });
    collector.start();
    return collector;
  }

  Table icebergTable(String name) {
    return catalog.catalog().loadTable(TableIdentifier.of("default_database", name));
  }

  /** The table's rows by Iceberg's own reader: the check that does not go through skade. */
  List<Record> icebergRows(String name) throws Exception {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(icebergTable(name)).build()) {
      records.forEach(rows::add);
    }
    return rows;
  }
}
