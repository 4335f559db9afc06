package io.skade.server;

import io.skade.server.Caller.Role;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import org.apache.iceberg.catalog.Namespace;

/**
 * Who may call the server, and what each may do: the bearer tokens of a token file, compared in
 * constant time. Iceberg's REST client sends its {@code token} property as {@code Authorization:
 * Bearer <token>}.
 *
 * <p>One token per line, then optional {@code key=value} fields: {@code role=read|write|admin}
 * (admin when absent), {@code namespaces=ns1,ns2.child} (the namespaces it may act on, with the
 * ones nested in them; all when absent; levels joined by {@code .}), {@code name=NAME} (who owns
 * the consumers it stores; a fingerprint of the token when absent). Blank lines and lines starting
 * with {@code #} are skipped.
 */
final class BearerTokens {
  private record Token(byte[] secret, Caller caller) {}

  private final List<Token> tokens;

  private BearerTokens(List<Token> tokens) {
    this.tokens = tokens;
  }

  /**
   * The tokens of {@code file}.
   *
   * @throws IllegalArgumentException when the file cannot be read, holds no token, or a line is
   *     malformed (naming the line)
   */
  static BearerTokens read(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "--token-file "
              + file
              + " cannot be read ("
              + e
              + "); give a file with one bearer token per line",
          e);
    }
    List<Token> tokens = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (!line.isEmpty() && !line.startsWith("#")) {
        tokens.add(token(line, file + " line " + (i + 1)));
      }
    }
    if (tokens.isEmpty()) {
      throw new IllegalArgumentException(
          "--token-file "
              + file
              + " holds no token; write one"
              + " bearer token per line (lines starting with # are comments)");
    }
    return new BearerTokens(List.copyOf(tokens));
  }

  private static Token token(String line, String where) {
    String[] fields = line.split("\\s+");
    String secret = fields[0];
    Role role = Role.ADMIN;
    List<Namespace> namespaces = List.of();
    String name = null;
    for (int f = 1; f < fields.length; f++) {
      int eq = fields[f].indexOf('=');
      String key = eq < 0 ? fields[f] : fields[f].substring(0, eq);
      String value = eq < 0 ? "" : fields[f].substring(eq + 1);
      switch (key) {
        case "role" -> role = role(value, where);
        case "namespaces" -> namespaces = namespaces(value, where);
        case "name" -> name = required(value, key, where);
        default ->
            throw new IllegalArgumentException(
                "--token-file "
                    + where
                    + ": unknown field '"
                    + fields[f]
                    + "'; a line is a token, then optionally role=read|write|admin,"
                    + " namespaces=ns1,ns2 and name=NAME");
      }
    }
    byte[] bytes = secret.getBytes(StandardCharsets.UTF_8);
    return new Token(bytes, new Caller(name == null ? fingerprint(bytes) : name, role, namespaces));
  }

  private static Role role(String value, String where) {
    try {
      return Role.valueOf(required(value, "role", where).toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--token-file " + where + ": role '" + value + "' is unknown; use read, write or admin",
          e);
    }
  }

  private static List<Namespace> namespaces(String value, String where) {
    List<Namespace> namespaces = new ArrayList<>();
    for (String namespace : required(value, "namespaces", where).split(",")) {
      if (namespace.isEmpty()
          || namespace.startsWith(".")
          || namespace.endsWith(".")
          || namespace.contains("..")) {
        throw new IllegalArgumentException(
            "--token-file "
                + where
                + ": namespace '"
                + namespace
                + "' is malformed; give namespaces separated by ',', their levels by '.'");
      }
      namespaces.add(Namespace.of(namespace.split("\\.")));
    }
    return namespaces;
  }

  private static String required(String value, String key, String where) {
    if (value.isEmpty()) {
      throw new IllegalArgumentException(
          "--token-file " + where + ": field '" + key + "' has no value; write " + key + "=VALUE");
    }
    return value;
  }

  /** A name for a token that has none, which does not give the token away. */
  private static String fingerprint(byte[] secret) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(secret);
      return "sha256:" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** The caller whose token an {@code Authorization} header value carries, or null for none. */
  Caller caller(String authorization) {
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return null;
    }
    byte[] given = authorization.substring(7).strip().getBytes(StandardCharsets.UTF_8);
    Caller found = null;
    for (Token token : tokens) {
      if (MessageDigest.isEqual(token.secret(), given) && found == null) {
        found = token.caller(); // every token compared: no timing hint
      }
    }
    return found;
  }
}
