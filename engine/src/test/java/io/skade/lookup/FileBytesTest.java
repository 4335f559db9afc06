package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.scan.DataFileRows;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class FileBytesTest {
  private static final DataFileRows.ReadListener QUIET =
      new DataFileRows.ReadListener() {
        @Override
        public void opened() {}

        @Override
        public void read(int bytes) {}
      };

  @TempDir Path dir;

  @Test
  @Timeout(30) // a broken reopen would have the others retry a closed channel for ever
  void aProbeInterruptedMidReadLeavesTheSharedFileReadableForTheOthers() throws Exception {
    Path file = dir.resolve("data.parquet");
    Files.write(file, new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
    try (FileBytes bytes =
        FileBytes.open(new HadoopFileIO(new Configuration()), file.toString(), QUIET)) {
      // An interrupted reader: Java closes a FileChannel a thread is interrupted in.
      CompletableFuture<Throwable> interrupted =
          CompletableFuture.supplyAsync(
              () -> {
                Thread.currentThread().interrupt();
                try {
                  bytes.read(0, new byte[4], QUIET);
                  return null;
                } catch (Exception e) {
                  return e;
                } finally {
                  Thread.interrupted();
                }
              });
      assertThat(interrupted.get()).isInstanceOf(ClosedByInterruptException.class);

      byte[] into = new byte[4];
      bytes.read(4, into, QUIET);
      assertThat(into).containsExactly(5, 6, 7, 8);
    }
  }

  @Test
  void aClosedFileStaysClosed() throws Exception {
    Path file = dir.resolve("data.parquet");
    Files.write(file, new byte[] {1, 2, 3, 4});
    FileBytes bytes = FileBytes.open(new HadoopFileIO(new Configuration()), file.toString(), QUIET);
    bytes.close();
    assertThatThrownBy(() -> bytes.read(0, new byte[4], QUIET))
        .isInstanceOf(ClosedChannelException.class);
  }
}
