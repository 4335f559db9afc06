package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SharedCatalogs;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeRuntime;
import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A source reads a changelog window of a table whose warehouse is on HDFS (Hadoop's in-process
 * MiniDFSCluster), its catalog properties handed to the builder as they are: the data and delete
 * files of each snapshot are read from hdfs:// through Iceberg's HadoopFileIO.
 */
class SkadeSourceOnHdfsTest {
  @TempDir static Path dir;
  static MiniDFSCluster hdfs;

  @TempDir Path local;

  @BeforeAll
  static void startHdfs() throws Exception {
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.resolve("hdfs").toString());
    hdfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    hdfs.waitActive();
  }

  @AfterAll
  static void stopHdfs() {
    hdfs.shutdown();
  }

  /**
   * Closes the catalog's store before JUnit deletes its directory: the finished job's tasks may
   * still hold it, and the last holder would close it later, writing into a directory being deleted
   * (JUnit then fails the test, unable to delete it).
   */
  @AfterEach
  void closeStores() {
    SkadeRuntime.reset();
  }

  @Test
  void aWindowOfSnapshotsOnHdfsIsReadAsItsChanges() throws Exception {
    Map<String, String> props =
        Map.of(
            "warehouse",
            hdfs.getURI() + "/wh",
            SkadeCatalog.CATALOG_PATH,
            local.resolve("catalog").toString());
    try (SharedCatalogs.Handle catalog = SharedCatalogs.acquire(props)) {
      catalog.catalog().createNamespace(Namespace.of("db"));
      Table table = catalog.catalog().createTable(TableIdentifier.of("db", "t"), IdRows.SCHEMA);
      assertThat(table.location()).startsWith("hdfs://");
      TableWriter writer = new TableWriter(table);
      writer.append(List.of(row(1, "a"), row(2, "b")));
      Snapshot from = writer.upsert(List.of(row(2, "b2")));
      writer.upsert(List.of(row(1, "a2")));
      Snapshot to = writer.deleteKeys(List.of(row(2, null)));
      writer.append(List.of(row(3, "c"))); // after the window

      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(1);
      SkadeSource<RowData> source =
          SkadeSource.builder()
              .catalogProperties(props)
              .table("db.t")
              .startFromSnapshot(from.snapshotId())
              .endSnapshot(to.snapshotId())
              .build();
      List<String> seen = new ArrayList<>();
      try (CloseableIterator<RowData> rows =
          env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").executeAndCollect()) {
        rows.forEachRemaining(row -> seen.add(ChangeLines.text(row)));
      }
      assertThat(seen).containsExactly("-U 2 b", "+U 2 b2", "-U 1 a", "+U 1 a2", "-D 2 b2");
    }
  }
}
