package io.skade.changelog;

import java.io.Serializable;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import java.util.stream.Collectors;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Which tables of a catalog a {@link DatabaseChangelog} follows: named ones, those of a namespace,
 * or those whose name ({@code namespace.name}) matches a pattern. A selection is judged per commit,
 * so a table created (or renamed) later into a namespace or pattern is followed from its first
 * commit.
 */
public final class TableSelection implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Set<String> names;
  private final String namespace;
  private final String pattern;
  private transient Pattern compiled;

  private TableSelection(Set<String> names, String namespace, String pattern) {
    this.names = names;
    this.namespace = namespace;
    this.pattern = pattern;
  }

  /** These tables. */
  public static TableSelection tables(List<TableIdentifier> tables) {
    if (tables.isEmpty()) {
      throw new IllegalArgumentException(
          "a selection of no tables; name at least one table, or select a namespace");
    }
    return new TableSelection(
        tables.stream().map(TableIdentifier::toString).collect(Collectors.toUnmodifiableSet()),
        null,
        null);
  }

  /** The tables of {@code namespace} (not of namespaces nested in it). */
  public static TableSelection namespace(Namespace namespace) {
    return new TableSelection(null, namespace.toString(), null);
  }

  /**
   * The tables whose whole name, {@code namespace.name}, matches the regular expression {@code
   * regex}, such as {@code shop\.order.*}.
   *
   * @throws IllegalArgumentException naming the expression and its error, when it does not compile
   */
  public static TableSelection matching(String regex) {
    try {
      Pattern.compile(regex);
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException(
          "table pattern '" + regex + "' is not a regular expression: " + e.getDescription(), e);
    }
    return new TableSelection(null, null, regex);
  }

  /** Whether {@code table} is selected. */
  public boolean matches(TableIdentifier table) {
    if (names != null) {
      return names.contains(table.toString());
    }
    if (namespace != null) {
      return table.namespace().toString().equals(namespace);
    }
    if (compiled == null) {
      compiled = Pattern.compile(pattern);
    }
    return compiled.matcher(table.toString()).matches();
  }

  @Override
  public String toString() {
    if (names != null) {
      return "tables " + names.stream().sorted().toList();
    }
    return namespace != null
        ? "the tables of namespace " + namespace
        : "tables matching " + pattern;
  }
}
