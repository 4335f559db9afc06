package io.skade;

import java.util.Map;

/**
 * The shared {@link io.skade.testing.TestCatalog} under its old name, for the tests that still
 * import it from here while other changes edit them; remove once they import the shared one.
 */
@Deprecated
public final class TestCatalog extends io.skade.testing.TestCatalog {
  public TestCatalog() {
    super();
  }

  public TestCatalog(Map<String, String> extraProperties) {
    super(extraProperties);
  }
}
