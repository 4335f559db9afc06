package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --tls-keystore}: the server serves HTTPS with the keystore's certificate (made here by the
 * JDK's keytool), a client trusting it is answered, and a missing keystore is refused before the
 * catalog is opened.
 */
class ServerTlsTest {
  private static final String PASSWORD = "changeit";
  @TempDir Path root;

  private Path keystore() throws Exception {
    Path keystore = root.resolve("server.p12");
    Process keytool =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-alias",
                "skade",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-dname",
                "CN=localhost",
                "-ext",
                "SAN=ip:127.0.0.1,dns:localhost",
                "-validity",
                "2",
                "-storetype",
                "PKCS12",
                "-keystore",
                keystore.toString(),
                "-storepass",
                PASSWORD,
                "-keypass",
                PASSWORD)
            .redirectErrorStream(true)
            .start();
    String said = new String(keytool.getInputStream().readAllBytes());
    assertThat(keytool.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(keytool.exitValue()).as(said).isZero();
    return keystore;
  }

  @Test
  void theServerServesHttpsWithTheKeystoresCertificate() throws Exception {
    Path keystore = keystore();
    Path tokens = Files.writeString(root.resolve("tokens"), "tls-token\n");
    try (SkadeServer server =
        SkadeServer.start(
            new SkadeServer.Settings(
                root.resolve("warehouse").toString(),
                null,
                "127.0.0.1",
                0,
                tokens,
                false,
                keystore,
                PASSWORD,
                Map.of()))) {
      assertThat(server.uri().getScheme()).isEqualTo("https");
      KeyStore trusted = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(keystore)) {
        trusted.load(in, PASSWORD.toCharArray());
      }
      TrustManagerFactory trust =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      trust.init(trusted);
      SSLContext tls = SSLContext.getInstance("TLS");
      tls.init(null, trust.getTrustManagers(), null);
      HttpClient client = HttpClient.newBuilder().sslContext(tls).build();
      HttpRequest healthz =
          HttpRequest.newBuilder(URI.create(server.uri() + "/healthz"))
              .header("Authorization", "Bearer tls-token")
              .build();
      assertThat(client.send(healthz, HttpResponse.BodyHandlers.ofString()).statusCode())
          .isEqualTo(200);
      // Plain HTTP to the TLS port is not served.
      HttpRequest plain =
          HttpRequest.newBuilder(
                  URI.create("http://127.0.0.1:" + server.uri().getPort() + "/healthz"))
              .build();
      assertThatThrownBy(
              () -> HttpClient.newHttpClient().send(plain, HttpResponse.BodyHandlers.ofString()))
          .isInstanceOf(java.io.IOException.class);
    }
  }

  @Test
  void aMissingKeystoreIsRefusedBeforeTheCatalogIsOpened() throws Exception {
    Path tokens = Files.writeString(root.resolve("tokens"), "t\n");
    Path warehouse = root.resolve("never");
    assertThatThrownBy(
            () ->
                SkadeServer.start(
                    new SkadeServer.Settings(
                        warehouse.toString(),
                        null,
                        "127.0.0.1",
                        0,
                        tokens,
                        false,
                        root.resolve("missing.p12"),
                        PASSWORD,
                        Map.of())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--tls-keystore")
        .hasMessageContaining("missing.p12");
    assertThat(warehouse).doesNotExist();
  }
}
