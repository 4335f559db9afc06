package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.ConsumerCursor;
import io.skade.write.TableWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.types.Row;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code sys} procedures of a {@code skade} catalog, called from Flink SQL: {@code compact}
 * folds the deletes into a {@code replace} snapshot without changing a row, {@code
 * expire_snapshots} is refused while a consumer needs a snapshot and expires once it is gone, and
 * on format v3 keeps a Puffin file a live deletion vector is in, {@code remove_orphan_files}
 * deletes an old file nothing references and nothing else, and bad arguments are named.
 */
class SqlProceduresTest extends SqlTestBase {
  private static final TableIdentifier ORDERS = TableIdentifier.of("shop", "orders");
  private TableEnvironment sql;

  @BeforeEach
  void ordersWithUpserts() throws Exception {
    sql = batch();
    createLake(sql);
    sql.executeSql(
        "CREATE TABLE lake.shop.orders (id BIGINT, v STRING," + " PRIMARY KEY (id) NOT ENFORCED)");
    // Four upserts, as four checkpoints of a streaming job would commit them.
    Table orders = catalog.catalog().loadTable(ORDERS);
    TableWriter writer = new TableWriter(orders);
    for (int round = 0; round < 4; round++) {
      writer.upsert(
          List.of(
              record(orders, 1L, "a" + round),
              record(orders, 2L, "b" + round),
              record(orders, 10L + round, "c")));
    }
  }

  @Test
  void compactFoldsTheDeletesAndKeepsEveryRow() throws Exception {
    Set<Row> before = rows();
    List<Row> result = collect(sql, "CALL lake.sys.compact('shop.orders')");

    Table orders = catalog.catalog().loadTable(ORDERS);
    Snapshot replace = orders.currentSnapshot();
    assertThat(replace.operation()).isEqualTo("replace");
    assertThat(result).hasSize(1);
    assertThat(result.get(0).getField(0)).isEqualTo(replace.snapshotId());
    assertThat((Integer) result.get(0).getField(1)).as("rewritten").isEqualTo(4);
    assertThat((Integer) result.get(0).getField(2)).as("added").isEqualTo(1);
    assertThat((Integer) result.get(0).getField(3)).as("delete files removed").isPositive();
    assertThat(replace.deleteManifests(orders.io()))
        .allMatch(m -> !m.hasAddedFiles() && !m.hasExistingFiles());
    assertThat(rows()).isEqualTo(before);
  }

  @Test
  void expireSnapshotsIsRefusedWhileAConsumerNeedsThemAndRunsOnceItIsGone() throws Exception {
    Table orders = catalog.catalog().loadTable(ORDERS);
    Snapshot first = orders.snapshots().iterator().next();
    catalog
        .catalog()
        .storeConsumer(
            "reporting",
            new ConsumerCursor(ORDERS, orders.uuid().toString(), first.snapshotId(), 0));
    String call =
        "CALL lake.sys.expire_snapshots('shop.orders', TIMESTAMP '2999-01-01" + " 00:00:00')";
    assertThatThrownBy(() -> collect(sql, call))
        .rootCause()
        .hasMessageContaining("consumer 'reporting'")
        .hasMessageContaining("Nothing was changed");
    orders.refresh();
    assertThat(orders.snapshots()).hasSize(4);

    catalog.catalog().dropConsumer("reporting");
    assertThat(collect(sql, call)).containsExactly(Row.of(3, 1));
    orders.refresh();
    assertThat(orders.snapshots()).hasSize(1);
  }

  @Test
  void expireSnapshotsKeepsAPuffinFileALiveDeletionVectorIsIn() throws Exception {
    Table events =
        catalog
            .catalog()
            .buildTable(
                TableIdentifier.of("shop", "events"),
                new Schema(Types.NestedField.required(1, "id", Types.LongType.get())))
            .withProperty("format-version", "3")
            .create();
    TableWriter writer = new TableWriter(events);
    DataFile a =
        writer
            .append(List.of(record(events, 1L), record(events, 2L)))
            .addedDataFiles(events.io())
            .iterator()
            .next();
    DataFile b =
        writer
            .append(List.of(record(events, 3L), record(events, 4L)))
            .addedDataFiles(events.io())
            .iterator()
            .next();
    Map<String, List<Long>> positions = new LinkedHashMap<>();
    positions.put(a.location(), List.of(0L));
    positions.put(b.location(), List.of(0L));
    // One Puffin file with the vectors of a and b; then a's vector is merged into a new one.
    String shared =
        writer
            .deletePositions(positions)
            .addedDeleteFiles(events.io())
            .iterator()
            .next()
            .location();
    writer.deletePositions(Map.of(a.location(), List.of(1L)));
    writer.append(List.of(record(events, 5L)));

    assertThat(
            collect(
                sql,
                "CALL lake.sys.expire_snapshots('shop.events', TIMESTAMP"
                    + " '2999-01-01 00:00:00')"))
        .containsExactly(Row.of(4, 1));

    assertThat(
            Files.exists(
                Paths.get(URI.create(shared.startsWith("file:") ? shared : "file:" + shared))))
        .as("the Puffin file of b's live vector")
        .isTrue();
    assertThat(collect(sql, "SELECT id FROM lake.shop.events"))
        .containsExactlyInAnyOrder(Row.of(4L), Row.of(5L));
  }

