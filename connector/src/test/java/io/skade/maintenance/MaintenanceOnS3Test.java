package io.skade.maintenance;

import static io.skade.maintenance.KeyValue.SCHEMA;
import static io.skade.maintenance.KeyValue.env;
import static io.skade.maintenance.KeyValue.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SharedCatalogs;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogReader;
import io.skade.sink.OrphanFileRemoval;
import io.skade.sink.SkadeTableLoader;
import io.skade.sink.TableCompaction;
import io.skade.testing.S3Bucket;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.MetadataTableType;
import org.apache.iceberg.MetadataTableUtils;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsBulkOperations;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * skade's table maintenance on a warehouse in object storage (a real S3 server, through Iceberg's
 * {@code S3FileIO}, seen through a proxy that records each request): a compaction keeps the rows
 * and folds the deletes, an expiry deletes the files only expired snapshots held, and orphan
 * removal lists the table by prefix, deletes an orphan in bulk and keeps every live file.
 */
class MaintenanceOnS3Test {
  private static final String BUCKET = "maint";

  @RegisterExtension static final S3Bucket s3 = new S3Bucket(BUCKET).withProxy();

  @TempDir static Path dir;
  private static SharedCatalogs.Handle catalog;
  private static Map<String, String> properties;

  @BeforeAll
  static void start() throws Exception {
    properties = Map.copyOf(s3.catalogProperties("s3://" + BUCKET + "/wh", dir.resolve("catalog")));
    catalog = SharedCatalogs.acquire("maintenance-s3", properties);
    catalog.catalog().createNamespace(Namespace.of("db"));
  }

  @AfterAll
  static void stop() throws Exception {
    catalog.close();
  }

  @Test
  void aCompactionOnS3KeepsTheRowsAndFoldsTheDeletes() throws Exception {
    TableIdentifier id = TableIdentifier.of("db", "compacted");
    Table table = catalog.catalog().createTable(id, SCHEMA);
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < 6; commit++) {
      writer.upsert(List.of(row(commit % 3, "v" + commit), row(10 + commit, "n" + commit)));
    }
    writer.deleteKeys(List.of(row(11, null)));
    table.refresh();
    assertThat(table.io()).isInstanceOf(S3FileIO.class);
    Map<Long, String> before = read(table, table.currentSnapshot().snapshotId());
    Snapshot start = table.currentSnapshot();

    TableCompaction.Result result = TableCompaction.run(env(), properties, id);

