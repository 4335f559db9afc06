package io.skade.server;

import io.skade.catalog.CatalogLockedException;
import io.skade.catalog.CursorExpiredException;
import io.skade.catalog.ExpiryBlockedException;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.UnprocessableEntityException;
import org.apache.iceberg.exceptions.ValidationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failure of a request is answered with: the REST error model's status codes, so that
 * Iceberg's client raises the same exception the catalog did. A lost compare-and-swap is 409, which
 * clients retry; the expiry guard's refusal is 400, which no client retries; an outcome the catalog
 * cannot know is 500 ({@link CommitStateUnknownException}), never a success.
 */
final class RestErrors {
  private static final Logger LOG = LoggerFactory.getLogger(RestErrors.class);

  private RestErrors() {}

  /** Answers {@code exchange} with the error that {@code failure} maps to. */
  static void answer(Exchange exchange, Throwable failure) {
    int status = status(failure);
    if (status >= 500) {
      LOG.warn("skade server: {} {} failed", exchange.method(), exchange.route(), failure);
    }
    String message = failure.getMessage() == null ? failure.toString() : failure.getMessage();
    exchange.error(status, failure.getClass().getSimpleName(), message);
  }

  static int status(Throwable failure) {
    // Subclasses first: the expiry guard's exceptions are IllegalStateExceptions.
    if (failure instanceof ExpiryBlockedException || failure instanceof CursorExpiredException) {
      return 400;
    } else if (failure instanceof Exchange.PayloadTooLargeException) {
      return 413;
    } else if (failure instanceof IllegalArgumentException
        || failure instanceof ValidationException
        || failure instanceof BadRequestException) {
      return 400;
    } else if (failure instanceof NotAuthorizedException) {
      return 401;
    } else if (failure instanceof ForbiddenException) {
      return 403;
    } else if (failure instanceof NoSuchNamespaceException
        || failure instanceof NoSuchTableException
        || failure instanceof NoSuchViewException
        || failure instanceof NotFoundException) {
      return 404;
    } else if (failure instanceof UnsupportedOperationException) {
      return 406;
    } else if (failure instanceof AlreadyExistsException
        || failure instanceof CommitFailedException
        || failure instanceof NamespaceNotEmptyException) {
      return 409;
    } else if (failure instanceof UnprocessableEntityException) {
      return 422;
    } else if (failure instanceof CatalogLockedException) {
      return 503;
    }
    return 500; // CommitStateUnknownException among them: the client must not assume anything
  }
}