  @Test
  void removeOrphanFilesTakesOnlyOldFilesNothingReferences() throws Exception {
    Table orders = catalog.catalog().loadTable(ORDERS);
    TableWriter writer = new TableWriter(orders);
    DataFile abandoned = writer.writeDataFiles(List.of(record(orders, 7L, "lost"))).get(0);
    Path abandonedPath =
        Paths.get(
            URI.create(
                abandoned.location().startsWith("file:")
                    ? abandoned.location()
                    : "file:" + abandoned.location()));
    FileTime twoHoursAgo = FileTime.from(Instant.now().minus(Duration.ofHours(2)));
    try (Stream<Path> files = Files.walk(abandonedPath.getParent().getParent())) {
      for (Path file : files.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(file, twoHoursAgo); // the whole table is old
      }
    }
    Set<Row> before = rows();
    // Formatted, not toString(): that drops the seconds when they are 0, which SQL refuses.
    String anHourAgo =
        DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss")
            .format(LocalDateTime.now(ZoneOffset.UTC).minusMinutes(61));

    List<Row> dry =
        collect(
            sql,
            "CALL lake.sys.remove_orphan_files('shop.orders', TIMESTAMP '"
                + anHourAgo
                + "', true)");
    assertThat(dry)
        .extracting(row -> Paths.get(URI.create((String) row.getField(0))))
        .containsExactly(abandonedPath);
    assertThat(Files.exists(abandonedPath)).as("a dry run deletes nothing").isTrue();

    assertThat(
            collect(
                sql,
                "CALL lake.sys.remove_orphan_files('shop.orders', TIMESTAMP '" + anHourAgo + "')"))
        .hasSize(1);
    assertThat(Files.exists(abandonedPath)).isFalse();
    assertThat(rows()).isEqualTo(before);
    assertThat(collect(sql, "CALL lake.sys.remove_orphan_files('shop.orders')"))
        .as("by default only files 3 days old are taken")
        .isEmpty();
  }

  @Test
  void badArgumentsAreNamed() {
    assertThatThrownBy(() -> collect(sql, "CALL lake.sys.compact('orders')"))
        .rootCause()
        .hasMessageContaining("argument 'table' = 'orders'")
        .hasMessageContaining("'shop.orders'");
    assertThatThrownBy(() -> collect(sql, "CALL lake.sys.compact('shop.nope')"))
        .rootCause()
        .hasMessageContaining("'shop.nope' is not a table")
        .hasMessageContaining("[orders]");
    assertThatThrownBy(
            () ->
                collect(
                    sql,
                    "CALL lake.sys.expire_snapshots('shop.orders',"
                        + " TIMESTAMP '2999-01-01 00:00:00', 0)"))
        .rootCause()
        .hasMessageContaining("'retain_last' = 0");
    assertThatThrownBy(
            () ->
                collect(
                    sql,
                    "CALL lake.sys.remove_orphan_files('shop.orders',"
                        + " TIMESTAMP '2999-01-01 00:00:00')"))
        .rootCause()
        .hasMessageContaining("argument 'older_than' = 2999-01-01T00:00")
        .hasMessageContaining("at least 60 min ago");
    assertThatThrownBy(() -> collect(sql, "CALL lake.sys.remove_orphan_files('shop')"))
        .rootCause()
        .hasMessageContaining("argument 'table' = 'shop'");
    assertThatThrownBy(() -> collect(sql, "CALL lake.sys.vacuum('shop.orders')"))
        .hasMessageContaining("vacuum");
  }

  private Set<Row> rows() throws Exception {
    return collect(sql, "SELECT * FROM lake.shop.orders").stream().collect(Collectors.toSet());
  }
}
