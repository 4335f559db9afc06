package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.server.ServerProcess;
import io.skade.write.TableWriter;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A remote sink's commit whose HTTP exchange is lost (the connection closed under it, as when
 * the server dies mid-commit) neither fails the job nor commits twice: lost before the server
 * saw it, the commit is made once by Iceberg's retry; lost after the server made it (its answer
 * lost), the committer finds its snapshot in the table and is done.
 */
class LostCommitAnswerTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.required(1, "id", Types.LongType.get()));
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "events");

  @TempDir Path root;

  @ParameterizedTest
  @EnumSource(FaultProxy.Fault.class)
  @Timeout(120)
  void aCommitWhoseExchangeIsLostLandsOnce(FaultProxy.Fault fault) throws Exception {
    try (ServerProcess server = new ServerProcess(root); RESTCatalog rest = new RESTCatalog();
        FaultProxy proxy = new FaultProxy(URI.create(server.uri()),
            "POST /v1/namespaces/db/tables/events ", fault)) {
      rest.initialize("check", new HashMap<>(Map.of("uri", server.uri(),
          "token", ServerProcess.TOKEN)));
      rest.createNamespace(Namespace.of("db"));
      rest.createTable(TABLE, SCHEMA);
      SkadeTableLoader loader = new SkadeTableLoader(Map.of("uri", proxy.uri(),
          "token", ServerProcess.TOKEN, "server.retry-timeout", "1 min"), TABLE);
      loader.open();
      try {
        Table table = loader.loadTable();
        DataFile file = new TableWriter(table).writeDataFiles(List.of(row(1), row(2))).get(0);
        table.newAppend().appendFile(file).commit();
        assertThat(table.currentSnapshot()).as("the committer's table after its commit")
            .isNotNull();
      } finally {
        loader.close();
      }
      assertThat(proxy.lost()).as("exchanges the proxy lost").isEqualTo(1);

      Table read = rest.loadTable(TABLE);
      assertThat(read.snapshots()).as("one commit").hasSize(1);
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> records = IcebergGenerics.read(read).build()) {
        records.forEach(r -> ids.add((Long) r.getField("id")));
      }
      assertThat(ids).containsExactlyInAnyOrder(1L, 2L);
    }
  }

  private static Record row(long id) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    return record;
  }
}
