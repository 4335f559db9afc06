package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.changelog.ChangelogOptions.OnMissingHistory;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Windows that cannot be read exactly fail with errors naming the snapshot or file and a way out.
 */
class ChangelogErrorsTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private Table table;
  private TableWriter writer;

  @BeforeEach
  void open() {
    table = catalog.get().createTable(TableIdentifier.of("db", "t"), SCHEMA);
    writer = new TableWriter(table);
  }

  @Test
  void aStartThatIsNotAnAncestorOfTheEndIsRefused() {
    long first = writer.append(List.of(row(1, "a"))).snapshotId();
    long second = writer.append(List.of(row(2, "b"))).snapshotId();
    table.manageSnapshots().rollbackTo(first).commit();
    long branch = writer.append(List.of(row(3, "c"))).snapshotId();
    assertThatThrownBy(() -> reader().read(second, branch))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snapshot " + second + " is not an ancestor of snapshot " + branch)
        .hasMessageContaining("choose a window along one history");
  }

  @Test
  void anExpiredSnapshotInsideTheWindowIsNamedAndFullReloadIsTheDocumentedWayOut() {
    long first = writer.append(List.of(row(1, "a"))).snapshotId();
    long second = writer.upsert(List.of(row(1, "a2"), row(2, "b"))).snapshotId();
    long third = writer.append(List.of(row(3, "c"))).snapshotId();
    table.expireSnapshots().expireSnapshotId(second).commit();

    assertThatThrownBy(() -> reader().read(first, third))
        .isInstanceOf(MissingHistoryException.class)
        .hasMessageContaining("snapshot " + second)
        .hasMessageContaining("full-reload");
    assertThatThrownBy(() -> reader().read(second, third))
        .isInstanceOf(MissingHistoryException.class)
        .hasMessageContaining("snapshot " + second + ", was expired");

    List<ChangeRow> reload =
        new ChangelogReader(
                table,
                ChangelogOptions.defaults().withOnMissingHistory(OnMissingHistory.FULL_RELOAD))
            .read(first, third);
    assertThat(reload).extracting(ChangeRow::type).containsOnly(ChangeType.INSERT);
    assertThat(reload)
        .extracting(change -> change.row().getField("name"))
        .containsExactlyInAnyOrder("a2", "b", "c");
  }

  @Test
  void aMissingDataFileIsNamed() throws IOException {
    long first = writer.append(List.of(row(1, "a"))).snapshotId();
    long second = writer.append(List.of(row(2, "b"))).snapshotId();
    String lost = table.currentSnapshot().addedDataFiles(table.io()).iterator().next().location();
    Files.delete(Path.of(lost));
    assertThatThrownBy(() -> reader().read(first, second))
        .isInstanceOf(MissingHistoryException.class)
        .hasMessageContaining(lost)
        .hasMessageContaining("snapshot " + second);
  }

  @Test
  void aWindowAcrossAChangeOfIdentifierFieldsIsRefused() {
    long first = writer.append(List.of(row(1, "a"))).snapshotId();
    table
        .updateSchema()
        .allowIncompatibleChanges()
        .requireColumn("name")
        .setIdentifierFields("id", "name")
        .commit();
    long second = new TableWriter(table).append(List.of(row(2, "b"))).snapshotId();
    assertThatThrownBy(() -> reader().read(null, second))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("identifier fields [id]")
        .hasMessageContaining("read windows on either side");
    assertThat(reader().read(first, second))
        .extracting(ChangeRow::type)
        .containsExactly(ChangeType.INSERT);
  }

  @Test
  void anUnknownEndOrColumnIsNamed() {
    writer.append(List.of(row(1, "a")));
    assertThatThrownBy(() -> reader().read(null, 42L))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no snapshot 42");
    assertThatThrownBy(
            () ->
                new ChangelogReader(
                    table, ChangelogOptions.defaults().withColumns(List.of("nope"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nope");
  }

  private ChangelogReader reader() {
    table.refresh();
    return new ChangelogReader(table, ChangelogOptions.defaults());
  }
}
