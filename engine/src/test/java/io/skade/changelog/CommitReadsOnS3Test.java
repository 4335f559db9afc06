package io.skade.changelog;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.scan.MetadataCache;
import io.skade.testing.IdRows;
import io.skade.testing.S3Bucket;
import io.skade.testing.S3FaultProxy;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotChanges;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * On object storage every request is a round trip, and a reader that follows commits pays each one
 * per commit: following a commit made in this JVM reads its manifest list, its manifest and its
 * data file at most once each (a snapshot this JVM committed may hold its manifest list), asks for
 * no file's length or existence (no {@code HEAD}), and planning the same commit again — its added
 * and removed files, as the source's enumerator asks — makes no request. Counted by a proxy in
 * front of a real S3 server.
 */
class CommitReadsOnS3Test {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("commitreads").withProxy();

  @TempDir Path dir;
  private SkadeCatalog catalog;

  @BeforeEach
  void openCatalog() {
    catalog = new SkadeCatalog();
    catalog.initialize("s3", s3.catalogProperties(s3.warehouse("wh"), dir.resolve("catalog")));
    catalog.createNamespace(Namespace.of("db"));
  }

  @AfterEach
  void closeCatalog() throws Exception {
    catalog.close();
  }

  @Test
  void followingACommitReadsEachOfItsFilesOnceAndAsksNoLength() {
    Table table = catalog.createTable(TableIdentifier.of("db", "follow"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    Snapshot before = writer.append(List.of(row(1, "a")));
    Snapshot commit = writer.append(List.of(row(2, "b"), row(3, "c")));
    table.refresh();
    String location = ((HasTableOperations) table).operations().current().metadataFileLocation();
    // Its files' names, from a parse of its own, so that no snapshot the reader shares is read.
    Snapshot parsed =
        TableMetadataParser.read(catalog.io(), location).snapshot(commit.snapshotId());
    String list = parsed.manifestListLocation();
    ManifestFile manifest =
        parsed.allManifests(catalog.io()).stream()
            .filter(m -> m.snapshotId() == commit.snapshotId())
            .findFirst()
            .orElseThrow();
    DataFile data = parsed.addedDataFiles(catalog.io()).iterator().next();
    S3FaultProxy proxy = s3.proxy();
    proxy.clearRequests();

    // What a source's planner and reader do with a commit the feed announced.
    Table planned = MetadataCache.shared().table(location, catalog.io(), "db.follow");
    List<ChangeRow> changes =
        new ChangelogReader(planned, ChangelogOptions.defaults().withMode(Mode.PER_SNAPSHOT))
            .read(before.snapshotId(), commit.snapshotId());

    assertThat(changes).extracting(c -> c.row().getField("id")).containsExactly(2L, 3L);
    List<S3FaultProxy.Request> requests = proxy.requests();
    assertThat(requests)
        .as("no length or existence asked")
        .noneMatch(r -> r.method().equals("HEAD"));
    for (String path : Set.of(list, manifest.path(), data.location())) {
      assertThat(requests)
          .as("GETs of %s", path)
          .filteredOn(r -> r.method().equals("GET") && path.endsWith(r.path()))
          .hasSizeLessThanOrEqualTo(1);
    }

    proxy.clearRequests();
    SnapshotChanges planning =
        MetadataCache.shared().changes(planned, planned.snapshot(commit.snapshotId()));
    assertThat(planning.addedDataFiles())
        .extracting(DataFile::location)
        .containsExactly(data.location());
    assertThat(proxy.requests()).as("requests to plan the commit again").isEmpty();
  }
}
