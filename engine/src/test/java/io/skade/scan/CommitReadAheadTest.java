package io.skade.scan;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A table followed in this JVM ({@link MetadataCache#follow}) has what each of its commits made
 * here wrote read into the shared cache in the background, data and delete manifests — or, for an
 * append that named its files, those files kept as they are, so that planning its window reads no
 * manifest list or manifest at all; a table no longer followed, or never, has nothing read ahead.
 */
class CommitReadAheadTest {
  private static final TableIdentifier FOLLOWED = TableIdentifier.of("db", "followed");
  private static final TableIdentifier OTHER = TableIdentifier.of("db", "other");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aFollowedTablesCommitsAreReadAheadAndOthersAreNot() {
    Table followed = catalog.get().createTable(FOLLOWED, IdRows.SCHEMA);
    Table other = catalog.get().createTable(OTHER, IdRows.SCHEMA);
    MetadataCache cache = MetadataCache.shared();

    Snapshot notFollowed;
    try (MetadataCache.Following following = cache.follow(catalog.get().commitTableKey(FOLLOWED))) {
      notFollowed = new TableWriter(other).append(List.of(row(1, "a")));
      TableWriter writer = new TableWriter(followed);
      Snapshot append = writer.append(List.of(row(1, "a"), row(2, "b")));
      Snapshot upsert = writer.upsert(List.of(row(1, "b"))); // a data and a delete manifest
      List<ManifestFile> written = written(followed, upsert);
      assertThat(written).extracting(ManifestFile::content).hasSize(2).doesNotHaveDuplicates();
      // The read-ahead thread takes commits in order: the other table's would be read by now.
      awaitHeld(cache, written);
      assertThat(written(other, notFollowed)).noneMatch(cache::holds);
      assertThat(cache.appendedHere(notFollowed)).isNull();

      // The append named its files: they are kept, and nothing of its manifests is read.
      assertThat(locations(cache.appendedHere(append))).isEqualTo(icebergAdded(followed, append));
      assertThat(WindowFiles.appendedBy(followed, append))
          .extracting(DataFile::location)
          .containsExactlyInAnyOrderElementsOf(icebergAdded(followed, append));
      assertThat(cache.holdsManifestList(append)).isFalse();
      assertThat(written(followed, append)).noneMatch(cache::holds);
    }

    Snapshot afterUnfollow = new TableWriter(followed).append(List.of(row(2, "c")));
    try (MetadataCache.Following following = cache.follow(catalog.get().commitTableKey(OTHER))) {
      Snapshot next = new TableWriter(other).upsert(List.of(row(2, "c")));
      awaitHeld(cache, written(other, next));
      Snapshot appended = new TableWriter(other).append(List.of(row(3, "d")));
      assertThat(locations(cache.appendedHere(appended))).isEqualTo(icebergAdded(other, appended));
    }
    assertThat(written(followed, afterUnfollow)).noneMatch(cache::holds);
    assertThat(cache.appendedHere(afterUnfollow)).isNull();
  }

  /** The data files Iceberg's own API says {@code snapshot} added, by location. */
  private static List<String> icebergAdded(Table table, Snapshot snapshot) {
    List<String> added = new ArrayList<>();
    snapshot.addedDataFiles(table.io()).forEach(file -> added.add(file.location()));
    return added.stream().sorted().toList();
  }

  private static List<String> locations(List<DataFile> files) {
    assertThat(files).isNotNull();
    return files.stream().map(DataFile::location).sorted().toList();
  }

  /** The manifests {@code snapshot} wrote, read with Iceberg's own reader. */
  private static List<ManifestFile> written(Table table, Snapshot snapshot) {
    table.refresh();
    return snapshot.allManifests(table.io()).stream()
        .filter(manifest -> snapshot.snapshotId() == manifest.snapshotId())
        .toList();
  }

  private static void awaitHeld(MetadataCache cache, List<ManifestFile> manifests) {
    assertThat(manifests).isNotEmpty();
    await("the commit's manifests read ahead")
        .atMost(Duration.ofSeconds(30))
        .until(() -> manifests.stream().allMatch(cache::holds));
  }
}
