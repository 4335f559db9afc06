package io.skade.lineage;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.SkadeCatalog;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lineage of a store that several catalogs of the JVM share: it runs once, outlives the catalog
 * that opened the store, and reaches a warehouse (table sink) or a file (OpenLineage's file
 * transport) whose path holds a space, '%', '#', '+' and a non-ASCII letter.
 */
class LineageOnSharedStoreTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier C = TableIdentifier.of("db", "c");
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path dir;

  @Test
  void lineageRunsOnceForTheStoreAndOutlivesTheCatalogThatOpenedIt() throws Exception {
    Map<String, String> props =
        Map.of("warehouse", dir.resolve("a b%c#d+é/wh").toString(), CatalogLineage.SINK, "table");
    SkadeCatalog opener =
        (SkadeCatalog) CatalogUtil.loadCatalog(SkadeCatalog.class.getName(), "opener", props, null);
    SkadeCatalog second = new SkadeCatalog();
    second.initialize("second", props);
    CatalogLineage.Running running = CatalogLineage.Running.of(opener).orElseThrow();
    assertThat(CatalogLineage.Running.of(second)).containsSame(running);
    assertThat(CatalogLineage.running().stream().filter(r -> r.catalog().sharesStoreWith(second)))
        .containsExactly(running);

    opener.createNamespace(Namespace.of("db"));
    Table c = opener.buildTable(C, SCHEMA).withProperty("format-version", "2").create();
    long first = new TableWriter(c).append(List.of(row(1, "one"))).snapshotId();
    opener.close();
    long after = new TableWriter(second.loadTable(C)).append(List.of(row(2, "two"))).snapshotId();

    await().atMost(WAIT).until(() -> lineageRows(second).size() >= 3);
    List<Record> rows = lineageRows(second);
    assertThat(rows)
        .extracting(
            r -> r.getField("operation"),
            r -> r.getField("output_snapshot_id"),
            r -> r.getField("output_location"))
        .containsExactly(
            tuple("CREATE", null, c.location()),
            tuple("APPEND", first, c.location()),
            tuple("APPEND", after, c.location()));
    assertThat(c.location()).contains("a b%c#d+é");

    second.close();
    assertThat(CatalogLineage.running())
        .as("stopped with the store's last catalog")
        .doesNotContain(running);
  }

  @Test
  void theOpenLineageFileTransportWritesToAFileWhosePathHasAnyCharacter() throws Exception {
    Path events = dir.resolve("a b%c#d+é").resolve("events.jsonl");
    Files.createDirectories(events.getParent());
    Map<String, String> props =
        Map.of(
            "warehouse",
            dir.resolve("wh a#b").toString(),
            CatalogLineage.SINK,
            "openlineage",
            CatalogLineage.OPENLINEAGE_URL,
            "file:" + events);
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("c", props);
      catalog.createNamespace(Namespace.of("db"));
      Table c = catalog.buildTable(C, SCHEMA).withProperty("format-version", "2").create();
      new TableWriter(c).append(List.of(row(1, "one")));
      assertThat(CatalogLineage.Running.of(catalog).orElseThrow().awaitCaughtUp(WAIT)).isTrue();

      List<JsonNode> lines = new ArrayList<>();
      ObjectMapper json = new ObjectMapper();
      for (String line : Files.readAllLines(events)) {
        lines.add(json.readTree(line));
      }
      assertThat(lines).hasSize(2);
      JsonNode output = lines.get(1).path("outputs").get(0);
      assertThat(output.path("namespace").asText()).isEqualTo("file");
      assertThat(output.path("name").asText())
          .as("the table's directory, as it is named")
          .isEqualTo(c.location());
    }
  }

  @Test
  void catalogsSharingAStoreMustAgreeOnItsLineage() throws Exception {
    Map<String, String> props =
        new HashMap<>(
            Map.of("warehouse", dir.resolve("wh").toString(), CatalogLineage.SINK, "table"));
    try (SkadeCatalog owner = new SkadeCatalog()) {
      owner.initialize("owner", props);
      props.remove(CatalogLineage.SINK);
      assertThatThrownBy(() -> new SkadeCatalog().initialize("none", props))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lineage.sink is 'table' there and 'none' here");
      props.put(CatalogLineage.SINK, "table");
      props.put(CatalogLineage.ACTOR, "nightly");
      assertThatThrownBy(() -> new SkadeCatalog().initialize("actor", props))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("lineage.actor is 'skade' there and 'nightly' here");
    }
  }

  private static List<Record> lineageRows(SkadeCatalog catalog) throws IOException {
    if (!catalog.tableExists(WarehouseLineageSink.TABLE)) {
      return List.of();
    }
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> all =
        IcebergGenerics.read(catalog.loadTable(WarehouseLineageSink.TABLE)).build()) {
      all.forEach(rows::add);
    }
    rows.sort(Comparator.comparing(r -> (Long) r.getField("commit_seq")));
    return rows;
  }
}
