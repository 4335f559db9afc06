package io.skade;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * How the engine packages depend on each other, checked on the compiled classes. That they use no
 * Flink type needs no test: this module's pom has no Flink dependency, so the compiler refuses one.
 */
class EnginePackagesTest {
  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    // This module's main classes (surefire runs in the module).
    classes = new ClassFileImporter().importPath(Path.of("target", "classes"));
  }

  @Test
  void theScanPackageDependsOnNoOtherEnginePackage() {
    noClasses()
        .that()
        .resideInAPackage("io.skade.scan..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(
            "io.skade.changelog..", "io.skade.lookup..", "io.skade.lineage..", "io.skade.write..")
        .because(
            "changelog, lookup, lineage and write share the scan pieces, not each other's"
                + " internals")
        .check(classes);
  }

  @Test
  void theEnginePackagesFormNoCycle() {
    slices()
        .matching("io.skade.(*)..")
        .should()
        .beFreeOfCycles()
        .because("each engine package builds on the ones below it, never on one above")
        .check(classes);
  }
}
