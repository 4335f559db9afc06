package io.skade.catalog.remote;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.S3Bucket;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A server that takes connections and never answers (as one stopped by SIGSTOP, or lost behind a
 * partition) costs a reader of metadata files one time-out: the file comes from the store, and the
 * next one straight from the store, without waiting for the server again.
 */
class ServerMetadataIOTest {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("silentserver");

  @Test
  void aSilentServerCostsOneTimeOutAndTheStoreServesTheFiles() throws Exception {
    byte[] json = "{\"format-version\":2}".getBytes(StandardCharsets.UTF_8);
    String first = s3.run() + "/t/metadata/00001-a.metadata.json";
    String second = s3.run() + "/t/metadata/00002-b.metadata.json";
    try (FileIO store =
            CatalogUtil.loadFileIO(S3FileIO.class.getName(), s3.fileIoProperties(), null);
        ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      for (String location : List.of(first, second)) {
        try (OutputStream out = store.newOutputFile(location).create()) {
          out.write(json);
        }
      }
      List<Socket> held = new CopyOnWriteArrayList<>();
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    held.add(silent.accept());
                  }
                } catch (IOException closed) {
                  // the test is over
                }
              });
      acceptor.setDaemon(true);
      acceptor.start();
      SkadeServerClient server =
          new SkadeServerClient(
              URI.create("http://127.0.0.1:" + silent.getLocalPort()), null, Duration.ofMinutes(1));
      try (ServerMetadataIO io = new ServerMetadataIO(store, false, server)) {
        long started = System.nanoTime();
        assertThat(read(io, first)).isEqualTo(json);
        assertThat(Duration.ofNanos(System.nanoTime() - started))
            .isGreaterThanOrEqualTo(ServerMetadataIO.ASK_TIMEOUT);
        assertThat(held).hasSize(1);

        started = System.nanoTime();
        assertThat(read(io, second)).isEqualTo(json);
        assertThat(Duration.ofNanos(System.nanoTime() - started))
            .isLessThan(ServerMetadataIO.ASK_TIMEOUT);
      }
      for (Socket socket : held) {
        socket.close();
      }
    }
  }

  private static byte[] read(FileIO io, String location) throws IOException {
    try (InputStream in = io.newInputFile(location).newStream()) {
      return in.readAllBytes();
    }
  }
}
