package io.skade.catalog.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a remote connection hands Iceberg's REST client and its retry policy: Iceberg's own retries
 * cut to one, a bearer token's authentication named rather than inferred, and the retry timeout
 * parsed once, with an error that names the property.
 */
class RemoteConnectionPropertiesTest {
  @Test
  void icebergsRestClientRetriesOnceAndIsToldHowATokenAuthenticates() {
    Map<String, String> rest =
        RemoteConnection.restProperties(
            Map.of(
                "uri", "http://catalog-host:8181",
                "token", "secret",
                "server.retry-timeout", "3 s",
                "catalog.path", "/tmp/x"));
    assertThat(rest)
        .containsEntry("rest.client.max-retries", "1")
        .containsEntry("rest.auth.type", "oauth2")
        .containsEntry("oauth2-server-uri", "v1/oauth/tokens")
        .containsEntry("token", "secret")
        .doesNotContainKeys("server.retry-timeout", "catalog.path");
    assertThat(RemoteConnection.restProperties(Map.of("uri", "http://catalog-host:8181")))
        .doesNotContainKeys("rest.auth.type", "oauth2-server-uri");
  }

  @Test
  void theRetryTimeoutIsParsedOnce() {
    assertThat(RemoteRetry.timeout(Map.of())).isEqualTo(Duration.ofMinutes(10));
    assertThat(RemoteRetry.timeout(Map.of("server.retry-timeout", "3 s")))
        .isEqualTo(Duration.ofSeconds(3));
    assertThatThrownBy(() -> RemoteRetry.timeout(Map.of("server.retry-timeout", "soon")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("server.retry-timeout");
  }
}
