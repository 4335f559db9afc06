package io.skade.table;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import io.skade.catalog.remote.RemoteCommitFeed;
import io.skade.catalog.remote.SkadeServerClient;
import java.net.HttpURLConnection;
import java.net.http.HttpClient;
import java.nio.file.Path;
import org.apache.iceberg.rest.HTTPClient;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.rest.RESTClient;
import org.apache.iceberg.rest.RESTSessionCatalog;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every call the engine and the Flink adapters make to a skade server rides the remote connection's
 * one retry policy ({@code io.skade.catalog.remote.RemoteRetry}): none of their classes opens a
 * REST catalog, an HTTP client or a skade server client of its own, so a new remote call cannot
 * forget the policy. (catalog-store's {@code RemoteCallsTest} holds the rule inside catalog-store.)
 */
class RemoteCallsTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    // The main classes of this module and of the two below it that reach servers (surefire runs
    // in the module; the reactor builds the others first).
    classes =
        new ClassFileImporter()
            .importPaths(
                Path.of("target", "classes"),
                Path.of("..", "engine", "target", "classes"),
                Path.of("..", "connector", "target", "classes"));
    // A rule checked on no classes would pass: make sure each module was found.
    assertThat(classes.contain("io.skade.lookup.LatestTable")).isTrue();
    assertThat(classes.contain("io.skade.lineage.flink.SkadeJobListenerFactory")).isTrue();
    assertThat(classes.contain("io.skade.table.SkadeDynamicTableFactory")).isTrue();
  }

  @Test
  void noEngineOrFlinkClassReachesTheServerAroundThePolicy() {
    noClasses()
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(
            RESTCatalog.class,
            RESTSessionCatalog.class,
            RESTClient.class,
            HTTPClient.class,
            HttpClient.class,
            HttpURLConnection.class,
            SkadeServerClient.class,
            RemoteCommitFeed.class)
        .because(
            "a remote call goes through the objects CatalogConnection.open hands out (or"
                + " RemoteConnection.reportJobRun), which ride the connection's retry policy")
        .check(classes);
  }
}
