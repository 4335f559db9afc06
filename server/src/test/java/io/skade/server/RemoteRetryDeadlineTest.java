package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.remote.RemoteRetry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One deadline for a remote call, whatever the layers under it: a commit sent to a server process
 * killed with SIGKILL fails within {@code server.retry-timeout} (plus a margin for one request),
 * not after several retry timeouts stacked (the commit's, then the read that settles it); made
 * while the server is down and restarted within the timeout, an append lands, once.
 */
class RemoteRetryDeadlineTest {
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "t");
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  /** What a request may take beyond the deadline, and a slow machine's scheduling. */
  private static final Duration MARGIN = Duration.ofMillis(1_500);

  @TempDir Path root;

  @Test
  @Timeout(180)
  void aCommitToAKilledServerFailsWithinOneRetryTimeout() throws Exception {
    Duration timeout = Duration.ofSeconds(3);
    try (ServerProcess server = new ServerProcess(root);
        CatalogConnection connection = CatalogConnection.open(properties(server, "3 s"))) {
      Table table = table(connection);
      TableOperations operations = ((HasTableOperations) table).operations();
      TableMetadata base = operations.current();
      TableMetadata appended = appended(table);

      server.kill();
      long start = System.nanoTime();
      assertThatThrownBy(() -> operations.commit(base, appended))
          .satisfies(failure -> assertThat(RemoteRetry.isTransient(failure)).isTrue())
          .satisfies(failure -> assertThat(RemoteRetry.deadlinePassed(failure)).isTrue());
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).isGreaterThan(Duration.ofSeconds(1)).isLessThan(timeout.plus(MARGIN));

      // skade's own routes ride the same deadline.
      long listing = System.nanoTime();
      assertThatThrownBy(() -> connection.consumers().consumers())
          .satisfies(failure -> assertThat(RemoteRetry.isTransient(failure)).isTrue());
      assertThat(Duration.ofNanos(System.nanoTime() - listing)).isLessThan(timeout.plus(MARGIN));
    }
  }

  @Test
  @Timeout(180)
  void aCommitToAServerRestartedWithinTheRetryTimeoutLands() throws Exception {
    try (ServerProcess server = new ServerProcess(root);
        CatalogConnection connection = CatalogConnection.open(properties(server, "90 s"))) {
      Table table = table(connection);

      server.kill();
      CompletableFuture<Void> restarted =
          CompletableFuture.runAsync(
              () -> {
                try {
                  Thread.sleep(1_000);
                  server.restart();
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      // Iceberg's append: the refresh rides until the server is back; the commit lands once.
      table.newAppend().appendFile(file(table)).commit();
      restarted.join();

      Table read = connection.catalog().loadTable(TABLE);
      assertThat(read.snapshots()).hasSize(1);
      assertThat(read.currentSnapshot().snapshotId())
          .isEqualTo(table.currentSnapshot().snapshotId());
    }
  }

  private static Map<String, String> properties(ServerProcess server, String retryTimeout) {
    return Map.of(
        CatalogConnection.URI,
        server.uri(),
        CatalogConnection.TOKEN,
        ServerProcess.TOKEN,
        CatalogConnection.RETRY_TIMEOUT,
        retryTimeout);
  }

  private static Table table(CatalogConnection connection) {
    connection.namespaces().createNamespace(Namespace.of("db"));
    return connection.catalog().createTable(TABLE, SCHEMA);
  }

  /** A data file of the table, named only: the metadata is what these tests commit. */
  private static DataFile file(Table table) {
    return DataFiles.builder(table.spec())
        .withPath(table.location() + "/data/one.parquet")
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(100)
        .withRecordCount(1)
        .build();
  }

  /** The table's metadata with one more snapshot, made here (its files written), not committed. */
  private static TableMetadata appended(Table table) {
    Transaction transaction = table.newTransaction();
    transaction.newAppend().appendFile(file(table)).commit();
    TableMetadata appended = ((BaseTransaction) transaction).currentMetadata();
    assertThat(appended.currentSnapshot()).isNotNull();
    return appended;
  }
}
