package io.skade.catalog.remote;

import io.skade.catalog.CatalogConfig;
import io.skade.catalog.CatalogConnection;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.apache.iceberg.exceptions.ServiceFailureException;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one retry policy of the calls a process makes to a skade server: which failures are tried
 * again ({@link #isTransient}), how long to wait between tries (100 ms, doubling to 5 s), and for
 * how long ({@link CatalogConnection#RETRY_TIMEOUT}, 10 min by default, parsed once per {@link
 * RemoteConnection}). A {@link RemoteConnection} owns one and applies it itself: the catalog it
 * hands out ({@link RidingCatalog}), the tables that catalog loads ({@link RidingTableOperations}),
 * the consumers and locks ({@link SkadeServerClient}), the commit feed ({@link RemoteCommitFeed})
 * and the job runs posted to the server's lineage ({@link RemoteConnection#reportJobRun}) all ride
 * it, so no caller chooses, and a caller that wraps a call in a retry of its own would only stack
 * deadlines.
 *
 * <h2>The stack, and which deadline wins</h2>
 *
 * <ol>
 *   <li><b>One HTTP request.</b> skade's own routes ({@link SkadeServerClient}): connect time-out 5
 *       s, request time-out the long-poll's wait plus 30 s; no retry in the HTTP client. Iceberg's
 *       {@code HTTPClient} (the tables, through {@code RESTCatalog}) cannot be told not to retry
 *       (its {@code rest.client.max-retries} must be at least 1), so skade sets it to 1: an
 *       idempotent request (GET, HEAD, PUT, DELETE) answered 429, 500, 502, 503, 504 or 408, or one
 *       that failed with an I/O error other than a refused, reset-before-connect, unknown-host, TLS
 *       or interrupted one, is sent once more after about 1 s (the server's {@code Retry-After}
 *       when it gives one); a POST (a commit, a create) is sent again only on 429 or a 503 with
 *       {@code Retry-After}, which skade's server never answers. A refused connection, what a
 *       server that is down gives, is never retried there.
 *   <li><b>This policy.</b> Around each call to the server, a failure that {@link #isTransient} is
 *       tried again with the backoff until the next try would begin after the deadline, which is
 *       set once when the call begins. The deadline is checked between tries, not inside one: a
 *       call fails at most one request's time-outs (above) after {@link
 *       CatalogConnection#RETRY_TIMEOUT}. A commit whose answer was lost is settled by reading the
 *       table again within the same deadline ({@link RidingTableOperations}), so a commit, too,
 *       takes at most one deadline.
 *   <li><b>Callers.</b> None retries remote calls. Two loops stand beside this one, each for its
 *       own reason: the commit feed's long-poll thread ({@link RemoteCommitFeed}) uses this backoff
 *       without a deadline, as it must outlive any restart of the server while subscribers remain;
 *       a lookup ({@code io.skade.lookup.TableLookup}) retries a probe that failed because a file
 *       vanished while the table moved on, with this backoff, for the number of attempts Flink's
 *       {@code lookup.max-retries} allows ({@link #attempts}) — each of its remote calls rides this
 *       policy by itself.
 *   <li><b>Iceberg's commit retries</b> ({@code commit.retry.*}) retry a lost compare-and-swap
 *       ({@code CommitFailedException}, a 409), never a server that does not answer; each of their
 *       attempts is a new call, with a deadline of its own.
 * </ol>
 *
 * <p>So the deadline that wins is {@link CatalogConnection#RETRY_TIMEOUT}, counted from the start
 * of the call, plus at most one request's time-outs; for lineage job runs, which are best effort,
 * the shorter of it and 30 s.
 *
 * <p>Interrupting the thread ends the retries at once: the call fails with an {@link
 * UncheckedIOException} of an {@link InterruptedIOException}, and the thread stays interrupted.
 */
public final class RemoteRetry {
  private static final Logger LOG = LoggerFactory.getLogger(RemoteRetry.class);

  /** How long calls are retried when {@link CatalogConnection#RETRY_TIMEOUT} is not set. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);

  static final long FIRST_BACKOFF_MILLIS = 100;
  static final long MAX_BACKOFF_MILLIS = 5_000;

  private final String server;
  private final Duration timeout;

  /**
   * @param server what the retried calls reach, for the log and the errors
   * @param timeout how long one call is retried through transient failures
   */
  RemoteRetry(String server, Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(
          "the retry timeout of " + server + " must be positive, got " + timeout);
    }
    this.server = server;
    this.timeout = timeout;
  }

  /**
   * The policy {@code properties} configure ({@link CatalogConnection#RETRY_TIMEOUT}) for calls to
   * {@code server}.
   *
   * @throws IllegalArgumentException when the retry timeout is not a positive duration
   */
  static RemoteRetry of(String server, Map<String, String> properties) {
    return new RemoteRetry(server, timeout(properties));
  }

  /** {@link CatalogConnection#RETRY_TIMEOUT} as {@code properties} set it; 10 min by default. */
  static Duration timeout(Map<String, String> properties) {
    String value = properties.get(CatalogConnection.RETRY_TIMEOUT);
    if (value == null) {
      return DEFAULT_TIMEOUT;
    }
    Duration retry = CatalogConfig.duration(value);
    if (retry == null || retry.isZero()) {
      throw new IllegalArgumentException(
          "catalog property '"
              + CatalogConnection.RETRY_TIMEOUT
              + "' = '"
              + value
              + "' is not a positive duration; give one such as '30 s' or '10 min'");
    }
    return retry;
  }

  /** How long one call is retried. */
  public Duration timeout() {
    return timeout;
  }

  /** This policy with its timeout cut to {@code most}, when that is shorter. */
  RemoteRetry atMost(Duration most) {
    return most.compareTo(timeout) < 0 ? new RemoteRetry(server, most) : this;
  }

  /** What the retried calls reach. */
  String server() {
    return server;
  }

  /**
   * Whether {@code failure} can heal by trying again: an I/O failure anywhere in the chain
   * (Iceberg's client and skade's wrap theirs: a refused or reset connection, a time-out, a 5xx
   * answer of skade's routes), or Iceberg's 500 / 503. Not any {@code RESTException}: 400, 401,
   * 403, 404 and 409 are ones too, and no retry mends them.
   */
  public static boolean isTransient(Throwable failure) {
    return anyCause(
        failure,
        cause ->
            cause instanceof IOException
                || cause instanceof ServiceFailureException
                || cause instanceof ServiceUnavailableException);
  }

  private static boolean leaderMoved(Throwable failure) {
    return anyCause(failure, LeaderMovedException.class::isInstance);
  }

  /** Whether {@code failure} or any of its causes is one {@code test} matches. */
  private static boolean anyCause(Throwable failure, Predicate<Throwable> test) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (test.test(cause)) {
        return true;
      }
    }
    return false;
  }

  /** A deadline for one call that begins now. */
  long deadline() {
    return System.nanoTime() + timeout.toNanos();
  }

  /**
   * What {@code call} returns, tried again through {@link #isTransient transient} failures until
   * the deadline. A failure that remains is thrown as it is when unchecked, wrapped when checked.
   *
   * @param what the call, for the log
   */
  <T> T call(String what, Callable<T> call) {
    return call(what, RemoteRetry::isTransient, deadline(), call);
  }

  /**
   * What {@code call} returns, tried again through the failures {@code again} accepts until {@code
   * deadline} ({@link System#nanoTime}), which a caller shares between the calls of one operation.
   */
  <T> T call(String what, Predicate<Throwable> again, long deadline, Callable<T> call) {
    return unchecked(
        () ->
            retry(
                what,
                again,
                (attempt, backoff) -> System.nanoTime() + backoff * 1_000_000 - deadline <= 0,
                () -> false,
                call,
                true));
  }

  /**
   * Whether {@code failure} is one a call rode until its deadline passed, so that a caller with a
   * retry of its own for another reason (a lookup's) does not retry it again, stacking deadlines.
   */
  public static boolean deadlinePassed(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      for (Throwable suppressed : cause.getSuppressed()) {
        if (suppressed instanceof DeadlinePassed) {
          return true;
        }
      }
    }
    return false;
  }

  /** Noted on a failure that was retried until the deadline passed. */
  private static final class DeadlinePassed extends Exception {
    private static final long serialVersionUID = 1L;

    DeadlinePassed(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * What {@code call} returns, tried again through any failure, with the backoff and no deadline,
   * until {@code stopped}: for a thread that must outlive any restart of the server. Returns null
   * once {@code stopped} (or the thread is interrupted).
   */
  <T> T untilStopped(String what, BooleanSupplier stopped, Callable<T> call) {
    try {
      return retry(
          what,
          failure -> !stopped.getAsBoolean(),
          (attempt, backoff) -> true,
          stopped,
          call,
          false);
    } catch (InterruptedException | InterruptedIOException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (Exception e) {
      if (stopped.getAsBoolean() || Thread.currentThread().isInterrupted()) {
        return null;
      }
      throw e instanceof RuntimeException runtime ? runtime : new IllegalStateException(e);
    }
  }

  /**
   * What {@code call} returns, tried again with this policy's backoff through the failures {@code
   * heals} accepts, at most {@code retries} more times; the last failure is thrown as it is. For a
   * retry that is not about reaching a server, so not bounded by its deadline: a lookup whose file
   * vanished while the table moved on, as many times as Flink's {@code lookup.max-retries} allows.
   * Its remote calls ride the deadline by themselves.
   *
   * @param what the call, for the log
   * @throws InterruptedException when the thread is interrupted while it waits to try again
   */
  public static <T, E extends Exception> T attempts(
      String what, int retries, Predicate<? super Exception> heals, Attempt<T, E> call)
      throws E, InterruptedException {
    try {
      return retry(
          what,
          failure -> failure instanceof Exception e && heals.test(e),
          (attempt, backoff) -> attempt <= retries,
          () -> false,
          call::call,
          false);
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      @SuppressWarnings("unchecked")
      E failure = (E) e; // only the call's E or an unchecked one get here
      throw failure;
    }
  }

  /** One try of a call {@link #attempts} retries. */
  @FunctionalInterface
  public interface Attempt<T, E extends Exception> {
    T call() throws E;
  }

  /** Whether another try may begin: given the number of tries so far and the wait before it. */
  @FunctionalInterface
  private interface Bound {
    boolean allows(int attempts, long backoffMillis);
  }

  /** The one loop: the backoff, the bound, one log line per retry. */
  private static <T> T retry(
      String what,
      Predicate<Throwable> again,
      Bound bound,
      BooleanSupplier stopped,
      Callable<T> call,
      boolean byDeadline)
      throws Exception {
    long backoff = FIRST_BACKOFF_MILLIS;
    for (int attempt = 1; ; attempt++) {
      try {
        return call.call();
      } catch (Exception e) {
        if (e instanceof InterruptedException
            || e instanceof InterruptedIOException
            || Thread.currentThread().isInterrupted()
            || stopped.getAsBoolean()
            || !again.test(e)) {
          throw e;
        }
        if (!bound.allows(attempt, backoff)) {
          if (byDeadline) {
            e.addSuppressed(
                new DeadlinePassed(
                    what
                        + ": retried "
                        + attempt
                        + " time(s) until the retry timeout ('"
                        + CatalogConnection.RETRY_TIMEOUT
                        + "') passed"));
          }
          throw e;
        }
        if (leaderMoved(e)) { // a server group's new leader: at once, and back off from the start
          LOG.info("{}: {}; trying again there (try {})", what, e.getMessage(), attempt + 1);
          backoff = FIRST_BACKOFF_MILLIS;
          continue;
        }
        if (isTransient(e)) {
          LOG.warn("{} failed ({}); trying again in {} ms (try {})", what, e, backoff, attempt + 1);
        } else {
          LOG.warn("{} failed; trying again in {} ms (try {})", what, backoff, attempt + 1, e);
        }
        Thread.sleep(backoff);
        backoff = Math.min(MAX_BACKOFF_MILLIS, backoff * 2);
      }
    }
  }

  /** {@code call}'s result; a checked failure wrapped, an interrupt kept. */
  private <T> T unchecked(Callable<T> call) {
    try {
      return call.call();
    } catch (RuntimeException e) {
      if (e instanceof UncheckedIOException u && u.getCause() instanceof InterruptedIOException) {
        Thread.currentThread().interrupt();
      }
      throw e;
    } catch (InterruptedException | InterruptedIOException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException interrupted =
          new InterruptedIOException("interrupted waiting for the skade server at " + server);
      interrupted.initCause(e);
      throw new UncheckedIOException(interrupted);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
