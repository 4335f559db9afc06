package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

/**
 * Commits under an idempotency key: the key is written in the commit's batch, a second commit under
 * it is refused writing nothing, the key outlives a reopen until it is expired, and a catalog made
 * before keys existed gains their column family when its owner opens it.
 */
class IdempotencyKeysTest {
  private static final TableIdentifier T = TableIdentifier.of("db", "t");
  @TempDir Path root;

  private SkadeCatalog open() {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("c", Map.of("warehouse", root.toString()));
    return catalog;
  }

  private static String location(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }

  @Test
  void aKeyCommitsOnceAndOutlivesAReopenUntilExpired() throws Exception {
    String committed;
    try (SkadeCatalog catalog = open()) {
      catalog.createNamespace(Namespace.of("db"));
      Table table =
          catalog.createTable(
              T, new Schema(Types.NestedField.required(1, "id", Types.LongType.get())));
      long before = catalog.commitSeq();
      catalog.withIdempotencyKey(
          "k1",
          () -> {
            table.updateProperties().set("a", "1").commit();
            table.updateProperties().set("b", "2").commit(); // a second commit: not under the key
            return null;
          });
      assertThat(catalog.commitSeq()).isEqualTo(before + 2);
      IdempotencyRecord record = catalog.idempotencyRecord("k1").orElseThrow();
      committed = record.metadataLocations().get(0);
      assertThat(catalog.commitsSince(before, 1).get(0).metadataLocation()).isEqualTo(committed);

      long seq = catalog.commitSeq();
      Table again = catalog.loadTable(T);
      assertThatThrownBy(
              () ->
                  catalog.withIdempotencyKey(
                      "k1",
                      () -> {
                        again.updateProperties().set("c", "3").commit();
                        return null;
                      }))
          .isInstanceOf(IdempotencyKeyUsedException.class)
          .satisfies(
              e -> assertThat(((IdempotencyKeyUsedException) e).record().key()).isEqualTo("k1"));
      assertThat(catalog.commitSeq())
          .as("commit_seq after a second commit under the key")
          .isEqualTo(seq);
      assertThat(catalog.loadTable(T).properties()).doesNotContainKey("c");
    }
    try (SkadeCatalog catalog = open()) {
      assertThat(catalog.idempotencyRecord("k1").orElseThrow().metadataLocations())
          .containsExactly(committed);
      assertThat(catalog.expireIdempotencyKeys(Instant.now().minusSeconds(3600))).isZero();
      assertThat(catalog.expireIdempotencyKeys(Instant.now().plusSeconds(1))).isEqualTo(1);
      assertThat(catalog.idempotencyRecord("k1")).isEmpty();
    }
  }

  @Test
  void badKeysAreRefused() throws Exception {
    try (SkadeCatalog catalog = open()) {
      for (String bad : new String[] {"", "a\nb", "x".repeat(257)}) {
        assertThatThrownBy(() -> catalog.withIdempotencyKey(bad, () -> null))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("idempotency key");
      }
    }
  }

  @Test
  void aCatalogMadeBeforeKeysExistedGainsTheirFamilyWhenItsOwnerOpensIt() throws Exception {
    try (SkadeCatalog catalog = open()) {
      catalog.createNamespace(Namespace.of("db"));
    }
    String path = root.resolve("_catalog").toString();
    // Remove the family, as a catalog written by an older skade lacks it.
    List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
    try (Options options = new Options()) {
      for (byte[] name : RocksDB.listColumnFamilies(options, path)) {
        descriptors.add(new ColumnFamilyDescriptor(name));
      }
    }
    List<ColumnFamilyHandle> handles = new ArrayList<>();
    try (DBOptions options = new DBOptions();
        RocksDB db = RocksDB.open(options, path, descriptors, handles)) {
      for (ColumnFamilyHandle handle : handles) {
        if (new String(handle.getName()).equals("idempotency_keys")) {
          db.dropColumnFamily(handle);
        }
      }
      handles.forEach(ColumnFamilyHandle::close);
    }
    try (Options options = new Options()) {
      assertThat(RocksDB.listColumnFamilies(options, path))
          .map(String::new)
          .doesNotContain("idempotency_keys");
    }
    try (SkadeCatalog catalog = open()) {
      assertThat(catalog.namespaceExists(Namespace.of("db"))).isTrue();
      catalog.withIdempotencyKey(
          "k",
          () -> {
            catalog.createNamespace(Namespace.of("db2"));
            return null;
          });
      assertThat(catalog.idempotencyRecord("k")).isPresent();
    }
  }
}
