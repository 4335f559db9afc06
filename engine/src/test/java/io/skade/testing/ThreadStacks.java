package io.skade.testing;

import java.util.Arrays;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/** The stacks of some of this JVM's threads, for the message of a test that stopped progressing. */
public final class ThreadStacks {
  private ThreadStacks() {}

  /** The state and top frames of each thread whose name {@code named} accepts, by name. */
  public static String of(Predicate<String> named) {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> named.test(e.getKey().getName()))
        .sorted(Map.Entry.comparingByKey((a, b) -> a.getName().compareTo(b.getName())))
        .map(
            e ->
                e.getKey().getName()
                    + " "
                    + e.getKey().getState()
                    + "\n    at "
                    + Arrays.stream(e.getValue())
                        .limit(14)
                        .map(String::valueOf)
                        .collect(Collectors.joining("\n    at ")))
        .collect(Collectors.joining("\n"));
  }
}
