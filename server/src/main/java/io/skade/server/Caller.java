package io.skade.server;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.exceptions.ForbiddenException;

/**
 * Who sent a request: the name, role and namespaces of the bearer token it carried. Every route
 * checks the caller before it reads a body or changes anything, and refuses with {@code 403} naming
 * the role or namespace it needs.
 *
 * @param name the token's name: the owner of the consumers it stores
 * @param role what the token may do
 * @param namespaces the namespaces it may act on (each with the namespaces nested in it), or empty
 *     for all
 */
record Caller(String name, Role role, List<Namespace> namespaces) {
  /** What a token may do; each role may do what the roles before it may. */
  enum Role {
    /** Loads, scans, the commit feed, lookups, lineage, and its own consumers' cursors. */
    READ,
    /** Also commits, creates tables and namespaces. */
    WRITE,
    /** Also drops, renames, maintenance (expiry, rewrites, locks), and others' consumers. */
    ADMIN;

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The caller of a server that serves anyone without a token. */
  static final Caller ANYONE = new Caller("anyone", Role.ADMIN, List.of());

  Caller {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(role, "role");
    namespaces = List.copyOf(namespaces);
  }

  /** Whether the token may act on {@code namespace}: one of its namespaces or nested in one. */
  boolean reaches(Namespace namespace) {
    return namespaces.isEmpty()
        || namespaces.stream().anyMatch(allowed -> within(namespace, allowed));
  }

  /**
   * Whether {@code namespace} may be listed to the caller: one it reaches, or one that holds one it
   * reaches (so that a client can walk down to it).
   */
  boolean sees(Namespace namespace) {
    return reaches(namespace) || namespaces.stream().anyMatch(mine -> within(mine, namespace));
  }

  /** Whether {@code inner} is {@code outer} or nested in it. */
  private static boolean within(Namespace inner, Namespace outer) {
    if (inner.length() < outer.length()) {
      return false;
    }
    for (int i = 0; i < outer.length(); i++) {
      if (!outer.level(i).equals(inner.level(i))) {
        return false;
      }
    }
    return true;
  }

  /**
   * Refuses {@code what} unless the caller has {@code needed}.
   *
   * @throws ForbiddenException naming the role needed
   */
  void require(Role needed, String what) {
    if (role.compareTo(needed) < 0) {
      throw new ForbiddenException(
          "token '%s' has role %s, and %s needs role %s; use a token with role %s (the server's"
              + " --token-file gives each token its role)",
          name, role.label(), what, needed.label(), needed.label());
    }
  }

  /**
   * Refuses {@code what} on {@code namespace} unless the caller has {@code needed} and reaches it.
   *
   * @throws ForbiddenException naming the role or the namespace
   */
  void require(Role needed, Namespace namespace, String what) {
    require(needed, what);
    if (!reaches(namespace)) {
      throw new ForbiddenException(
          "token '%s' is limited to namespaces %s, and %s is on namespace '%s'; use a token whose"
              + " namespaces include it",
          name, namespaces, what, namespace);
    }
  }
}
