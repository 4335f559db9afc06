package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A catalog whose warehouse is on HDFS (Hadoop's in-process MiniDFSCluster: a real name node and
 * data node on loopback), its store in a local directory: tables are created, committed and loaded
 * through Iceberg's {@link HadoopFileIO}.
 */
class SkadeCatalogOnHdfsTest {
  @TempDir static Path dir;
  static MiniDFSCluster hdfs;

  @TempDir Path local;

  @BeforeAll
  static void startHdfs() throws Exception {
    long start = System.nanoTime();
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.resolve("hdfs").toString());
    hdfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
    hdfs.waitActive();
    System.out.println(
        "MiniDFSCluster started in " + (System.nanoTime() - start) / 1_000_000 + " ms");
  }

  @AfterAll
  static void stopHdfs() {
    hdfs.shutdown();
  }

  @Test
  void aTableOnHdfsIsCreatedCommittedAndLoaded() throws Exception {
    String warehouse = hdfs.getURI() + "/wh";
    Map<String, String> props =
        Map.of(
            "warehouse", warehouse, SkadeCatalog.CATALOG_PATH, local.resolve("catalog").toString());
    Schema schema = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    TableIdentifier id = TableIdentifier.of("shop", "orders");
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("lake", props);
      assertThat(catalog.io()).isInstanceOf(HadoopFileIO.class);
      catalog.createNamespace(Namespace.of("shop"));
      Table table = WarehouseAccessTest.createTableOfOneFile(catalog, id, schema);
      assertThat(table.location()).isEqualTo(warehouse + "/shop/orders");
    }
    try (SkadeCatalog again = new SkadeCatalog()) {
      again.initialize("lake", props);
      Table table = again.loadTable(id);
      assertThat(table.currentSnapshot().addedDataFiles(table.io())).hasSize(1);
      assertThat(table.currentSnapshot().manifestListLocation()).startsWith(warehouse + "/");
      assertThat(
              hdfs.getFileSystem()
                  .exists(
                      new org.apache.hadoop.fs.Path(
                          table.currentSnapshot().manifestListLocation())))
          .isTrue();
    }
  }
}
