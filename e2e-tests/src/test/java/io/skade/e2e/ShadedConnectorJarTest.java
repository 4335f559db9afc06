package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the shaded skade-sql-connector jar (table-factory's package phase) holds: skade and its
 * libraries, third-party packages relocated under io.skade.shaded, and neither RocksDB nor anything
 * of Flink but flink-connector-base.
 */
class ShadedConnectorJarTest {
  /** Packages that must appear only under io/skade/shaded/. */
  private static final List<String> RELOCATED =
      List.of(
          "org/apache/parquet/",
          "shaded/parquet/",
          "org/apache/avro/",
          "com/fasterxml/jackson/",
          "com/github/benmanes/caffeine/",
          "org/apache/orc/",
          "io/airlift/",
          "org/threeten/extra/",
          "org/apache/hc/",
          "org/roaringbitmap/",
          "org/apache/datasketches/",
          "com/google/flatbuffers/",
          "org/eclipse/collections/",
          "org/locationtech/jts/",
          "org/apache/commons/codec/",
          "org/apache/commons/pool/",
          "io/openlineage/",
          "io/micrometer/",
          "org/HdrHistogram/",
          "org/yaml/snakeyaml/");

  private static final String SERVICES =
      "META-INF/services/org.apache.flink.table.factories.Factory";

  private static JarFile jar;
  private static List<String> entries;

  @BeforeAll
  static void open() throws IOException {
    Path path = sqlConnectorJar();
    jar = new JarFile(path.toFile());
    entries = jar.stream().map(JarEntry::getName).collect(Collectors.toList());
  }

  @AfterAll
  static void close() throws IOException {
    jar.close();
  }

  static Path sqlConnectorJar() {
    String property = System.getProperty("skade.sqlConnectorJar");
    assertThat(property).as("system property skade.sqlConnectorJar (set by surefire)").isNotNull();
    Path path = Path.of(property).toAbsolutePath().normalize();
    assertThat(path).as("the shaded jar; built by table-factory's package phase").isRegularFile();
    return path;
  }

  @Test
  void holdsTheSkadeFactoriesAndTheirServiceEntries() throws IOException {
    assertThat(entries)
        .contains(
            "io/skade/table/SkadeDynamicTableFactory.class",
            "io/skade/table/SkadeCatalogFactory.class",
            "io/skade/catalog/SkadeCatalog.class",
            "org/apache/iceberg/flink/sink/IcebergSink.class",
            "org/apache/flink/connector/base/source/reader/SourceReaderBase.class");

    List<String> factories = serviceLines(SERVICES);
    assertThat(factories)
        .contains("io.skade.table.SkadeDynamicTableFactory", "io.skade.table.SkadeCatalogFactory");
    // Iceberg's 'iceberg' connector and catalog belong to an iceberg-flink-runtime jar.
    assertThat(factories)
        .doesNotContain(
            "org.apache.iceberg.flink.FlinkDynamicTableFactory",
            "org.apache.iceberg.flink.FlinkCatalogFactory");
    assertThat(factories)
        .allSatisfy(
            name ->
                assertThat(entries)
                    .as("service class of %s", name)
                    .contains(name.replace('.', '/') + ".class"));
    // Owner catalogs find skade's lineage as a catalog service.
    assertThat(serviceLines("META-INF/services/io.skade.catalog.CatalogService"))
        .containsExactly("io.skade.lineage.CatalogLineage");
  }

  @Test
  void bundlesNoRocksDbClassesOrNatives() {
    // Flink loads org.rocksdb.* parent-first from its own frocksdbjni.
    assertThat(entries).noneMatch(e -> e.startsWith("org/rocksdb/"));
    assertThat(entries).noneMatch(e -> e.contains("librocksdbjni"));
  }

  @Test
  void bundlesNothingOfFlinkButConnectorBase() {
    assertThat(entries).noneMatch(e -> e.startsWith("org/apache/flink/table/"));
    assertThat(
            entries.stream().filter(e -> e.startsWith("org/apache/flink/") && e.endsWith(".class")))
        .isNotEmpty()
        .allMatch(e -> e.startsWith("org/apache/flink/connector/base/"));
    assertThat(entries).noneMatch(e -> e.startsWith("org/slf4j/"));
    assertThat(entries)
        .noneMatch(
            e -> e.startsWith("org/apache/log4j/") || e.startsWith("org/apache/logging/log4j/"));
  }

  @Test
  void relocatesThirdPartyPackagesUnderIoSkadeShaded() throws IOException {
    for (String pkg : RELOCATED) {
      assertThat(entries)
          .as("relocated %s", pkg)
          .anyMatch(e -> e.startsWith("io/skade/shaded/" + pkg) && e.endsWith(".class"));
      assertThat(entries).as("unrelocated %s", pkg).noneMatch(e -> e.startsWith(pkg));
    }
    // Relocation rewrote the references in the classes that stay, Iceberg's JSON parsers too.
    assertThat(classText("org/apache/iceberg/TableMetadataParser.class"))
        .contains("io/skade/shaded/com/fasterxml/jackson/core/JsonGenerator")
        .doesNotContain("Lcom/fasterxml/jackson/");
    assertThat(classText("org/apache/iceberg/parquet/Parquet.class"))
        .contains("io/skade/shaded/org/apache/parquet/")
        .doesNotContain("Lorg/apache/parquet/");
    // Multi-release variants move with their packages, or they would define the original names.
    assertThat(manifestValue("Multi-Release")).isEqualTo("true");
    List<String> versioned =
        entries.stream()
            .filter(e -> e.startsWith("META-INF/versions/") && e.endsWith(".class"))
            .map(e -> e.replaceFirst("^META-INF/versions/\\d+/", ""))
            .collect(Collectors.toList());
    assertThat(versioned)
        .isNotEmpty()
        .allSatisfy(
            name -> assertThat(entries).as("base class of versioned %s", name).contains(name));
    for (String pkg : RELOCATED) {
      assertThat(versioned).as("unrelocated versioned %s", pkg).noneMatch(e -> e.startsWith(pkg));
    }
  }

  @Test
  void keepsIcebergArrowAndHadoopUnderTheirOwnNames() throws IOException {
    // Iceberg's io-impl / catalog-impl and Arrow's allocator are found by class name.
    assertThat(entries)
        .contains(
            "org/apache/iceberg/hadoop/HadoopFileIO.class",
            "org/apache/arrow/memory/DefaultAllocationManagerFactory.class",
            "org/apache/hadoop/conf/Configuration.class",
            "org/apache/hadoop/fs/LocalFileSystem.class");
    assertThat(entries)
        .noneMatch(
            e ->
                e.startsWith("io/skade/shaded/org/apache/iceberg/")
                    || e.startsWith("io/skade/shaded/org/apache/arrow/")
                    || e.startsWith("io/skade/shaded/org/apache/hadoop/"));
    // Hadoop's FileSystem registry survives the merge of META-INF/services.
    assertThat(serviceLines("META-INF/services/org.apache.hadoop.fs.FileSystem"))
        .contains("org.apache.hadoop.fs.LocalFileSystem");
  }

  @Test
  void carriesNoSignaturesOrModuleDescriptors() {
    assertThat(entries).noneMatch(e -> e.matches("META-INF/[^/]*\\.(SF|DSA|RSA)"));
    assertThat(entries).noneMatch(e -> e.endsWith("module-info.class"));
  }

  private static List<String> serviceLines(String name) throws IOException {
    JarEntry entry = jar.getJarEntry(name);
    assertThat(entry).as(name).isNotNull();
    List<String> lines = new ArrayList<>();
    try (InputStream in = jar.getInputStream(entry)) {
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        String trimmed = line.replaceFirst("#.*", "").trim();
        if (!trimmed.isEmpty()) {
          lines.add(trimmed);
        }
      }
    }
    return lines;
  }

  /** A class file's bytes as Latin-1 text, enough to look for names in its constant pool. */
  private static String classText(String name) throws IOException {
    JarEntry entry = jar.getJarEntry(name);
    assertThat(entry).as(name).isNotNull();
    try (InputStream in = jar.getInputStream(entry)) {
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  private static String manifestValue(String name) throws IOException {
    return jar.getManifest().getMainAttributes().getValue(name);
  }
}
