package io.skade.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Where a cluster test's processes write their logs, {@code target/cluster-logs/<class>/<test>}:
 * kept when the test fails, deleted when it passes.
 */
final class ClusterLogs implements TestWatcher {
  /** The log directory of {@code test} of {@code testClass}, created empty. */
  static Path of(Class<?> testClass, String test) throws IOException {
    Path dir = Path.of("target", "cluster-logs", testClass.getSimpleName(), test).toAbsolutePath();
    delete(dir);
    return Files.createDirectories(dir);
  }

  @Override
  public void testSuccessful(ExtensionContext context) {
    delete(
        Path.of(
                "target",
                "cluster-logs",
                context.getRequiredTestClass().getSimpleName(),
                context.getRequiredTestMethod().getName())
            .toAbsolutePath());
  }

  /** Deletes {@code dir} and what it holds, if it exists. */
  static void delete(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files
          .sorted(Comparator.reverseOrder())
          .forEach(
              file -> {
                try {
                  Files.delete(file);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
