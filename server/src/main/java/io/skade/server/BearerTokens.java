package io.skade.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;

/**
 * Who may call the server: the bearer tokens of a token file (one per line; blank lines and lines
 * starting with {@code #} are skipped), compared in constant time. Iceberg's REST client sends its
 * {@code token} property as {@code Authorization: Bearer <token>}.
 */
final class BearerTokens {
  private final List<byte[]> tokens;

  private BearerTokens(List<byte[]> tokens) {
    this.tokens = tokens;
  }

  /**
   * The tokens of {@code file}.
   *
   * @throws IllegalArgumentException when the file cannot be read or holds no token
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
    List<byte[]> tokens = new ArrayList<>();
    for (String line : lines) {
      String token = line.strip();
      if (!token.isEmpty() && !token.startsWith("#")) {
        tokens.add(token.getBytes(StandardCharsets.UTF_8));
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

  /** Whether an {@code Authorization} header value carries one of the tokens. */
  boolean allows(String authorization) {
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    byte[] given = authorization.substring(7).strip().getBytes(StandardCharsets.UTF_8);
    boolean allowed = false;
    for (byte[] token : tokens) {
      allowed |= MessageDigest.isEqual(token, given); // every token compared: no timing hint
    }
    return allowed;
  }
}
