package io.skade.testing;

import java.util.Arrays;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What Iceberg's shared worker pool is doing, for the message of a test whose writer stopped making
 * progress: every commit writes its manifests on that pool, so a pool whose threads all wait (for
 * instance on tasks queued behind them in the same pool) stops every writer of the JVM.
 */
public final class IcebergWorkers {
  private IcebergWorkers() {}

  /** The stack of each thread of Iceberg's worker pool. */
  public static String stacks() {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> e.getKey().getName().startsWith("iceberg-worker-pool"))
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