    table.refresh();
    Snapshot replace = table.currentSnapshot();
    assertThat(replace.operation()).isEqualTo("replace");
    assertThat(result.snapshotId()).isEqualTo(replace.snapshotId());
    assertThat(result.removedDeleteFiles()).isPositive();
    assertThat(read(table, replace.snapshotId())).isEqualTo(before);
    assertThat(replace.deleteManifests(table.io()))
        .as("every delete folded")
        .allSatisfy(
            manifest ->
                assertThat(manifest.hasAddedFiles() || manifest.hasExistingFiles()).isFalse());
    for (DataFile file : liveDataFiles(table)) {
      assertThat(file.location()).startsWith("s3://" + BUCKET + "/");
      assertThat(table.io().newInputFile(file.location()).exists()).isTrue();
    }
    assertThat(
            new ChangelogReader(table, ChangelogOptions.defaults())
                .read(start.snapshotId(), replace.snapshotId()))
        .as("a replace snapshot changes no row")
        .isEmpty();
  }

  @Test
  void anExpiryOnS3DeletesWhatOnlyExpiredSnapshotsHeldAndKeepsTheRest() throws Exception {
    TableIdentifier id = TableIdentifier.of("db", "expired");
    Table table = catalog.catalog().createTable(id, SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a"), row(2, "b")));
    table.refresh();
    List<DataFile> first = liveDataFiles(table);
    writer.overwrite(org.apache.iceberg.expressions.Expressions.alwaysTrue(), List.of(row(3, "c")));
    writer.append(List.of(row(4, "d")));
    table.refresh();
    Snapshot current = table.currentSnapshot();
    Map<Long, String> rows = read(table, current.snapshotId());

    SkadeTableLoader loader = SkadeTableLoader.forMaintenance(properties, id);
    loader.open();
    try (loader) {
      loader.loadTable().expireSnapshots().retainLast(1).expireOlderThan(Long.MAX_VALUE).commit();
    }

    table.refresh();
    assertThat(table.snapshots())
        .extracting(Snapshot::snapshotId)
        .containsExactly(current.snapshotId());
    for (DataFile gone : first) {
      assertThat(table.io().newInputFile(gone.location()).exists())
          .as("a file only expired snapshots held: %s", gone.location())
          .isFalse();
    }
    for (DataFile live : liveDataFiles(table)) {
      assertThat(table.io().newInputFile(live.location()).exists()).as(live.location()).isTrue();
    }
    assertThat(read(table, current.snapshotId())).isEqualTo(rows);
  }

  @Test
  void orphanRemovalOnS3ListsByPrefixDeletesTheOrphanAndKeepsEveryLiveFile() throws Exception {
    TableIdentifier id = TableIdentifier.of("db", "orphaned");
    Table table = catalog.catalog().createTable(id, SCHEMA);
    TableWriter writer = new TableWriter(table);
    for (int commit = 0; commit < 4; commit++) {
      writer.upsert(List.of(row(commit % 2, "v" + commit), row(10 + commit, "n")));
    }
    table.refresh();
    assertThat(table.io()).isInstanceOf(SupportsPrefixOperations.class);
    assertThat(table.io()).isInstanceOf(SupportsBulkOperations.class);
    Map<Long, Map<Long, String>> snapshots = new HashMap<>();
    table.snapshots().forEach(s -> snapshots.put(s.snapshotId(), read(table, s.snapshotId())));

    // An orphan: a data file of a commit that never came, made old, as every file before it.
    DataFile abandoned = writer.writeDataFiles(List.of(row(7, "never committed"))).get(0);
    backdate(s3.directory(), Duration.ofHours(2));
    // A file of a commit in flight, written just now.
    DataFile inFlight = writer.writeDataFiles(List.of(row(8, "in flight"))).get(0);
    Set<String> live = liveFiles(table);
    assertThat(listed(table)).containsAll(live).contains(abandoned.location());

    s3.proxy().clearRequests();
    OrphanFileRemoval.Result removed =
        OrphanFileRemoval.run(env(), properties, id, Duration.ofHours(1), false);

    assertThat(removed.orphans()).containsExactly(abandoned.location());
    String prefix = "/" + BUCKET + "?list-type=2";
    assertThat(s3.proxy().requests())
        .as("the table's files listed by prefix")
        .anySatisfy(
            request -> {
              assertThat(request.method()).isEqualTo("GET");
              assertThat(request.path())
                  .startsWith(prefix)
                  .contains("prefix=wh%2Fdb%2Forphaned%2F");
            });
    assertThat(s3.proxy().requests())
        .as("the orphans deleted in bulk")
        .anySatisfy(
            request -> {
              assertThat(request.method()).isEqualTo("POST");
              assertThat(request.path()).startsWith("/" + BUCKET + "?delete");
            });
    assertThat(table.io().newInputFile(abandoned.location()).exists()).isFalse();
    assertThat(table.io().newInputFile(inFlight.location()).exists()).as("in flight").isTrue();
    Set<String> after = listed(table);
    assertThat(after).as("every live file kept").containsAll(live);
    table.refresh();
    for (Snapshot snapshot : table.snapshots()) {
      assertThat(read(table, snapshot.snapshotId()))
          .as("snapshot %s", snapshot.snapshotId())
          .isEqualTo(snapshots.get(snapshot.snapshotId()));
    }
  }

  /** The files the table's metadata references: data, delete, manifest, list and metadata files. */
  private static Set<String> liveFiles(Table table) throws IOException {
    Set<String> files = new HashSet<>();
    Table allFiles =
        MetadataTableUtils.createMetadataTableInstance(table, MetadataTableType.ALL_FILES);
    try (CloseableIterable<FileScanTask> tasks = allFiles.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        try (CloseableIterable<org.apache.iceberg.StructLike> rows = task.asDataTask().rows()) {
          rows.forEach(row -> files.add(row.get(1, String.class)));
        }
      }
    }
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    files.add(metadata.metadataFileLocation());
    metadata.previousFiles().forEach(entry -> files.add(entry.file()));
    for (Snapshot snapshot : table.snapshots()) {
      files.add(snapshot.manifestListLocation());
      for (ManifestFile manifest : snapshot.allManifests(table.io())) {
        files.add(manifest.path());
      }
    }
    return files;
  }

  /** Every object under the table's location, as S3FileIO lists it. */
  private static Set<String> listed(Table table) {
    Set<String> files = new HashSet<>();
    for (FileInfo file :
        ((SupportsPrefixOperations) table.io()).listPrefix(table.location() + "/")) {
      files.add(file.location());
    }
    return files;
  }

  private static List<DataFile> liveDataFiles(Table table) throws IOException {
    List<DataFile> files = new ArrayList<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> files.add(task.file()));
    }
    return files;
  }

  private static Map<Long, String> read(Table table, long snapshotId) {
    Map<Long, String> rows = new HashMap<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table).useSnapshot(snapshotId).build()) {
      records.forEach(r -> rows.put(r.get(0, Long.class), r.get(1, String.class)));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    return rows;
  }

  /** Ages every object of the bucket: the server's store keeps them as files, dated by mtime. */
  private static void backdate(Path bucket, Duration age) throws IOException {
    FileTime then = FileTime.from(Instant.now().minus(age));
    try (Stream<Path> paths = Files.walk(bucket)) {
      for (Path file : paths.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(file, then);
      }
    }
  }
}
