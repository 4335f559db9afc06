package io.skade.benchmarks;

import io.skade.testing.S3Server;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.DataSplit;

/**
 * The dimension tables of {@link LookupJoinBenchmark} in a Paimon warehouse, both primary-key
 * tables {@code (id bigint, name string, city string, score int)}: {@code bench.dim_default} with
 * Paimon's defaults and {@code bench.dim_bucket1} with {@code 'bucket' = '1'}. Written by Flink SQL
 * in batch mode, {@code files} INSERT jobs of consecutive id ranges (each job writes both tables
 * from one datagen sequence). Each INSERT carries {@code 'write-only' = 'true'} as a hint, so
 * Paimon does not compact the files away and each table keeps one level-0 file per job; the tables'
 * own options stay the defaults. Runs only in the benchmark's Paimon JVMs.
 */
final class PaimonDim {
  static final String CATALOG = "paimon";
  static final String DEFAULT_TABLE = "dim_default";
  static final String BUCKET1_TABLE = "dim_bucket1";

  private PaimonDim() {}

  /**
   * The catalog on {@code warehouse} (a {@code file:} or {@code s3://} URI) with the file system's
   * {@code options} (none on local disk).
   */
  static String catalogDdl(String warehouse, Map<String, String> options) {
    StringBuilder ddl =
        new StringBuilder("CREATE CATALOG ")
            .append(CATALOG)
            .append(" WITH ('type' = 'paimon', 'warehouse' = '")
            .append(warehouse)
            .append("'");
    options.forEach((k, v) -> ddl.append(", '").append(k).append("' = '").append(v).append("'"));
    return ddl.append(")").toString();
  }

  /**
   * Paimon's S3 file system ({@code paimon-s3}, Hadoop's S3A inside) pointed at {@code endpoint}
   * with the S3 server's credentials, path-style, plain HTTP.
   */
  static Map<String, String> s3Options(String endpoint) {
    Map<String, String> options = new TreeMap<>();
    options.put("s3.endpoint", endpoint);
    options.put("s3.access-key", S3Server.ACCESS_KEY);
    options.put("s3.secret-key", S3Server.SECRET_KEY);
    options.put("s3.path.style.access", "true");
    options.put("s3.connection.ssl.enabled", "false");
    options.put("s3.endpoint.region", S3Server.REGION);
    // S3A deletes the directory markers above each file it writes; the S3 server's file-system
    // backend cannot delete a directory that holds files (S3 has no directories).
    options.put("s3.directory.marker.retention", "keep");
    return options;
  }

  /** Writes both tables; returns what each holds, keys prefixed by the table name. */
  static Properties prepare(
      String warehouse, Map<String, String> options, Path flinkTmp, long rows, int files) {
    long started = System.nanoTime();
    Configuration conf = new Configuration();
    conf.set(org.apache.flink.configuration.CoreOptions.TMP_DIRS, flinkTmp.toString());
    conf.set(org.apache.flink.configuration.CoreOptions.DEFAULT_PARALLELISM, 1);
    TableEnvironment env =
        TableEnvironment.create(
            EnvironmentSettings.newInstance().inBatchMode().withConfiguration(conf).build());
    env.executeSql(catalogDdl(warehouse, options));
    env.executeSql("CREATE DATABASE " + CATALOG + ".bench");
    String columns =
        "(id BIGINT, name STRING, city STRING, score INT," + " PRIMARY KEY (id) NOT ENFORCED)";
    env.executeSql("CREATE TABLE " + CATALOG + ".bench." + DEFAULT_TABLE + " " + columns);
    env.executeSql(
        "CREATE TABLE "
            + CATALOG
            + ".bench."
            + BUCKET1_TABLE
            + " "
            + columns
            + " WITH ('bucket' = '1')");
    String select =
        " /*+ OPTIONS('write-only' = 'true') */ SELECT id,"
            + " CONCAT('name-', CAST(id AS STRING)), CONCAT('city-', CAST(MOD(id, 1000) AS STRING)),"
            + " CAST(MOD(id, 100000) AS INT) FROM seq";
    for (int f = 0; f < files; f++) {
      long from = LookupJoinBenchmark.rangeStart(rows, files, f);
      long to = LookupJoinBenchmark.rangeStart(rows, files, f + 1);
      env.executeSql(
          "CREATE TEMPORARY TABLE seq (id BIGINT) WITH ('connector' = 'datagen',"
              + " 'number-of-rows' = '"
              + (to - from)
              + "', 'rows-per-second' = '1000000000',"
              + " 'fields.id.kind' = 'sequence',"
              + " 'fields.id.start' = '"
              + from
              + "', 'fields.id.end' = '"
              + (to - 1)
              + "')");
      StatementSet inserts = env.createStatementSet();
      inserts.addInsertSql("INSERT INTO " + CATALOG + ".bench." + DEFAULT_TABLE + select);
      inserts.addInsertSql("INSERT INTO " + CATALOG + ".bench." + BUCKET1_TABLE + select);
      try {
        inserts.execute().await();
      } catch (Exception e) {
        throw new IllegalStateException("INSERT of ids " + from + ".." + (to - 1) + " failed", e);
      }
      env.executeSql("DROP TEMPORARY TABLE seq");
    }
    Properties out = new Properties();
    out.setProperty("seconds", Double.toString((System.nanoTime() - started) / 1e9));
    describe(warehouse, options, DEFAULT_TABLE, out);
    describe(warehouse, options, BUCKET1_TABLE, out);
    return out;
  }

  /** The table's bucket option and mode, and its data files, from Paimon's own API. */
  private static void describe(
      String warehouse, Map<String, String> fileSystem, String name, Properties out) {
    Map<String, String> all = new TreeMap<>(fileSystem);
    all.put("warehouse", warehouse);
    try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(new Options(all)))) {
      FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create("bench", name));
      long files = 0;
      long bytes = 0;
      long rowCount = 0;
      TreeSet<Integer> buckets = new TreeSet<>();
      TreeSet<Integer> levels = new TreeSet<>();
      for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
        buckets.add(split.bucket());
        for (DataFileMeta file : split.dataFiles()) {
          files++;
          bytes += file.fileSize();
          rowCount += file.rowCount();
          levels.add(file.level());
        }
      }
      out.setProperty(name + ".bucketOption", Integer.toString(table.coreOptions().bucket()));
      out.setProperty(name + ".bucketMode", table.bucketMode().name());
      out.setProperty(name + ".dataFiles", Long.toString(files));
      out.setProperty(name + ".dataBytes", Long.toString(bytes));
      out.setProperty(name + ".rows", Long.toString(rowCount));
      out.setProperty(name + ".buckets", buckets.toString());
      out.setProperty(name + ".levels", levels.toString());
      out.setProperty(name + ".fileFormat", table.coreOptions().fileFormatString());
    } catch (Exception e) {
      throw new IllegalStateException("describing Paimon table " + name + " failed", e);
    }
  }
}
