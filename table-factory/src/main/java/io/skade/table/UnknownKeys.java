package io.skade.table;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.factories.Factory;
import org.apache.flink.table.factories.FactoryUtil;

/**
 * Option keys a factory does not know, each named with the known key it most likely stands for,
 * instead of Flink's bare list of supported options.
 */
final class UnknownKeys {
  private UnknownKeys() {}

  /**
   * Runs Flink's key check ({@code validate}); when it fails on keys the factory does not know,
   * fails instead naming each with the closest known key. {@code prefixesToSkip} are let through,
   * as Flink's {@code validateExcept} lets them.
   */
  static void validate(
      Factory factory, Set<String> keys, Set<String> prefixesToSkip, Runnable validate) {
    try {
      validate.run();
    } catch (ValidationException e) {
      Set<String> supported = new TreeSet<>();
      Stream.concat(factory.requiredOptions().stream(), factory.optionalOptions().stream())
          .flatMap(UnknownKeys::allKeys)
          .forEach(supported::add);
      Set<String> known = new LinkedHashSet<>(supported);
      Stream.of(
              FactoryUtil.CONNECTOR,
              FactoryUtil.PROPERTY_VERSION,
              FactoryUtil.WATERMARK_EMIT_STRATEGY,
              FactoryUtil.WATERMARK_ALIGNMENT_GROUP,
              FactoryUtil.WATERMARK_ALIGNMENT_MAX_DRIFT,
              FactoryUtil.WATERMARK_ALIGNMENT_UPDATE_INTERVAL,
              FactoryUtil.SOURCE_IDLE_TIMEOUT)
          .flatMap(UnknownKeys::allKeys)
          .forEach(known::add);
      List<String> unknown =
          keys.stream()
              .sorted()
              .filter(key -> !known.contains(key))
              .filter(key -> prefixesToSkip.stream().noneMatch(key::startsWith))
              .toList();
      if (unknown.isEmpty()) {
        throw e;
      }
      List<String> named = new ArrayList<>();
      for (String key : unknown) {
        String closest = closest(key, supported);
        named.add("'" + key + "'" + (closest == null ? "" : " (did you mean '" + closest + "'?)"));
      }
      throw new ValidationException(
          "Unsupported options found for '"
              + factory.factoryIdentifier()
              + "': "
              + String.join(", ", named)
              + ".\n\nSupported options:\n\n"
              + String.join("\n", supported),
          e);
    }
  }

  static Stream<String> allKeys(ConfigOption<?> option) {
    return Stream.concat(
        Stream.of(option.key()),
        StreamSupport.stream(option.fallbackKeys().spliterator(), false).map(FallbackKey::getKey));
  }

  /**
   * The known key {@code key} most likely stands for: the nearest by edit distance (ignoring case),
   * if within a third of its length (at least 2), else the one it is the last part of ({@code
   * startup.mode} for {@code scan.startup.mode}); null if none is near.
   */
  static String closest(String key, Collection<String> known) {
    String lower = key.toLowerCase(Locale.ROOT);
    String closest = null;
    int best = Integer.MAX_VALUE;
    for (String candidate : new TreeSet<>(known)) {
      int distance = editDistance(lower, candidate.toLowerCase(Locale.ROOT));
      if (distance < best) {
        best = distance;
        closest = candidate;
      }
    }
    if (closest != null && best <= Math.max(2, key.length() / 3)) {
      return closest;
    }
    return new TreeSet<>(known)
        .stream()
            .filter(candidate -> candidate.toLowerCase(Locale.ROOT).endsWith("." + lower))
            .findFirst()
            .orElse(null);
  }

  /** Levenshtein distance: the fewest inserted, deleted or replaced characters. */
  private static int editDistance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int replace = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(replace, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] swap = previous;
      previous = current;
      current = swap;
    }
    return previous[b.length()];
  }
}
