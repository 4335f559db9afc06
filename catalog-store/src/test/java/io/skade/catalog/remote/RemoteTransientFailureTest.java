package io.skade.catalog.remote;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.RESTException;
import org.apache.iceberg.exceptions.ServiceFailureException;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.junit.jupiter.api.Test;

/**
 * Which failures of a skade server a remote component rides through by trying again: a server away
 * or restarting (I/O failures, as Iceberg's and skade's clients wrap them; 500 and 503), never a
 * refusal no retry mends (400, 401, 403, an unknown table).
 */
class RemoteTransientFailureTest {
  @Test
  void aServerAwayOrFailingIsTransient() {
    assertThat(
            RemoteRetry.isTransient(
                new RESTException(
                    new ConnectException("Connection refused"),
                    "Error occurred while processing GET request")))
        .isTrue();
    assertThat(
            RemoteRetry.isTransient(
                new UncheckedIOException(new IOException("the skade server did not answer"))))
        .isTrue();
    assertThat(RemoteRetry.isTransient(new ServiceFailureException("Server error: 500"))).isTrue();
    assertThat(RemoteRetry.isTransient(new ServiceUnavailableException("Service unavailable: 503")))
        .isTrue();
  }

  @Test
  void aRefusalIsNot() {
    assertThat(RemoteRetry.isTransient(new NotAuthorizedException("Not authorized: 401")))
        .isFalse();
    assertThat(RemoteRetry.isTransient(new ForbiddenException("Forbidden: 403"))).isFalse();
    assertThat(RemoteRetry.isTransient(new BadRequestException("Malformed request: 400")))
        .isFalse();
    assertThat(RemoteRetry.isTransient(new NoSuchTableException("Table does not exist: db.t")))
        .isFalse();
  }
}
