package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lookups through {@link LatestTable} see every commit acknowledged before the probe, with no
 * waiting: the commits go through a writer on a table loaded separately from the catalog, the poll
 * interval is an hour, and expected rows come from Iceberg's reader on a fresh load.
 */
class PointLookupFreshnessTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "city", Types.StringType.get()),
              Types.NestedField.optional(3, "version", Types.IntegerType.get())),
          Set.of(1));
  private static final TableIdentifier ID = TableIdentifier.of("db", "fresh");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private final PointLookup.Counters counters = new PointLookup.Counters();
  private LookupCaches.Handle caches;
  private LatestTable latest;
  private TableWriter writer;

  @BeforeEach
  void createTable() {
    caches = LookupCaches.acquire();
    catalog.get().buildTable(ID, SCHEMA).withProperty("format-version", "2").create();
    writer = new TableWriter(catalog.get().loadTable(ID));
    writer.append(List.of(row(1, "Oslo", 0), row(2, "Oslo", 0)));
    latest = new LatestTable(CatalogConnection.of(catalog.get()), ID, Duration.ofHours(1));
  }

  @AfterEach
  void releaseCaches() {
    caches.close();
  }

  @Test
  void eachCommitIsSeenByTheNextProbe() {
    assertThat(probe("id", 1L)).containsExactly(canonical(row(1, "Oslo", 0)));
    for (int version = 1; version <= 8; version++) {
      writer.upsert(List.of(row(1, version % 2 == 0 ? "Oslo" : "Bergen", version)));
      assertThat(probe("id", 1L))
          .as("after upsert %s", version)
          .containsExactly(canonical(row(1, version % 2 == 0 ? "Oslo" : "Bergen", version)))
          .isEqualTo(reference("id", 1L));
      assertThat(probe("city", "Oslo"))
          .as("Oslo after upsert %s", version)
          .isEqualTo(reference("city", "Oslo"))
          .hasSize(version % 2 == 0 ? 2 : 1);
    }
    writer.append(List.of(row(3, "Bergen", 0)));
    assertThat(probe("id", 3L)).containsExactly(canonical(row(3, "Bergen", 0)));
  }

  @Test
  void aKeyDeletedThroughTheCatalogDisappearsAtTheNextProbe() {
    assertThat(probe("id", 2L)).hasSize(1);
    writer.deleteKeys(List.of(row(2, null, null)));
    assertThat(reference("id", 2L)).isEmpty();
    assertThat(probe("id", 2L)).isEmpty();
    assertThat(probe("id", 1L)).containsExactly(canonical(row(1, "Oslo", 0)));
    assertThat(probe("city", "Oslo")).containsExactly(canonical(row(1, "Oslo", 0)));
  }

  @Test
  void aLookupOnATableAsLoadedKeepsAnsweringAtItsSnapshot() {
    PointLookup before = new PointLookup(latest.table(), List.of("id"), caches.caches(), counters);
    writer.upsert(List.of(row(1, "Bergen", 1)));
    writer.deleteKeys(List.of(row(2, null, null)));

    assertThat(IcebergReference.sortedCanonical(before.lookup(null, List.of(1L)), SCHEMA))
        .containsExactly(canonical(row(1, "Oslo", 0)));
    assertThat(before.lookup(null, List.of(2L))).hasSize(1);
    assertThat(probe("id", 1L)).containsExactly(canonical(row(1, "Bergen", 1)));
    assertThat(probe("id", 2L)).isEmpty();
  }

  @Test
  void aNewSnapshotParsesOnlyTheManifestsItWrote() throws IOException {
    assertThat(probe("id", 2L)).containsExactly(canonical(row(2, "Oslo", 0)));
    // The manifests read so far are gone from disk: a probe that parsed them again would fail.
    Path metadata = Path.of(catalog.get().loadTable(ID).location(), "metadata");
    List<Path> manifests;
    try (Stream<Path> files = Files.list(metadata)) {
      manifests =
          files.filter(file -> file.getFileName().toString().matches(".*-m\\d+\\.avro")).toList();
    }
    assertThat(manifests).isNotEmpty();
    for (Path manifest : manifests) {
      Files.delete(manifest);
    }

    writer.append(List.of(row(3, "Bergen", 0)));

    assertThat(probe("id", 3L)).containsExactly(canonical(row(3, "Bergen", 0)));
    assertThat(probe("id", 2L)).containsExactly(canonical(row(2, "Oslo", 0)));
    assertThat(probe("city", "Oslo")).hasSize(2);
  }

  /** One probe on the latest table, as sorted canonical rows. */
  private List<String> probe(String column, Object value) {
    PointLookup lookup =
        new PointLookup(latest.table(), List.of(column), caches.caches(), counters);
    return IcebergReference.sortedCanonical(lookup.lookup(null, List.of(value)), SCHEMA);
  }

  private List<String> reference(String column, Object value) {
    Table table = catalog.get().loadTable(ID);
    return IcebergReference.rowsWith(
            table, table.currentSnapshot().snapshotId(), List.of(column), List.of(value))
        .stream()
        .sorted()
        .toList();
  }

  private static String canonical(Record row) {
    return IcebergReference.canonical(row, SCHEMA);
  }

  private static Record row(long id, String city, Integer version) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("city", city);
    record.setField("version", version);
    return record;
  }
}
