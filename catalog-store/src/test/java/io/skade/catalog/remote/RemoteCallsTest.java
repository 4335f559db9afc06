package io.skade.catalog.remote;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
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
 * Every call to a skade server rides {@link RemoteRetry}: only the classes of this package that
 * apply it reach the network, and no other class of catalog-store does. (table-factory's {@code
 * RemoteCallsTest} holds the same rule for engine, connector and table-factory.)
 */
class RemoteCallsTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    // This module's main classes (surefire runs in the module).
    classes = new ClassFileImporter().importPath(Path.of("target", "classes"));
  }

  @Test
  void noClassOutsideTheRemotePackageReachesTheServer() {
    noClasses()
        .that()
        .resideOutsideOfPackage("io.skade.catalog.remote")
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
            "a remote call goes through the objects a RemoteConnection hands out, which ride its"
                + " retry policy")
        .check(classes);
  }

  @Test
  void insideTheRemotePackageOnlyTheClassesThatApplyThePolicyReachTheServer() {
    noClasses()
        .that()
        .resideInAPackage("io.skade.catalog.remote")
        .and()
        .haveNameNotMatching(".*\\.(RemoteConnection|RidingCatalog|LeaderFollowingClient)(\\$.*)?")
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(
            RESTCatalog.class, RESTSessionCatalog.class, RESTClient.class, HTTPClient.class)
        .because(
            "the REST catalog is opened by the connection (for a server group, on the"
                + " leader-following client) and reached through RidingCatalog")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("io.skade.catalog.remote")
        .and()
        .haveNameNotMatching(".*\\.SkadeServerClient(\\$.*)?")
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(HttpClient.class, HttpURLConnection.class)
        .because("skade's own routes are reached through SkadeServerClient")
        .check(classes);
    noClasses()
        .that()
        .resideInAPackage("io.skade.catalog.remote")
        .and()
        .haveNameNotMatching(
            ".*\\.(RemoteConnection|RemoteCommitFeed|SkadeServerClient|ServerMetadataIO)(\\$.*)?")
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(SkadeServerClient.class)
        .because(
            "a SkadeServerClient is made by the connection, with the connection's policy (the"
                + " metadata IO is handed the connection's, and reads the store rather than retry)")
        .check(classes);
    classes()
        .that()
        .haveNameMatching(
            ".*\\.(RemoteConnection|RidingCatalog|RidingTableOperations|RemoteCommitFeed"
                + "|SkadeServerClient)")
        .should()
        .dependOnClassesThat()
        .belongToAnyOf(RemoteRetry.class)
        .because("each class that reaches the server applies the one retry policy")
        .check(classes);
  }
}
