package io.skade.catalog.remote;

import java.io.IOException;
import java.net.URI;

/**
 * A request reached a member of a server group that does not lead it (it is down, a standby, or the
 * group was electing), and the client now sends its requests to the member that leads: {@link
 * RemoteRetry} tries again at once, without a backoff.
 */
final class LeaderMovedException extends IOException {
  LeaderMovedException(URI tried, URI leader, String why) {
    super(
        "skade server "
            + tried
            + " does not lead its group ("
            + why
            + "); its leader is "
            + leader);
  }
}
