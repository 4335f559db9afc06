package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

class BadInputTest {
  @TempDir Path warehouse;

  @ParameterizedTest
  @ValueSource(strings = {"a/b", "..", "x..y", "tab\tname", "unit\u001fsep", "back\\slash", "."})
  void invalidTableNamesAreRejectedAndNothingIsCommitted(String name) throws Exception {
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Catalogs.createTable(catalog, "ok");
      long seq = catalog.commitSeq();
      assertThatThrownBy(() -> catalog.createTable(TableIdentifier.of(Catalogs.DB, name),
              Catalogs.SCHEMA))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("invalid table name")
          .hasMessageContaining("use names without");
      assertThat(catalog.commitSeq()).isEqualTo(seq);
      assertThat(catalog.listTables(Catalogs.DB)).containsExactly(
          TableIdentifier.of(Catalogs.DB, "ok"));
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
    assertThat(TableKeys.identifier(nested)).isEqualTo(TableIdentifier.of(Namespace.of("a", "b"), "c"));
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
    assertThatThrownBy(() -> Catalogs.open(warehouse, Map.of("catalog.path", catalogPath.toString())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(catalogPath.toString())
        .hasMessageContaining("writable catalog.path");
    assertThat(Files.readString(file)).isEqualTo("not a directory");
  }

  @Test
  void aSecondOwnerInTheSameJvmIsToldTheDirectoryIsHeldAndTheFirstKeepsWorking() throws Exception {
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Catalogs.createTable(owner, "t");
      assertThatThrownBy(() -> Catalogs.open(warehouse))
          .isInstanceOf(CatalogLockedException.class)
          .hasMessageContaining(owner.catalogPath())
          .hasMessageContaining("only one process may own");
      Catalogs.append(owner.loadTable(TableIdentifier.of(Catalogs.DB, "t")), "f");
      assertThat(owner.commitSeq()).isEqualTo(2);
    }
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
  void badCatalogOptionsNameTheOptionAndTheAcceptedValues() {
    assertThatThrownBy(() -> Catalogs.open(warehouse, Map.of("catalog.access", "writer")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'catalog.access' is 'writer'")
        .hasMessageContaining("'owner' and 'follower'");
    assertThatThrownBy(() -> Catalogs.open(warehouse, Map.of("commit-feed.buffer-size", "0")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'commit-feed.buffer-size' = '0'");
    assertThatThrownBy(() -> Catalogs.open(warehouse.resolve("none"),
            Map.of("catalog.access", "follower")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no skade catalog at");
  }

  @Test
  void aFollowerReadsButRefusesToWrite() throws Exception {
    try (SkadeCatalog owner = Catalogs.open(warehouse)) {
      Catalogs.createTable(owner, "t");
      try (SkadeCatalog follower = Catalogs.open(warehouse, Map.of("catalog.access", "follower"))) {
        assertThat(follower.isFollower()).isTrue();
        Catalogs.append(owner.loadTable(TableIdentifier.of(Catalogs.DB, "t")), "f");
        // The follower catches up on demand: it sees the commit made after it opened.
        assertThat(follower.commitSeq()).isEqualTo(owner.commitSeq());
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
  }

  private static List<Path> listing(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.sorted().toList();
    }
  }
}
