package io.skade.catalog;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Name validation and the injective key encoding of namespaces, tables and consumer ids.
 *
 * <p>A key is the namespace levels followed by the table name, joined by {@link #SEPARATOR} (the
 * ASCII unit separator). Every name part is validated to exclude the separator (and every other
 * control character), so the parts of a key are recovered by splitting it: the encoding is
 * injective. Names that could escape the warehouse ({@code /}, {@code \}, {@code ..}) are rejected
 * too, because the parts also name the table's directory.
 *
 * <p><b>Internal</b> to skade's catalog store. The class is public only for {@link #tableKey} and
 * {@link #identifier}, which {@code io.skade.catalog.remote} shares (the wire protocol and the
 * remote feed name tables as the store does); components use {@link CommitFeed#commitTableKey} and
 * {@link CommitFeed#commitTableIdentifier}.
 */
public final class TableKeys {
  static final char SEPARATOR = '\u001f';

  /** The catalog's own directory inside a local warehouse; no top-level namespace may take it. */
  static final String RESERVED_NAMESPACE = "_catalog";

  private TableKeys() {}

  /**
   * The key of a table: its validated namespace levels and name joined by {@link #SEPARATOR}.
   *
   * @throws IllegalArgumentException naming the part that is not a valid name
   */
  public static String tableKey(TableIdentifier identifier) {
    validatePart("table", identifier.name(), identifier.toString());
    return namespaceKey(identifier.namespace()) + SEPARATOR + identifier.name();
  }

  static String namespaceKey(Namespace namespace) {
    validate(namespace);
    return String.join(String.valueOf(SEPARATOR), namespace.levels());
  }

  /** Key prefix shared by every table directly or indirectly inside {@code namespace}. */
  static String tablePrefix(Namespace namespace) {
    return namespace.isEmpty() ? "" : namespaceKey(namespace) + SEPARATOR;
  }

  /** The table a {@link #tableKey} names: the inverse of {@link #tableKey}. */
  public static TableIdentifier identifier(String tableKey) {
    String[] parts = tableKey.split(String.valueOf(SEPARATOR), -1);
    return TableIdentifier.of(
        Namespace.of(Arrays.copyOf(parts, parts.length - 1)), parts[parts.length - 1]);
  }

  static Namespace namespace(String namespaceKey) {
    return Namespace.of(namespaceKey.split(String.valueOf(SEPARATOR), -1));
  }

  static byte[] bytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  static String string(byte[] key) {
    return new String(key, StandardCharsets.UTF_8);
  }

  /**
   * The key of a consumer in the {@code consumers} family: the id itself, once validated to be
   * non-empty, free of control characters and encodable as UTF-8 (so the key is injective).
   */
  static String consumerKey(String consumerId) {
    String problem =
        consumerId == null || consumerId.isEmpty() ? "it is empty" : characterProblem(consumerId);
    if (problem != null) {
      throw new IllegalArgumentException(
          "invalid consumer id '"
              + (consumerId == null ? null : printable(consumerId))
              + "': "
              + problem
              + "; use a non-empty id without control characters, e.g. the job's"
              + " name followed by the source's uid");
    }
    return consumerId;
  }

  static void validate(TableIdentifier identifier) {
    validate(identifier.namespace());
    validatePart("table", identifier.name(), identifier.toString());
  }

  static void validate(Namespace namespace) {
    if (namespace.isEmpty()) {
      throw new IllegalArgumentException(
          "the empty namespace is not supported by a skade catalog: put tables in a named"
              + " namespace (database), e.g. 'default'");
    }
    for (String level : namespace.levels()) {
      validatePart("namespace", level, namespace.toString());
    }
    if (namespace.level(0).equals(RESERVED_NAMESPACE)) {
      throw new IllegalArgumentException(
          "invalid namespace '"
              + namespace
              + "': '"
              + RESERVED_NAMESPACE
              + "' is reserved for the catalog's own files; choose another name");
    }
  }

  private static void validatePart(String kind, String part, String whole) {
    String problem = problem(part);
    if (problem != null) {
      throw new IllegalArgumentException(
          "invalid "
              + kind
              + " name '"
              + printable(whole)
              + "': "
              + problem
              + "; use names without '/', '\\', '..' or control characters");
    }
  }

  private static String problem(String part) {
    if (part == null || part.isEmpty()) {
      return "a name part is empty";
    }
    if (part.indexOf('/') >= 0 || part.indexOf('\\') >= 0) {
      return "it contains a path separator";
    }
    if (part.contains("..") || part.equals(".")) {
      return "it contains '..' or is '.'";
    }
    return characterProblem(part);
  }

  /** Why {@code s} cannot be part of a key (a control character, or no UTF-8 form), or null. */
  private static String characterProblem(String s) {
    for (int i = 0; i < s.length(); ) {
      int c = s.codePointAt(i);
      if (Character.isISOControl(c)) {
        return "it contains the control character U+" + String.format("%04X", c);
      }
      if (Character.getType(c) == Character.SURROGATE) {
        // UTF-8 cannot encode it: two names would share one key.
        return "it contains an unpaired surrogate U+" + String.format("%04X", c);
      }
      i += Character.charCount(c);
    }
    return null;
  }

  private static String printable(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      out.append(Character.isISOControl(c) ? String.format("\\u%04x", (int) c) : String.valueOf(c));
    }
    return out.toString();
  }
}
