package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.remote.RemoteCommitFeed;
import io.skade.catalog.remote.SkadeServerClient;
import io.skade.server.ServerProcess;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SkadeSink} in remote mode: the job has only the skade server's {@code uri}; the committer
 * commits through the server's REST routes, so the commit takes a {@code commit_seq} in the
 * server's log, and the upserted rows are the table's.
 */
class SkadeSinkRemoteTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "customers");

  @TempDir Path root;

  @Test
  void aRemoteSinkCommitsThroughTheServerAndItsCommitIsOnTheFeed() throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root)) {
      RESTCatalog rest = remote.rest();
      rest.createTable(TABLE, SCHEMA);
      SkadeServerClient client =
          new SkadeServerClient(
              URI.create(remote.server().uri()), ServerProcess.TOKEN, Duration.ofSeconds(30));
      long before = client.commitSeq();

      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setParallelism(2);
      List<RowData> rows =
          List.of(
              row(RowKind.INSERT, 1, "ada"),
              row(RowKind.INSERT, 2, "bo"),
              row(RowKind.UPDATE_AFTER, 1, "ada2"),
              row(RowKind.DELETE, 2, "bo"));
      env.fromData(rows, InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)))
          .setParallelism(1)
          .sinkTo(
              SkadeSink.builder()
                  .catalogProperties(remote.properties())
                  .table("db.customers")
                  .upsertKey(List.of("id"))
                  .build());
      env.execute("remote sink");

      Table table = rest.loadTable(TABLE);
      Map<Long, String> written = new HashMap<>();
      try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
        records.forEach(r -> written.put(r.get(0, Long.class), r.get(1, String.class)));
      }
      assertThat(written).isEqualTo(Map.of(1L, "ada2"));
      List<CommitEvent> commits =
          new ArrayList<>(client.commits(before, 100, Duration.ZERO).commits());
      assertThat(commits).isNotEmpty();
      String key = new RemoteCommitFeed(client).commitTableKey(TABLE);
      assertThat(commits).allSatisfy(commit -> assertThat(commit.tableKey()).isEqualTo(key));
      assertThat(commits.get(commits.size() - 1).snapshotId())
          .hasValue(table.currentSnapshot().snapshotId());
    }
  }

  private static RowData row(RowKind kind, long id, String name) {
    return GenericRowData.ofKind(kind, id, StringData.fromString(name));
  }
}
