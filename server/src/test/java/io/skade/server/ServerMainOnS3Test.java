package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.testing.S3Bucket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The server's {@code -P key=value} flags are the catalog's properties as Iceberg defines them, so
 * a warehouse on S3 is configured with Iceberg's own {@code s3.*} and {@code client.*} keys; a
 * server whose storage refuses its credentials does not start, and says which flag to fix.
 */
class ServerMainOnS3Test {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("server-main");

  @TempDir Path local;

  private ServerMain parse(Map<String, String> properties) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--warehouse",
                "s3://server-main/wh",
                "--catalog-path",
                local.resolve("catalog").toString(),
                "--insecure-no-auth",
                "--port",
                "0"));
    properties.forEach((key, value) -> args.addAll(List.of("-P", key + "=" + value)));
    ServerMain main = new ServerMain();
    new CommandLine(main).parseArgs(args.toArray(String[]::new));
    return main;
  }

  @Test
  void everyCatalogPropertyFlagReachesTheCatalogAsWritten() {
    ServerMain main = parse(s3.fileIoProperties());

    assertThat(main.catalogProperties).isEqualTo(s3.fileIoProperties());
  }

  @Test
  void aServerWhoseStorageRefusesItsCredentialsDoesNotStartAndNamesTheProperties() {
    Map<String, String> wrong = new TreeMap<>(s3.fileIoProperties());
    wrong.put("s3.secret-access-key", "wrong-secret");
    ServerMain main = parse(wrong);

    assertThatThrownBy(main::call)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("bucket 'server-main'")
        .hasMessageContaining("'s3.access-key-id' and 's3.secret-access-key'")
        .hasMessageNotContaining("wrong-secret");
    assertThat(local.resolve("catalog")).doesNotExist();
  }
}
