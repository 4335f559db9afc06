package io.skade.testing;

/**
 * What Iceberg's shared worker pool is doing, for the message of a test whose writer stopped making
 * progress: every commit writes its manifests on that pool, so a pool whose threads all wait (for
 * instance on tasks queued behind them in the same pool) stops every writer of the JVM.
 */
public final class IcebergWorkers {
  private IcebergWorkers() {}

  /** The stack of each thread of Iceberg's worker pool. */
  public static String stacks() {
    return ThreadStacks.of(name -> name.startsWith("iceberg-worker-pool"));
  }
}
