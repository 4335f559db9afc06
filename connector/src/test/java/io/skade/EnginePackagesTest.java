package io.skade;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The engine packages work on an Iceberg {@code Table} with no Flink job (DESIGN: engine code
 * first, Flink classes thin adapters over it): checked on the compiled classes, so a Flink type
 * used in an engine package fails the build, whether imported or written out in full. {@code
 * io.skade.lineage.flink} is lineage's Flink adapter, as {@code source} and {@code sink} are the
 * changelog's and the writer's.
 */
class EnginePackagesTest {
  private static final String[] ENGINE = {
    "io.skade.scan..",
    "io.skade.changelog..",
    "io.skade.lookup..",
    "io.skade.lineage",
    "io.skade.write.."
  };

  /** Flink, and skade's packages that use it (so an engine class using them needs Flink too). */
  private static final String[] FLINK = {
    "org.apache.flink..",
    "org.apache.iceberg.flink..",
    "io.skade.source..",
    "io.skade.sink..",
    "io.skade.maintenance..",
    "io.skade.table..",
    "io.skade.lineage.flink.."
  };

  private static JavaClasses classes;

  @BeforeAll
  static void importMainClasses() {
    // This module's main classes, where every engine package lives (surefire runs in the module).
    classes = new ClassFileImporter().importPath(Path.of("target", "classes"));
  }

  @Test
  void theEnginePackagesUseNoFlinkTypeAndNoFlinkAdapter() {
    noClasses()
        .that()
        .resideInAnyPackage(ENGINE)
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(FLINK)
        .because("the engine packages must compile and run without Flink on their class path")
        .check(classes);
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
}
