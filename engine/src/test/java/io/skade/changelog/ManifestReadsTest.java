package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.InputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A window reads each of its manifests once, however many snapshots it spans, and a window of
 * appends only the manifests those appends wrote.
 */
class ManifestReadsTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final int SNAPSHOTS = 12;

  /** The real Hadoop file IO, counting the manifests it opens (by path). */
  public static final class CountingFileIO extends HadoopFileIO {
    static final Map<String, Integer> MANIFEST_OPENS = new ConcurrentHashMap<>();

    @Override
    public InputFile newInputFile(String path) {
      count(path);
      return super.newInputFile(path);
    }

    @Override
    public InputFile newInputFile(String path, long length) {
      count(path);
      return super.newInputFile(path, length);
    }

    private static void count(String path) {
      String name = path.substring(path.lastIndexOf('/') + 1);
      if (name.endsWith(".avro") && !name.startsWith("snap-")) { // not manifest lists
        MANIFEST_OPENS.merge(path, 1, Integer::sum);
      }
    }
  }

  @TempDir Path warehouse;

  @Test
  void aPerSnapshotWindowReadsEachManifestOnce() throws Exception {
    try (SkadeCatalog catalog = countingCatalog()) {
      Table table = catalog.createTable(TableIdentifier.of("db", "t"), SCHEMA);
      TableWriter writer = new TableWriter(table);
      for (int s = 0; s < SNAPSHOTS; s++) {
        writer.append(List.of(row(2 * s, "a"), row(2 * s + 1, "b")));
        if (s % 3 == 2) {
          writer.upsert(List.of(row(s, "upserted")));
        }
      }
      Set<String> manifests =
          table.currentSnapshot().allManifests(table.io()).stream()
              .map(ManifestFile::path)
              .collect(Collectors.toSet());

      CountingFileIO.MANIFEST_OPENS.clear();
      List<ChangeRow> changes =
          new ChangelogReader(table, ChangelogOptions.defaults())
              .read(null, table.currentSnapshot().snapshotId());

      assertThat(changes).hasSize(2 * SNAPSHOTS + 2 * (SNAPSHOTS / 3));
      // Every manifest of the window once; planning each of the 16 snapshots would open the
      // older ones again and again.
      assertThat(CountingFileIO.MANIFEST_OPENS.keySet())
          .containsExactlyInAnyOrderElementsOf(manifests);
      assertThat(new ArrayList<>(CountingFileIO.MANIFEST_OPENS.values())).containsOnly(1);
    }
  }

  @Test
  void anAppendWindowReadsOnlyTheManifestsItsAppendsWrote() throws Exception {
    try (SkadeCatalog catalog = countingCatalog()) {
      Table table = catalog.createTable(TableIdentifier.of("db", "t"), SCHEMA);
      TableWriter writer = new TableWriter(table);
      for (int s = 0; s < SNAPSHOTS; s++) { // older data files and equality deletes
        writer.append(List.of(row(2 * s, "a"), row(2 * s + 1, "b")));
        writer.upsert(List.of(row(s, "upserted")));
      }
      long from = table.currentSnapshot().snapshotId();
      writer.append(List.of(row(1000, "first")));
      writer.append(List.of(row(1001, "second")));
      table.refresh();
      Set<String> written = new HashSet<>();
      for (long id :
          List.of(table.currentSnapshot().parentId(), table.currentSnapshot().snapshotId())) {
        table.snapshot(id).allManifests(table.io()).stream()
            .filter(m -> m.snapshotId() == id)
            .map(ManifestFile::path)
            .forEach(written::add);
      }

      // Per-snapshot first: manifests are parsed once per JVM, so the second read opens none.
      for (ChangelogOptions.Mode mode :
          List.of(ChangelogOptions.Mode.PER_SNAPSHOT, ChangelogOptions.Mode.COLLAPSED)) {
        CountingFileIO.MANIFEST_OPENS.clear();
        List<ChangeRow> changes =
            new ChangelogReader(table, ChangelogOptions.defaults().withMode(mode))
                .read(from, table.currentSnapshot().snapshotId());

        assertThat(changes)
            .extracting(c -> c.type(), c -> c.row().getField("id"))
            .as("mode %s", mode)
            .containsExactlyInAnyOrder(
                tuple(ChangeType.INSERT, 1000L), tuple(ChangeType.INSERT, 1001L));
        if (mode == ChangelogOptions.Mode.PER_SNAPSHOT) {
          assertThat(CountingFileIO.MANIFEST_OPENS.keySet())
              .containsExactlyInAnyOrderElementsOf(written);
        } else {
          assertThat(CountingFileIO.MANIFEST_OPENS).isEmpty();
        }
      }
    }
  }

  /** A catalog on this test's warehouse whose file IO counts manifest opens, with {@code db}. */
  private SkadeCatalog countingCatalog() {
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize(
        "counting",
        Map.of("warehouse", warehouse.toString(), "io-impl", CountingFileIO.class.getName()));
    catalog.createNamespace(Namespace.of("db"));
    return catalog;
  }
}
