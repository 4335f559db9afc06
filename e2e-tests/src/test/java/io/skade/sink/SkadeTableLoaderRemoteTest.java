package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.server.ServerProcess;
import io.skade.testing.RemoteCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The table a remote sink's committer commits to rides through a skade server's restart: killed
 * with SIGKILL, the server is down (its port refuses connections) when the committer refreshes the
 * table and commits, and both wait for it instead of failing (a connection refused proves the
 * server never saw the commit, so sending it again is safe); the commit lands once. And a commit
 * whose HTTP exchange is lost (the connection closed under it, as when the server dies mid-commit)
 * neither fails nor commits twice: lost before the server saw it, the commit is made once by
 * Iceberg's retry; lost after the server made it (its answer lost), the committer finds its
 * snapshot in the table and is done.
 */
class SkadeTableLoaderRemoteTest {
  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "events");

  @TempDir Path root;

  @Test
  @Timeout(120)
  void aRefreshAndACommitWhileTheServerIsDownWaitForItAndCommitOnce() throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root, "server.retry-timeout", "1 min")) {
      ServerProcess server = remote.server();
      RESTCatalog rest = remote.rest();
      rest.createTable(TABLE, SCHEMA);
      SkadeTableLoader loader = new SkadeTableLoader(remote.properties(), TABLE);
      loader.open();
      try {
        Table table = loader.loadTable();
        DataFile file = new TableWriter(table).writeDataFiles(List.of(row(1), row(2))).get(0);

        CompletableFuture<Void> restarted =
            CompletableFuture.runAsync(
                () -> {
                  try {
                    server.killAndRestart(5_000);
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                });
        URI address = URI.create(server.uri());
        await().atMost(Duration.ofSeconds(30)).until(() -> refuses(address));
        // The client's pooled connections idle past its stale check, as between checkpoints.
        Thread.sleep(2_500);
        assertThat(refuses(address)).as("the server is down when the refresh starts").isTrue();
        table.refresh();
        AppendFiles append = table.newAppend().appendFile(file);
        append.commit();
        restarted.get(60, TimeUnit.SECONDS);
      } finally {
        loader.close();
      }

      assertCommittedOnce(rest);
    }
  }

  @ParameterizedTest
  @EnumSource(FaultProxy.Fault.class)
  @Timeout(120)
  void aCommitWhoseExchangeIsLostLandsOnce(FaultProxy.Fault fault) throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        FaultProxy proxy =
            new FaultProxy(
                URI.create(remote.server().uri()),
                "POST /v1/namespaces/db/tables/events ",
                fault)) {
      RESTCatalog rest = remote.rest();
      rest.createTable(TABLE, SCHEMA);
      SkadeTableLoader loader =
          new SkadeTableLoader(
              Map.of(
                  "uri",
                  proxy.uri(),
                  "token",
                  ServerProcess.TOKEN,
                  "server.retry-timeout",
                  "1 min"),
              TABLE);
      loader.open();
      try {
        Table table = loader.loadTable();
        DataFile file = new TableWriter(table).writeDataFiles(List.of(row(1), row(2))).get(0);
        table.newAppend().appendFile(file).commit();
        assertThat(table.currentSnapshot())
            .as("the committer's table after its commit")
            .isNotNull();
      } finally {
        loader.close();
      }
      assertThat(proxy.lost()).as("exchanges the proxy lost").isEqualTo(1);
      assertCommittedOnce(rest);
    }
  }

  /** The table holds one snapshot, with rows 1 and 2. */
  private static void assertCommittedOnce(RESTCatalog rest) throws Exception {
    Table read = rest.loadTable(TABLE);
    assertThat(read.snapshots()).as("one commit").hasSize(1);
    List<Long> ids = new ArrayList<>();
    try (CloseableIterable<Record> records = IcebergGenerics.read(read).build()) {
      records.forEach(r -> ids.add((Long) r.getField("id")));
    }
    assertThat(ids).containsExactlyInAnyOrder(1L, 2L);
  }

  /** Whether a connection to the server's address is refused: nothing listens there. */
  private static boolean refuses(URI address) {
    try (Socket socket = new Socket(address.getHost(), address.getPort())) {
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  private static Record row(long id) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    return record;
  }
}
