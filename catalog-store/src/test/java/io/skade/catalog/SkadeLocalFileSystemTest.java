package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.Util;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SkadeLocalFileSystemTest {
  @TempDir Path root;

  @Test
  void theCatalogsDefaultFileIoWritesLocalFilesThroughIt() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(root.resolve("wh"))) {
      Table table = Catalogs.createTable(catalog, "t");
      HadoopFileIO io = (HadoopFileIO) table.io();

      FileSystem fs = Util.getFs(new org.apache.hadoop.fs.Path(table.location()), io.conf());
      assertThat(fs).isInstanceOf(SkadeLocalFileSystem.class);
      // Hadoop's default file mode 666 under its default umask 022.
      String location = ((HasTableOperations) table).operations().current().metadataFileLocation();
      Path metadata = Path.of(new org.apache.hadoop.fs.Path(location).toUri().getPath());
      assertThat(permissions(metadata)).isEqualTo("rw-r--r--");
    }
  }

  @Test
  void filesChecksumsAndDirectoriesGetThePermissionsHadoopWouldSet() throws Exception {
    Configuration conf = new Configuration(false);
    conf.set("fs.permissions.umask-mode", "027");
    try (SkadeLocalFileSystem fs = new SkadeLocalFileSystem()) {
      fs.initialize(URI.create("file:///"), conf);

      Path file = root.resolve("a/data.bin");
      try (FSDataOutputStream out = fs.create(hadoopPath(file))) {
        out.write(42);
      }
      assertThat(permissions(file)).isEqualTo("rw-r-----");
      assertThat(permissions(root.resolve("a/.data.bin.crc"))).isEqualTo("rw-r-----");

      Path dir = root.resolve("b");
      assertThat(fs.mkdirs(hadoopPath(dir), new FsPermission((short) 0750))).isTrue();
      assertThat(permissions(dir)).isEqualTo("rwxr-x---");

      // Every bit maps to its own POSIX permission.
      fs.setPermission(hadoopPath(file), new FsPermission((short) 0421));
      assertThat(permissions(file)).isEqualTo("r---w---x");
      fs.setPermission(hadoopPath(file), new FsPermission((short) 0356));
      assertThat(permissions(file)).isEqualTo("-wxr-xrw-");
    }
  }

  private static org.apache.hadoop.fs.Path hadoopPath(Path path) {
    return new org.apache.hadoop.fs.Path(path.toUri());
  }

  private static String permissions(Path path) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }
}
