package io.skade.lookup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
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

/** What a lookup does with input it cannot answer, or answers with nothing. */
class PointLookupInputTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "city", Types.StringType.get())),
          Set.of(1));

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private final PointLookup.Counters counters = new PointLookup.Counters();
  private LookupCaches.Handle caches;
  private Table table;

  @BeforeEach
  void writeTwoRows() {
    caches = LookupCaches.acquire();
    table =
        catalog
            .get()
            .buildTable(TableIdentifier.of("db", "t"), SCHEMA)
            .withProperty("format-version", "2")
            .create();
    new TableWriter(table).append(List.of(row(1, "Oslo"), row(2, null)));
  }

  @AfterEach
  void releaseCaches() {
    caches.close();
  }

  @Test
  void aKeyColumnThatIsNotAColumnIsRejectedByName() {
    assertThatThrownBy(() -> lookupBy("id", "no_such_column"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no_such_column");
  }

  @Test
  void noKeyColumnsAreRejected() {
    assertThatThrownBy(() -> new PointLookup(table, List.of(), caches.caches(), counters))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aKeyColumnIsFoundWhateverItsCase() {
    PointLookup lookup = lookupBy("ID");
    assertThat(lookup.keyColumns()).extracting(Types.NestedField::name).containsExactly("id");
    assertThat(lookup.lookup(null, new ArrayList<>(List.of(1L)))).hasSize(1);
  }

  @Test
  void aKeyGivenAsAnImmutableListIsLookedUp() {
    // List.of(...) is how most callers build a key; its contains(null) throws.
    assertThat(lookupBy("id").lookup(null, List.of(1L)))
        .extracting(r -> r.getField("city"))
        .containsExactly("Oslo");
    assertThat(lookupBy("city").lookup(null, List.of("Oslo")))
        .extracting(r -> r.getField("id"))
        .containsExactly(1L);
  }

  @Test
  void aNullKeyValueFindsNothingNotEvenARowWhoseValueIsNull() {
    assertThat(lookupBy("id").lookup(null, Collections.singletonList(null))).isEmpty();
    // Row 2's city is null, yet null = null is not true in SQL.
    assertThat(lookupBy("city").lookup(null, Arrays.asList((Object) null))).isEmpty();
    assertThat(lookupBy("id", "city").lookup(null, Arrays.asList(2L, null))).isEmpty();
  }

  @Test
  void aWrongNumberOfKeyValuesIsAnError() {
    PointLookup lookup = lookupBy("id");
    assertThatThrownBy(() -> lookup.lookup(null, Arrays.asList(1L, 2L)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[id]")
        .hasMessageContaining("2");
    assertThatThrownBy(() -> lookup.lookup(null, new ArrayList<>()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void anUnknownPinnedSnapshotIsAnErrorNamingIt() {
    long unknown = table.currentSnapshot().snapshotId() + 12345;
    assertThatThrownBy(() -> lookupBy("id").lookup(unknown, Arrays.asList(1L)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(String.valueOf(unknown));
  }

  @Test
  void aTableWithoutSnapshotsHasNoRows() {
    Table empty =
        catalog
            .get()
            .buildTable(TableIdentifier.of("db", "empty"), SCHEMA)
            .withProperty("format-version", "2")
            .create();
    PointLookup lookup = new PointLookup(empty, List.of("id"), caches.caches(), counters);
    assertThat(lookup.lookup(null, Arrays.asList(1L))).isEmpty();
  }

  private PointLookup lookupBy(String... columns) {
    return new PointLookup(table, List.of(columns), caches.caches(), counters);
  }

  private static Record row(long id, String city) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("city", city);
    return record;
  }
}
