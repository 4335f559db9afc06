package io.skade.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.IOUtil;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.RangeReadable;
import org.apache.iceberg.io.SeekableInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The S3 fixtures themselves: Iceberg's S3FileIO through the proxy, counted and faulted. */
class S3FaultProxyTest {
  @TempDir static Path dir;
  static S3Server s3;
  static S3FaultProxy proxy;
  static FileIO io;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3Server.start(dir.resolve("s3"));
    s3.bucket("proxy-test");
    proxy = new S3FaultProxy(s3.endpoint());
    Map<String, String> props = S3Server.fileIoProperties(proxy.endpoint());
    io = CatalogUtil.loadFileIO(props.get("io-impl"), props, null);
  }

  @AfterAll
  static void stop() throws Exception {
    io.close();
    proxy.close();
    s3.close();
  }

  private static String write(String name, String text) throws Exception {
    String location = "s3://proxy-test/" + name;
    try (PositionOutputStream out = io.newOutputFile(location).createOrOverwrite()) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
    return location;
  }

  @Test
  void aRangedReadIsOneCountedGetOfThoseBytes() throws Exception {
    String location = write("ranged", "0123456789abcdef");
    proxy.clearRequests();
    byte[] bytes = new byte[4];
    try (SeekableInputStream in = io.newInputFile(location).newStream()) {
      ((RangeReadable) in).readFully(6, bytes, 0, 4);
    }
    assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo("6789");
    assertThat(proxy.requests()).filteredOn(S3FaultProxy.Request::rangedGet).hasSize(1);
    assertThat(proxy.requests().stream().filter(S3FaultProxy.Request::rangedGet).findFirst())
        .hasValueSatisfying(request -> assertThat(request.rangeLength()).isEqualTo(4));
  }

  @Test
  void slowDownsAndResetsAreRetriedByTheSdk() throws Exception {
    String location = write("faulted", "retried");
    proxy.faultOnly(request -> request.method().equals("GET")).slowDown(2).reset(1);
    byte[] bytes = new byte[7];
    try (SeekableInputStream in = io.newInputFile(location).newStream()) {
      IOUtil.readFully(in, bytes, 0, bytes.length);
    } finally {
      proxy.faultOnly(request -> true);
    }
    assertThat(new String(bytes, StandardCharsets.UTF_8)).isEqualTo("retried");
    assertThat(proxy.faultsPending()).isZero();
  }

  @Test
  void theDelayHoldsEachRequest() throws Exception {
    String location = write("delayed", "late");
    proxy.delay(50);
    long start = System.nanoTime();
    try {
      io.newInputFile(location).getLength();
    } finally {
      proxy.delay(0);
    }
    assertThat((System.nanoTime() - start) / 1_000_000).isGreaterThanOrEqualTo(50);
  }

  @Test
  void theBandwidthCapPacesAnswers() throws Exception {
    String location = "s3://proxy-test/large";
    try (PositionOutputStream out = io.newOutputFile(location).createOrOverwrite()) {
      out.write(new byte[2 << 20]);
    }
    proxy.bandwidth(10L << 20); // 2 MiB at 10 MiB/s: at least 200 ms
    long start = System.nanoTime();
    try (SeekableInputStream in = io.newInputFile(location).newStream()) {
      IOUtil.readFully(in, new byte[2 << 20], 0, 2 << 20);
    } finally {
      proxy.bandwidth(0);
    }
    assertThat((System.nanoTime() - start) / 1_000_000).isGreaterThanOrEqualTo(195);
  }
}
