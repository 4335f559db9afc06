package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.CommitEvent;
import io.skade.testing.IdRows;
import io.skade.testing.RemoteCatalog;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.rest.RESTCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A remote {@link SkadeSink} stays exactly-once across restarts of its committer and of the server:
 * a job (parallelism 2, checkpoints every 300 ms) appends 2,400 generated rows at a bounded rate to
 * a table without a key, so a row committed twice stays twice; the job fails once on its own (an
 * injected failure, restored from its checkpoint) and the skade server is killed with SIGKILL and
 * restarted while it runs. At the end every row is in the table exactly once, and every snapshot
 * took one commit_seq on the server's log.
 */
class SkadeSinkRemoteExactlyOnceTest {
  private static final Schema SCHEMA = IdRows.log("name");
  private static final TableIdentifier TABLE = TableIdentifier.of("db", "events");
  private static final long ROWS = 2_400;

  /** Set once the injected failure happened (the failing task runs in this JVM). */
  private static final AtomicBoolean FAILED = new AtomicBoolean();

  @TempDir Path root;

  @Test
  @Timeout(300)
  void everyRowLandsOnceThroughAFailoverAndAServerRestart() throws Exception {
    FAILED.set(false);
    try (RemoteCatalog remote = RemoteCatalog.start(root, "server.retry-timeout", "2 min")) {
      RESTCatalog rest = remote.rest();
      rest.createTable(TABLE, SCHEMA);

      Configuration conf = new Configuration();
      conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 50);
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(500));
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
      env.setParallelism(2);
      env.enableCheckpointing(300);
      DataGeneratorSource<RowData> generated =
          new DataGeneratorSource<>(
              id -> GenericRowData.of(id, StringData.fromString("v" + id)),
              ROWS,
              RateLimiterStrategy.perSecond(300),
              InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)));
      env.fromSource(generated, WatermarkStrategy.noWatermarks(), "rows")
          .map(new FailOnce())
          .returns(InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA)))
          .sinkTo(
              SkadeSink.builder()
                  .catalogProperties(remote.properties())
                  .table("db.events")
                  .build());
      CompletableFuture<Void> job =
          CompletableFuture.runAsync(
              () -> {
                try {
                  env.execute("remote exactly-once sink");
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });

      // Killed once the job commits, long before its last row.
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> rest.loadTable(TABLE).currentSnapshot() != null);
      remote.server().killAndRestart(2_000); // SIGKILL, down 2 s, the same directory and port
      job.get(240, TimeUnit.SECONDS);
      assertThat(FAILED).as("the injected failure happened").isTrue();

      Table table = rest.loadTable(TABLE);
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
        records.forEach(r -> ids.add((Long) r.getField("id")));
      }
      assertThat(ids).as("rows in the table").hasSize((int) ROWS);
      assertThat(new HashSet<>(ids)).as("distinct rows").hasSize((int) ROWS);

      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        String key = connection.feed().commitTableKey(TABLE);
        List<Long> logged = new ArrayList<>();
        for (CommitEvent event : connection.feed().commitsSince(0)) {
          if (event.tableKey().equals(key)) {
            logged.addAll(event.addedSnapshotIds());
          }
        }
        Set<Long> snapshots = new HashSet<>();
        table.snapshots().forEach(s -> snapshots.add(s.snapshotId()));
        assertThat(logged)
            .as("each snapshot on the log once")
            .doesNotHaveDuplicates()
            .containsExactlyInAnyOrderElementsOf(snapshots);
      }
    }
  }

  /** Fails the job once, a third of the way through the rows. */
  private static final class FailOnce implements MapFunction<RowData, RowData> {
    @Override
    public RowData map(RowData row) {
      if (row.getLong(0) == ROWS / 3 && FAILED.compareAndSet(false, true)) {
        throw new IllegalStateException("injected failure at row " + row.getLong(0));
      }
      return row;
    }
  }
}
