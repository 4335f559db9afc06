package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

class BadInputTest {
  @TempDir Path warehouse;

  @ParameterizedTest
  @ValueSource(
      strings = {
        "a/b",
        "..",
        "x..y",
        "tab\tname",
        "unit\u001fsep",
        "back\\slash",
        ".",
        "lone\ud800surrogate"
      })
  void invalidTableNamesAreRejectedAndNothingIsCommitted(String name) throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "ok");
      long seq = catalog.commitSeq();
      assertThatThrownBy(
              () -> catalog.createTable(TableIdentifier.of(Catalogs.DB, name), Catalogs.SCHEMA))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name")
          .hasMessageContaining("use names without");
      assertThat(catalog.commitSeq()).isEqualTo(seq);
      assertThat(catalog.listTables(Catalogs.DB))
          .containsExactly(TableIdentifier.of(Catalogs.DB, "ok"));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"../etc", "a/b", "..", "ctl\u0001", "_catalog"})
  void invalidNamespaceNamesAreRejected(String name) throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThatThrownBy(() -> catalog.createNamespace(Namespace.of(name)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid namespace");
      assertThat(catalog.listNamespaces()).isEmpty();
      assertThat(catalog.commitSeq()).isZero();
    }
  }

  @Test
  void tableKeysAreInjective() {
    String nested = TableKeys.tableKey(TableIdentifier.of(Namespace.of("a", "b"), "c"));
    String flat = TableKeys.tableKey(TableIdentifier.of(Namespace.of("a"), "b.c"));
    String dotted = TableKeys.tableKey(TableIdentifier.of(Namespace.of("a.b"), "c"));
    assertThat(List.of(nested, flat, dotted)).doesNotHaveDuplicates();
    assertThat(TableKeys.identifier(nested))
        .isEqualTo(TableIdentifier.of(Namespace.of("a", "b"), "c"));
    assertThat(TableKeys.identifier(flat)).isEqualTo(TableIdentifier.of(Namespace.of("a"), "b.c"));
  }

  @Test
  void aMissingWarehouseIsNamed() {
    assertThatThrownBy(() -> new SkadeCatalog().initialize("c", Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'warehouse' is required");
  }

  @Test
  void anUnwritableCatalogPathIsNamedAndNothingIsCreated() throws Exception {
    Path file = Files.writeString(warehouse.resolve("plain-file"), "not a directory");
    Path catalogPath = file.resolve("catalog");
    assertThatThrownBy(
            () -> Catalogs.open(warehouse, Map.of("catalog.path", catalogPath.toString())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(catalogPath.toString())
        .hasMessageContaining("writable catalog.path");
    assertThat(Files.readString(file)).isEqualTo("not a directory");
  }

  @Test
  void aNonEmptyDirectoryThatIsNotACatalogIsRefusedAndLeftAlone() throws Exception {
    Path dir = warehouse.resolve("_catalog");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("notes.txt"), "mine");
    List<Path> before = listing(dir);
    assertThatThrownBy(() -> Catalogs.open(warehouse))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(dir.toString())
        .hasMessageContaining("is not a skade catalog");
    assertThat(listing(dir)).isEqualTo(before);
  }

  @Test
  void aForeignRocksDbIsRefusedAndLeftAlone() throws Exception {
    Path dir = warehouse.resolve("_catalog");
    try (Options options = new Options().setCreateIfMissing(true);
        RocksDB db = RocksDB.open(options, dir.toString())) {
      db.put("key".getBytes(), "value".getBytes());
    }
    List<Path> before = listing(dir);
    assertThatThrownBy(() -> Catalogs.open(warehouse))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("without skade's column families");
    assertThat(listing(dir)).isEqualTo(before);
  }

  @Test
  void aCatalogWhoseCreationWasCutShortBeforeItsFirstRowStillOpens() throws Exception {
    // A crash between RocksDB creating the column families and the format row being written.
    Path dir = warehouse.resolve("_catalog");
    List<ColumnFamilyDescriptor> families = new ArrayList<>();
    families.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY));
    for (String name :
        List.of("tables", "commits", "commit_log", "meta", "namespaces", "consumers")) {
      families.add(new ColumnFamilyDescriptor(name.getBytes(StandardCharsets.UTF_8)));
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options =
            new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true);
        RocksDB db = RocksDB.open(options, dir.toString(), families, handles)) {
      handles.forEach(ColumnFamilyHandle::close);
    }
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "t");
      assertThat(catalog.commitSeq()).isEqualTo(1);
    }
  }

  @Test
  void outOfRangeLogReadsAreClampedOrNamed() throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "t");
      assertThat(catalog.commitsSince(-5, 10))
          .extracting(CommitEvent::commitSeq)
          .containsExactly(1L);
      assertThat(catalog.commitsSince(Long.MAX_VALUE, 10)).isEmpty();
      assertThatThrownBy(() -> catalog.commitsSince(0, 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("limit");
    }
  }

  @Test
  void namespacePropertiesLargerThanSixtyFourKilobytesAreStored() throws Exception {
    String big = "x".repeat(70_000);
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      catalog.createNamespace(Namespace.of("n"), Map.of("comment", big));
    }
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      assertThat(catalog.loadNamespaceMetadata(Namespace.of("n"))).containsEntry("comment", big);
    }
  }

  @Test
  void badCatalogOptionsNameTheOptionAndTheAcceptedValues() {
    assertThatThrownBy(() -> Catalogs.open(warehouse, Map.of("catalog.access", "writer")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'catalog.access' is 'writer'")
        .hasMessageContaining("'owner' and 'follower'");
    assertThatThrownBy(() -> Catalogs.open(warehouse, Map.of("commit-feed.buffer-size", "0")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'commit-feed.buffer-size' = '0'");
    assertThatThrownBy(
            () -> Catalogs.open(warehouse.resolve("none"), Map.of("catalog.access", "follower")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no skade catalog at");
  }

  @Test
  void aFollowerReadsButRefusesToWrite() throws Exception {
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Catalogs.append(Catalogs.createTable(owner, "t"), "f");
    }
    // A follower beside an owner is another process's (CrashRecoveryTest follows a live one):
    // in one JVM, every catalog of a directory shares the owner's store.
    try (SkadeCatalog follower = Catalogs.open(warehouse, Map.of("catalog.access", "follower"))) {
      assertThat(follower.isFollower()).isTrue();
      assertThat(follower.commitSeq()).isEqualTo(2);
      assertThat(follower.loadTable(TableIdentifier.of(Catalogs.DB, "t")).currentSnapshot())
          .isNotNull();
      assertThatThrownBy(() -> follower.createNamespace(Namespace.of("x")))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("read-only follower");
      assertThatThrownBy(follower::subscribeCommits)
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("commitsSince");
    }
  }

  private static List<Path> listing(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.sorted().toList();
    }
  }
}
